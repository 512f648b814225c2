/**
 * The state DB (SQLite), as the rest of the daemon sees it: one StateDb over one connection
 * (store/connection.ts: open, lock, migrate, group commit), made of one repository per table group,
 * each the only writer of its tables (test/lint/table-writers.test.ts):
 * - files.ts: the files table (one row per file, see domain/lifecycle.ts for the states); read by
 *   due-work.ts (what the scheduler takes next) and file-counts.ts (what status shows);
 * - watches.ts: paused watches; reruns.ts: the rerun runs; retention.ts: what retention pruned;
 * - mail.ts: the messages mail intake took and their attachments' rows;
 * - kv.ts: the kv table, store-internal, read and written through run-flags.ts (the service's
 *   reachability, the key refusal, blind watchers, pulls) and mail.ts (a mailbox's connection).
 * The audit trail (audit.ts) is a repository the actions make over `db`, so that a decision and its
 * audit row commit in the same batch.
 *
 * Each repository is a field (`db.files`, `db.mail`, ...) that callers use directly; StateDb itself
 * holds only what spans them: the connection's lifetime and group commit, the lock, the problems
 * status shows, and raw KV values for tests that plant them.
 */
import { hostname } from 'node:os';
import { Connection, inMemoryCopy, type StateDbOptions } from './connection.ts';
import { DueWork } from './due-work.ts';
import { FileCounts } from './file-counts.ts';
import { FileRepository } from './files.ts';
import { KvRepository, type KvKey } from './kv.ts';
import { MailRepository } from './mail.ts';
import { RerunRepository } from './reruns.ts';
import { RetentionRepository } from './retention.ts';
import { RunFlags } from './run-flags.ts';
import { WatchRepository } from './watches.ts';

export { FILE_STATES, type FileRow, type FileState } from '../domain/lifecycle.ts';
export { PAGE_CACHE_KIB, StateLockedError, type StateDbOptions } from './connection.ts';
export { type KnownFile, type NewFile } from './files.ts';
export { KV, type KvKey } from './kv.ts';
export { type MailMessageRow, type MailSource, type NewMailMessage } from './mail.ts';
export { SCHEMA_VERSION } from './migrations.ts';
export { type PruneKind, type PrunedFile } from './retention.ts';
export { type BlindWatcherRecord, type PullRecord } from './run-flags.ts';
export { type PausedWatch } from './watches.ts';

export class StateDb {
  private readonly connection: Connection;
  private readonly kv: KvRepository;
  readonly files: FileRepository;
  readonly dueWork: DueWork;
  readonly fileCounts: FileCounts;
  readonly watches: WatchRepository;
  readonly flags: RunFlags;
  readonly reruns: RerunRepository;
  readonly retention: RetentionRepository;
  readonly mail: MailRepository;

  /** `bytes`: an in-memory copy of the DB at `path` (copyOf), nothing opened on disk. */
  constructor(path: string, bytes?: Buffer, options: StateDbOptions = {}) {
    const c = new Connection(path, bytes, options);
    this.connection = c;
    this.kv = new KvRepository(c);
    this.files = new FileRepository(c);
    this.dueWork = new DueWork(c, this.files);
    this.fileCounts = new FileCounts(c);
    this.watches = new WatchRepository(c);
    this.flags = new RunFlags(this.kv);
    this.reruns = new RerunRepository(c);
    this.retention = new RetentionRepository(c);
    this.mail = new MailRepository(c, this.files, this.kv);
  }

  /**
   * The DB at `path` read into memory, for reading only: `status` on a disk so full that SQLite
   * cannot open the DB (store/connection.ts, inMemoryCopy).
   */
  static copyOf(path: string): StateDb {
    return new StateDb(path, inMemoryCopy(path));
  }

  /** The connection itself: for the audit trail (store/audit.ts), and benches that fill a DB fast. */
  get db() {
    return this.connection.db;
  }
  get path() {
    return this.connection.path;
  }
  /** Batches committed by this instance (what group commit saves shows in it; tests). */
  get commits() {
    return this.connection.commits;
  }

  /**
   * Makes this process the only daemon on the DB (store/connection.ts) and says who it is, for the
   * message a second daemon gets.
   */
  lockExclusive(now: number) {
    this.connection.lockExclusive(() => this.flags.holder());
    this.flags.setHolder(`pid ${process.pid} on ${hostname()}, started ${new Date(now).toISOString()}`);
    this.flush();
  }

  /** What holds work back at run level or locally, for `status` and /healthz. */
  problems() {
    const unreachable = this.flags.serviceUnreachable();
    return {
      paused_watches: this.watches.pausedWatches().map((w) => ({
        watch: w.path,
        reason: w.paused_reason,
        since: new Date(w.paused_at).toISOString(),
      })),
      service_unreachable: unreachable
        ? { since: new Date(unreachable.since).toISOString(), reason: unreachable.reason }
        : null,
      blocked: this.fileCounts.blocked(20).map((r) => ({ file: r.path, state: r.state, reason: r.blocked })),
    };
  }

  // The connection: its lifetime and group commit (store/connection.ts).
  close() {
    this.connection.close();
  }
  daemonRunning(): boolean {
    return this.connection.daemonRunning();
  }
  durable(): Promise<void> {
    return this.connection.durable();
  }
  flush() {
    this.connection.flush();
  }
  onCommitFailed(handler: (error: unknown) => boolean) {
    this.connection.onCommitFailed(handler);
  }
  changedElsewhere(): boolean {
    return this.connection.changedElsewhere();
  }
  mark(): string {
    return this.connection.mark();
  }
  changedSince(at: string): boolean {
    return this.connection.changedSince(at);
  }

  // kv.ts: tests read and plant raw values; the daemon's code goes through run-flags.ts.
  getValue(key: KvKey) {
    return this.kv.get(key);
  }
  setValue(key: KvKey, value: string) {
    this.kv.set(key, value);
  }
  deleteValue(key: KvKey) {
    this.kv.delete(key);
  }
}
