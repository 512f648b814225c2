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
 * Each repository is a field (`db.files`, `db.mail`, ...), and StateDb keeps every method it had
 * before the split as a forward to the repository that now holds it, so callers did not change with
 * the split; new code may call either, and a later change moves the callers to the repositories.
 */
import { hostname } from 'node:os';
import type { ChangeCursor } from '@docex/shared';
import type { FileRow, FileState } from '../domain/lifecycle.ts';
import { Connection, inMemoryCopy, type StateDbOptions } from './connection.ts';
import { DueWork } from './due-work.ts';
import { FileCounts } from './file-counts.ts';
import { FileRepository, type NewFile } from './files.ts';
import { KV, KvRepository, type KvKey } from './kv.ts';
import { MailRepository, type NewMailMessage } from './mail.ts';
import { RerunRepository, type RerunResult } from './reruns.ts';
import { RetentionRepository, type PruneKind, type PrunedFile } from './retention.ts';
import { RunFlags, type BlindWatcherRecord, type PullRecord } from './run-flags.ts';
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
    const unreachable = this.kv.get(KV.unreachable);
    return {
      paused_watches: this.watches.pausedWatches().map((w) => ({
        watch: w.path,
        reason: w.paused_reason,
        since: new Date(w.paused_at).toISOString(),
      })),
      service_unreachable: unreachable
        ? (({ since, reason }: { since: number; reason: string }) => ({
            since: new Date(since).toISOString(),
            reason,
          }))(JSON.parse(unreachable) as { since: number; reason: string })
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

  // Forwards kept from before the split (see the header): files.ts.
  current(path: string) {
    return this.files.current(path);
  }
  unheld(watch: string, paths: string[]) {
    return this.files.unheld(watch, paths);
  }
  known(watch: string, paths: string[], withArchived: boolean) {
    return this.files.known(watch, paths, withArchived);
  }
  discover(file: NewFile, now: number, stableMs: number) {
    return this.files.discover(file, now, stableMs);
  }
  discoverMany(watch: string, files: Array<Omit<NewFile, 'watch'>>, now: number, stableMs: number) {
    this.files.discoverMany(watch, files, now, stableMs);
  }
  get(id: number) {
    return this.files.get(id);
  }
  update(id: number, changes: Partial<Omit<FileRow, 'id'>>, now: number) {
    this.files.update(id, changes, now);
  }
  inState(state: FileState, limit?: number) {
    return this.files.inState(state, limit);
  }
  page(state: FileState, afterId: number, limit: number) {
    return this.files.page(state, afterId, limit);
  }
  completedWithHash(sha256: string, exceptId: number) {
    return this.files.completedWithHash(sha256, exceptId);
  }
  inFlightWithHash(sha256: string, exceptId: number) {
    return this.files.inFlightWithHash(sha256, exceptId);
  }
  isActive(path: string) {
    return this.files.isActive(path);
  }
  probeRow(watch: string) {
    return this.files.probeRow(watch);
  }
  filesOfDocuments(documentIds: number[]) {
    return this.files.filesOfDocuments(documentIds);
  }

  // due-work.ts
  lease(id: number) {
    this.dueWork.lease(id);
  }
  release(id: number) {
    this.dueWork.release(id);
  }
  due(state: FileState, now: number, limit: number) {
    return this.dueWork.due(state, now, limit);
  }
  dueForUpload(now: number, limit: number) {
    return this.dueWork.dueForUpload(now, limit);
  }
  nextDue(now: number) {
    return this.dueWork.nextDue(now);
  }
  awaitingResults(limit: number) {
    return this.dueWork.awaitingResults(limit);
  }

  // file-counts.ts
  counts() {
    return this.fileCounts.counts();
  }
  outcomes() {
    return this.fileCounts.outcomes();
  }
  oldestWaiting() {
    return this.fileCounts.oldestWaiting();
  }
  lastErrors(limit?: number) {
    return this.fileCounts.lastErrors(limit);
  }
  blocked(limit?: number) {
    return this.fileCounts.blocked(limit);
  }
  countsByWatch() {
    return this.fileCounts.countsByWatch();
  }
  countsByRoute() {
    return this.fileCounts.countsByRoute();
  }
  lastHeld(limit: number) {
    return this.fileCounts.lastHeld(limit);
  }
  inReview(limit: number) {
    return this.fileCounts.inReview(limit);
  }
  lastFailed(limit: number) {
    return this.fileCounts.lastFailed(limit);
  }
  finishedSince(ms: number) {
    return this.fileCounts.finishedSince(ms);
  }
  reviewSince(ms: number) {
    return this.fileCounts.reviewSince(ms);
  }

  // watches.ts
  pausedWatches() {
    return this.watches.pausedWatches();
  }
  pauseWatch(path: string, reason: string, now: number, probeAt: number) {
    this.watches.pauseWatch(path, reason, now, probeAt);
  }
  resumeWatch(path: string) {
    this.watches.resumeWatch(path);
  }

  // run-flags.ts
  serviceUnreachable() {
    return this.flags.serviceUnreachable();
  }
  markServiceUnreachable(since: number, reason: string) {
    this.flags.markServiceUnreachable(since, reason);
  }
  markServiceReachable() {
    this.flags.markServiceReachable();
  }
  keyRefusal() {
    return this.flags.keyRefusal();
  }
  markKeyRefused(at: number, message: string) {
    this.flags.markKeyRefused(at, message);
  }
  clearKeyRefusal() {
    this.flags.clearKeyRefusal();
  }
  blindWatchers() {
    return this.flags.blindWatchers();
  }
  setBlindWatcher(watch: string, blind: BlindWatcherRecord | null) {
    this.flags.setBlindWatcher(watch, blind);
  }
  recordPull(record: PullRecord, keep?: number) {
    this.flags.recordPull(record, keep);
  }
  lastPulls(limit?: number) {
    return this.flags.lastPulls(limit);
  }
  pullCursor(): ChangeCursor {
    return this.flags.pullCursor();
  }
  advancePullCursor(startedAt: number, seen: ChangeCursor['seen']) {
    this.flags.advancePullCursor(startedAt, seen);
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

  // retention.ts
  pruneDue(watch: string, kind: PruneKind, cutoff: number, afterId: number, limit: number) {
    return this.retention.pruneDue(watch, kind, cutoff, afterId, limit);
  }
  recordPruned(files: PrunedFile[], now: number) {
    this.retention.recordPruned(files, now);
  }
  prunedTotals() {
    return this.retention.prunedTotals();
  }

  // reruns.ts
  startRerun(name: string, dryRun: boolean, override: boolean, now: number) {
    return this.reruns.startRerun(name, dryRun, override, now);
  }
  finishRerun(id: number, result: RerunResult, now: number) {
    this.reruns.finishRerun(id, result, now);
  }
  abandonRunningReruns(now: number) {
    this.reruns.abandonRunningReruns(now);
  }
  lastReruns(limit?: number) {
    return this.reruns.lastReruns(limit);
  }

  // mail.ts
  recordMail(message: NewMailMessage, files: Array<NewFile & { name: string }>, now: number) {
    return this.mail.recordMail(message, files, now);
  }
  mailMessage(mailbox: string, uidvalidity: number, uid: number) {
    return this.mail.mailMessage(mailbox, uidvalidity, uid);
  }
  mailTakenWithMessageId(mailbox: string, messageId: string) {
    return this.mail.mailTakenWithMessageId(mailbox, messageId);
  }
  mailHighestUid(mailbox: string, uidvalidity: number) {
    return this.mail.mailHighestUid(mailbox, uidvalidity);
  }
  mailPending(mailbox: string) {
    return this.mail.mailPending(mailbox);
  }
  mailDone(id: number, now: number) {
    this.mail.mailDone(id, now);
  }
  mailCounts(mailbox: string) {
    return this.mail.mailCounts(mailbox);
  }
  mailLeft(mailbox: string, limit?: number) {
    return this.mail.mailLeft(mailbox, limit);
  }
  mailSkips(mailbox: string, limit?: number) {
    return this.mail.mailSkips(mailbox, limit);
  }
  mailboxConnection(mailbox: string) {
    return this.mail.mailboxConnection(mailbox);
  }
  setMailboxConnection(mailbox: string, value: string) {
    this.mail.setMailboxConnection(mailbox, value);
  }
  mailSourceOf(fileId: number) {
    return this.mail.mailSourceOf(fileId);
  }
}
