/**
 * The state DB's one connection: it opens the DB, migrates it (store/migrations.ts), holds the
 * daemon's lock, caches prepared statements, and batches writes (group commit). The repositories
 * of store/ share it: each prepares its statements here and writes through `write()`, so writes to
 * several tables in one turn commit together.
 *
 * Durability (docs/reference/results.md, "The delivery guarantee"): WAL with synchronous=NORMAL. A commit is in
 * the WAL file before the call returns, so a crash of the process (kill -9) loses nothing committed;
 * a power loss or kernel crash can lose the last commits (never corrupt the DB), which the pipeline
 * survives like a crash a moment earlier. Writes are batched (group commit): the first write opens a
 * transaction that commits at the end of the event-loop turn, or, with `commitWindowMs`, when that
 * window has passed (a daemon's many files then share a commit) or once BATCH_WRITES writes are in
 * it. `durable()` resolves once everything written so far is committed, committing at the end of the
 * turn, so that every caller of one turn shares one commit; the pipeline awaits it before every side
 * effect that must follow a durable state (an upload, moving an original). `flush()` commits at once.
 */
import Database from 'better-sqlite3';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { StateDbUnusableError } from '@docex/cli-kit/exit';
import { crashPoint } from '../common/crash-point.ts';
import { migrate } from './migrations.ts';

/** The DB is held by another running docex-sync. */
export class StateLockedError extends Error {}

/**
 * A file that is not a SQLite DB, or a damaged one, named with the way out: move it aside and start
 * again, and what that costs (docs/reference/exit-codes.md).
 */
function unusable(path: string, error: unknown): unknown {
  const code = (error as { code?: string }).code;
  if (code !== 'SQLITE_NOTADB' && code !== 'SQLITE_CORRUPT') return error;
  return new StateDbUnusableError(
    `the state DB ${path} cannot be used: ${(error as Error).message} (it is not a SQLite database, or it is damaged). ` +
      `Stop docex-sync, move it aside (mv ${path} ${path}.broken, and its -wal and -shm files likewise if they are there) and start again: a new, empty state DB is made. ` +
      `What that costs: files already archived stay where they are; files still in the watched folders are sent again, and the service answers DUPLICATE for those it already has (their results are written again); files in the failed folders stay there (move them back by hand to try again); ` +
      `the list of failed files, the rerun and pull history start over, and so does the pull cursor (set pull.since to the last pull's time so that no change is missed).`,
  );
}

/**
 * SQLite's page cache for the state DB, in KiB. better-sqlite3 builds SQLite with 16 MB per
 * connection (SQLITE_DEFAULT_CACHE_SIZE=-16000), and a daemon's DB grows by about 0.7 KB per file
 * it ever saw, so its RSS crept up until the DB passed 16 MB (weeks for a quiet office, an hour at
 * 8 files/s): a bounded cache that looked like a leak (docs/performance.md, "Memory over time"). 2 MB
 * (SQLite's own default) holds what is hot: the due-work index and recent rows; the rest is read
 * from the OS page cache, which the kernel can reclaim.
 */
export const PAGE_CACHE_KIB = 2048;

/**
 * Writes in one batch after which it commits at the end of the turn rather than at the end of its
 * window: a scan's thousands of new rows are not held in an open transaction (and its WAL pages in
 * memory) for the window.
 */
const BATCH_WRITES = 1000;

export interface StateDbOptions {
  /**
   * How long a batch of writes may stay open before it commits, in ms; 0 (the default, for the
   * commands): at the end of the event-loop turn. The daemon's pipeline uses a few ms: its effects
   * that must follow a durable state await `durable()`, so the window only delays what a crash may
   * redo anyway (docs/reference/results.md, "The delivery guarantee").
   */
  commitWindowMs?: number;
}

/**
 * The bytes of the DB at `path`, for an in-memory copy to read only: `status` on a disk so full that
 * SQLite cannot open the DB (no room for its -shm file). What a -wal file holds is not in it; a DB
 * left by a stopped daemon has none (its last close checkpointed it). The header is marked as not
 * WAL, which is what an in-memory copy can open.
 */
export function inMemoryCopy(path: string): Buffer {
  const bytes = readFileSync(path);
  if (bytes.length > 19) bytes[18] = bytes[19] = 1;
  return bytes;
}

export class Connection {
  readonly db: Database.Database;
  readonly path: string;
  private readonly statements = new Map<string, Database.Statement>();
  private batchOpen = false;
  /** `writes` when the open batch began: the batch holds `writes - batchStart` (see BATCH_WRITES). */
  private batchStart = 0;
  /** The open batch's commit: at the end of its window, or (`Immediate`) at the end of the turn. */
  private commitTimer: { window: NodeJS.Timeout } | { turn: NodeJS.Immediate } | undefined;
  private readonly commitWindowMs: number;
  /** Batches committed by this connection (what group commit saves shows in it; tests). */
  commits = 0;
  /** Callers of durable() waiting for the open batch's commit. */
  private waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  /** What repositories keep in memory of the DB, dropped when a batch is rolled back. */
  private readonly forgetters: Array<() => void> = [];
  private lock: Database.Database | undefined;
  private dataVersion: number | undefined;
  /** Writes this connection made (see mark): any write, committed or not. */
  private writes = 0;
  private commitFailed: ((error: unknown) => boolean) | undefined;

  /** `bytes`: an in-memory copy of the DB at `path` (inMemoryCopy), nothing opened on disk. */
  constructor(path: string, bytes?: Buffer, options: StateDbOptions = {}) {
    if (!bytes) mkdirSync(dirname(path), { recursive: true });
    this.path = path;
    this.commitWindowMs = options.commitWindowMs ?? 0;
    this.db = new Database(bytes ?? path);
    try {
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = NORMAL');
      this.db.pragma('busy_timeout = 5000');
      this.db.pragma('temp_store = MEMORY');
      this.db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
      migrate(this.db, path);
    } catch (error) {
      this.db.close();
      throw unusable(path, error);
    }
  }

  /**
   * Makes this process the only daemon on the DB: a lock held by SQLite on `<db>.lock` (the OS drops
   * it when the process dies, so a kill -9 leaves no stale lock). A second daemon gets a message
   * naming the DB and `holder()`, the one that holds it.
   */
  lockExclusive(holder: () => string | undefined) {
    const lock = new Database(`${this.path}.lock`);
    lock.pragma('busy_timeout = 0');
    try {
      lock.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      lock.close();
      if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
      const held = holder();
      throw new StateLockedError(
        `the state DB ${this.path} is in use by another docex-sync${held ? ` (${held})` : ''}; stop it first, or give this one its own state_db`,
      );
    }
    this.lock = lock;
  }

  /**
   * Whether a docex-sync run holds the DB's lock now (lockExclusive): tried without waiting and
   * given back at once.
   */
  daemonRunning(): boolean {
    const lock = new Database(`${this.path}.lock`);
    try {
      lock.pragma('busy_timeout = 0');
      lock.exec('BEGIN EXCLUSIVE');
      lock.exec('ROLLBACK');
      return false;
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_BUSY') return true;
      throw error;
    } finally {
      lock.close();
    }
  }

  close() {
    this.commit(false); // a commit that fails for lack of room is rolled back: the DB keeps the state before it
    this.db.close();
    if (this.lock) {
      this.lock.exec('ROLLBACK');
      this.lock.close();
      this.lock = undefined;
    }
  }

  /** The statement for `sql`, prepared once per connection (see NO_REPREPARE in store/files.ts). */
  st(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** `forget` drops what a repository keeps of the DB in memory: called when a batch is rolled back. */
  onRolledBack(forget: () => void) {
    this.forgetters.push(forget);
  }

  /**
   * Runs a write inside the open batch, opening one (committed at the end of this event-loop turn) if
   * needed. `count`: the writes it makes (rows a statement of many rows inserts), counted in `writes`.
   */
  write<T>(fn: () => T, count = 1): T {
    if (!this.batchOpen) {
      this.st('BEGIN IMMEDIATE').run(); // prepared once: a batch begins and commits hundreds of times a second
      this.batchOpen = true;
      this.batchStart = this.writes;
      this.commitTimer =
        this.commitWindowMs > 0
          ? { window: setTimeout(() => this.commit(false), this.commitWindowMs) }
          : { turn: setImmediate(() => this.commit(false)) };
    }
    try {
      return fn();
    } catch (error) {
      // SQLite may have rolled the whole batch back (SQLITE_FULL, SQLITE_IOERR): none of it is kept.
      if (!this.db.inTransaction) this.rolledBack(error);
      throw error;
    } finally {
      this.writes += count;
      if (this.writes - this.batchStart >= BATCH_WRITES && this.commitWindowMs > 0) this.commitAtEndOfTurn();
    }
  }

  /** The open batch commits at the end of this turn instead of at the end of its window. */
  private commitAtEndOfTurn() {
    if (!this.commitTimer || !('window' in this.commitTimer)) return;
    clearTimeout(this.commitTimer.window);
    this.commitTimer = { turn: setImmediate(() => this.commit(false)) };
  }

  /**
   * Resolves once every write made so far is committed; rejects with the commit's error when it
   * failed (a full disk: the batch was rolled back, so the effect waiting for it must not happen).
   * The commit happens at the end of this event-loop turn: every caller of the turn shares it.
   */
  durable(): Promise<void> {
    if (!this.batchOpen) return Promise.resolve();
    this.commitAtEndOfTurn();
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  /**
   * Who hears of a batch whose commit failed (its writes are rolled back, the DB keeps the state
   * before them), whoever committed it: true when handled (a full disk pauses the pipeline). A
   * commit at the end of a turn then throws nothing; otherwise the error is thrown as before.
   */
  onCommitFailed(handler: (error: unknown) => boolean) {
    this.commitFailed = handler;
  }

  /** The batch is gone: what the repositories keep of the DB is read again. */
  private rolledBack(error: unknown) {
    this.endBatch();
    for (const forget of this.forgetters) forget();
    this.settle(error);
  }

  private endBatch() {
    this.batchOpen = false;
    if (this.commitTimer && 'window' in this.commitTimer) clearTimeout(this.commitTimer.window);
    else if (this.commitTimer) clearImmediate(this.commitTimer.turn);
    this.commitTimer = undefined;
  }

  /** Tells the callers of durable() how their batch ended. */
  private settle(error?: unknown) {
    const waiting = this.waiting;
    if (waiting.length === 0) return;
    this.waiting = [];
    for (const w of waiting)
      if (error === undefined) w.resolve();
      else w.reject(error);
  }

  /**
   * Whether another connection (another process: `docex-sync retry`, `rerun`, `pull`) committed
   * since the last call. SQLite's data_version: one read of a counter in shared memory, no table read.
   */
  changedElsewhere(): boolean {
    const version = this.dataVersionNow();
    const changed = this.dataVersion !== undefined && version !== this.dataVersion;
    this.dataVersion = version;
    return changed;
  }

  /**
   * What the DB holds now, to be compared with `changedSince`: this connection's writes and
   * SQLite's data_version (another connection's commits). Reads nothing from the tables.
   */
  mark(): string {
    return `${this.writes}:${this.dataVersionNow()}`;
  }
  /**
   * SQLite's data_version through a statement prepared once: `db.pragma()` prepares one at each call,
   * and the WAL watcher (wakeup.ts) asks after every commit, this process's own included.
   */
  private dataVersionNow(): number {
    return this.st('PRAGMA data_version').pluck().get() as number;
  }

  /** Whether anything was written to the DB, by this process or another, since `mark` returned `at`. */
  changedSince(at: string): boolean {
    return this.mark() !== at;
  }

  /** Commits the open batch now; when that fails (a full disk), the batch is rolled back and the error thrown. */
  flush() {
    this.commit(true);
  }

  /**
   * Commits the open batch now. A failed commit is rolled back and told to onCommitFailed's handler;
   * it is thrown when unhandled or when `throwHandled`. A read of totals calls it with false: a
   * failed commit (a full disk) is the pipeline's to handle, the read goes on.
   */
  commit(throwHandled: boolean) {
    if (!this.batchOpen) return;
    this.endBatch();
    if (!this.db.open || !this.db.inTransaction)
      return this.settle(new Error(`the state DB ${this.path} was closed`));
    if (this.writes - this.batchStart > 1) crashPoint('state-commit');
    try {
      this.st('COMMIT').run();
    } catch (error) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.rolledBack(error);
      if (!this.commitFailed?.(error) || throwHandled) throw error;
      return;
    }
    this.commits++;
    this.settle();
  }
}
