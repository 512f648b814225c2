/**
 * The state DB (SQLite): one row per file (see lifecycle.ts for the states), watch pauses, a
 * key-value table and reruns.
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
import { hostname } from 'node:os';
import { dirname, sep } from 'node:path';
import { crashPoint } from '../common/crash-point.ts';
import { AUDIT_MIGRATION } from './audit.ts';
import { StateDbUnusableError } from '@docex/cli-kit/exit';
import { ACTIVE_STATES, FILE_STATES, NEVER, type FileRow, type FileState } from '../domain/lifecycle.ts';

/**
 * The states a row is in while it is work in flight (or waits for a person or a route), as SQL:
 * counted through files_state. The others, archived and failed, are at rest and tallied (schema 11).
 */
const IN_FLIGHT = FILE_STATES.filter((s) => s !== 'archived' && s !== 'failed')
  .map((s) => `'${s}'`)
  .join(', ');

/** The key-value rows of the state DB: each key is spelled here and nowhere else. */
export const KV = {
  /** Who holds the DB's lock (pid, host, start), named when a second daemon is refused. */
  holder: 'daemon.holder',
  /** `{since, reason}` while the service cannot be reached. */
  unreachable: 'service.unreachable',
  /** `{at, message}` after the service refused the API key (the run stopped, exit 3), until a run's key check passes. */
  keyRefused: 'api.key_refused',
  /** The last pulls, newest first (JSON PullRecord[]). */
  pullHistory: 'pull.history',
  /** The pull's cursor (ms) and the fingerprints of documents seen in its overlap. */
  pullCursor: 'pull.cursor',
  pullSeen: 'pull.seen',
  /** Watches whose native watcher hears nothing (JSON: watch path → BlindWatcherRecord). */
  blindWatchers: 'watch.blind',
} as const;
export type KvKey = (typeof KV)[keyof typeof KV];

/** What retention prunes: originals in processed_dir, originals (and reports) in failed_dir, result files. */
export type PruneKind = 'processed' | 'failed' | 'results';
/** How retention settled one file: deleted, already gone, or kept (not what docex-sync wrote any more). */
export interface PrunedFile {
  file_id: number;
  kind: PruneKind;
  path: string;
  bytes: number;
  outcome: 'deleted' | 'gone' | 'kept';
  reason: string | null;
}

/** A watch whose rescans keep finding files no watcher event reported (intake/watcher.ts). */
export interface BlindWatcherRecord {
  since: number;
  rescans: number;
  files: number;
}

/** One pull, as `status` and the page show it. */
export interface PullRecord {
  at: string;
  status: 'done' | 'failed';
  documents: number;
  error?: string;
}

export { FILE_STATES, type FileRow, type FileState } from '../domain/lifecycle.ts';

/** Each entry takes the schema from version i to i + 1; user_version holds the version. */
const MIGRATIONS = [
  // 1: the first schema (docex-sync 0.1 created it without a version).
  `CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    watch TEXT NOT NULL,
    path TEXT NOT NULL,
    rel TEXT NOT NULL,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ms INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT,
    state TEXT NOT NULL,
    outcome TEXT,
    task_id TEXT,
    document_id INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    finalized INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL DEFAULT 0,
    poll_interval_ms INTEGER NOT NULL DEFAULT 0,
    stable_since INTEGER NOT NULL DEFAULT 0,
    discovered_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS files_state ON files(state, next_at);
  CREATE INDEX IF NOT EXISTS files_path ON files(path);
  CREATE INDEX IF NOT EXISTS files_sha ON files(sha256);
  CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS reruns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    dry_run INTEGER NOT NULL,
    override INTEGER NOT NULL,
    documents INTEGER,
    rerun INTEGER,
    not_rerun INTEGER,
    errors TEXT,
    status TEXT NOT NULL
  );`,
  // 2: file identity (inode), the task timeout's start, local problems, paused watches; rows at rest
  // are never due (next_at = NEVER), so finding due work never reads them.
  `ALTER TABLE files ADD COLUMN ino INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE files ADD COLUMN blocked TEXT;
  ALTER TABLE files ADD COLUMN uploaded_at INTEGER;
  UPDATE files SET uploaded_at = updated_at WHERE state = 'uploaded';
  UPDATE files SET next_at = ${NEVER} WHERE state = 'archived' OR (state = 'failed' AND finalized = 1);
  UPDATE files SET next_at = 0 WHERE state = 'failed' AND finalized = 0;
  CREATE INDEX IF NOT EXISTS files_watch ON files(watch);
  CREATE TABLE IF NOT EXISTS watches (
    path TEXT PRIMARY KEY,
    paused_reason TEXT NOT NULL,
    paused_at INTEGER NOT NULL,
    probe_at INTEGER NOT NULL
  );`,
  // 3: finding the next time something comes due is one index seek.
  `CREATE INDEX IF NOT EXISTS files_next ON files(next_at);`,
  // 4: the route a file is sent by (routing by subfolder), counted per route by status.
  `ALTER TABLE files ADD COLUMN route TEXT;`,
  // 5: mail intake (daemon/src/mail): each message seen, keyed by mailbox + UIDVALIDITY + UID, and
  // which file rows its attachments became.
  `CREATE TABLE IF NOT EXISTS mail_messages (
    id INTEGER PRIMARY KEY,
    mailbox TEXT NOT NULL,
    uidvalidity INTEGER NOT NULL,
    uid INTEGER NOT NULL,
    message_id TEXT,
    sender TEXT NOT NULL,
    subject TEXT NOT NULL,
    sent_at TEXT,
    outcome TEXT NOT NULL,
    reason TEXT,
    attachments INTEGER NOT NULL,
    skipped TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    done_at INTEGER,
    UNIQUE (mailbox, uidvalidity, uid)
  );
  CREATE INDEX IF NOT EXISTS mail_messages_mid ON mail_messages(mailbox, message_id);
  CREATE INDEX IF NOT EXISTS mail_messages_pending ON mail_messages(mailbox, done_at);
  CREATE TABLE IF NOT EXISTS mail_attachments (
    file_id INTEGER PRIMARY KEY,
    message INTEGER NOT NULL,
    name TEXT NOT NULL
  );`,
  // 6: names from the data, decided once per file (a replay or a rerun finds the same files).
  `ALTER TABLE files ADD COLUMN archive_rel TEXT;
  ALTER TABLE files ADD COLUMN result_base TEXT;`,
  // 7: the review queue: why a document waits for a person, where its original waits, when it was approved.
  `ALTER TABLE files ADD COLUMN review TEXT;
  ALTER TABLE files ADD COLUMN review_path TEXT;
  ALTER TABLE files ADD COLUMN approved_at INTEGER;`,
  // 8: retention. Where an original was actually moved (freeTarget may have given "a (2).pdf"), and
  // each file retention settled: deleted, found gone, or kept because it is no longer what
  // docex-sync wrote. A file row with an entry of a kind is not looked at again for that kind.
  `ALTER TABLE files ADD COLUMN archive_path TEXT;
  CREATE TABLE IF NOT EXISTS pruned (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS pruned_file ON pruned(file_id, kind);`,
  // 9: fewer index entries per new row (issue #22: recording 1,000,000 files at start-up spent most
  // of its time writing six B-trees per row). A new row goes into the table, files_path and
  // files_state only:
  // - files_next went: nextDue finds the earliest next_at through files_state, a seek per state;
  // - files_sha holds only rows with a hash (every query of it has `sha256 = ?`), not the NULL of
  //   every file not yet read;
  // - files_watch holds only the rows retention pages through (archived, failed): the one query
  //   that needs watch order (pruneDue) names the state.
  `DROP INDEX IF EXISTS files_next;
  DROP INDEX IF EXISTS files_sha;
  CREATE INDEX files_sha ON files(sha256) WHERE sha256 IS NOT NULL;
  DROP INDEX IF EXISTS files_watch;
  CREATE INDEX files_watch ON files(watch) WHERE state = 'archived' OR state = 'failed';`,
  // 10: the rows of a document, found by a seek. pruneDue's results read, for each archived row, the
  // other rows of its document through files_state instead: every row in those states, so paging
  // through 20,000 archived rows took 79 s (73 ms with it). Partial: a row gets its entry when it
  // gets a document id (a task done), never at discovery.
  `CREATE INDEX files_document ON files(document_id) WHERE document_id IS NOT NULL;`,
  // 11: the status page, /healthz and /metrics read what the files at rest add up to from a tally
  // kept by triggers, and find the latest finished and held-back rows through partial indexes.
  // They counted and sorted every row instead: with 1,000,000 archived rows a refresh of the page
  // (every 3 s while it is open) read for ~1.5 s. Rows at rest (archived, failed) are the ones that
  // pile up; the others are work in flight, counted through files_state. The triggers fire when a
  // row enters, leaves or changes at rest. None fires on INSERT: a row is always inserted in flight
  // (INSERT_ROW), and a trigger on insert, even one whose WHEN is false, costs every row of a
  // start-up scan that inserts a million.
  `CREATE TABLE rest_tallies (
    watch TEXT NOT NULL,
    route TEXT NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (watch, route, state, outcome)
  ) WITHOUT ROWID;
  INSERT INTO rest_tallies
    SELECT watch, IFNULL(route, ''), state, IFNULL(outcome, ''), COUNT(*) FROM files
    WHERE state = 'archived' OR state = 'failed' GROUP BY 1, 2, 3, 4;
  CREATE TRIGGER rest_tally_delete AFTER DELETE ON files
  WHEN OLD.state = 'archived' OR OLD.state = 'failed' BEGIN
    UPDATE rest_tallies SET n = n - 1
      WHERE watch = OLD.watch AND route = IFNULL(OLD.route, '') AND state = OLD.state AND outcome = IFNULL(OLD.outcome, '');
  END;
  CREATE TRIGGER rest_tally_update AFTER UPDATE OF watch, route, state, outcome ON files
  WHEN (OLD.state = 'archived' OR OLD.state = 'failed' OR NEW.state = 'archived' OR NEW.state = 'failed')
    AND (OLD.watch IS NOT NEW.watch OR OLD.route IS NOT NEW.route OR OLD.state IS NOT NEW.state
      OR OLD.outcome IS NOT NEW.outcome) BEGIN
    UPDATE rest_tallies SET n = n - 1
      WHERE (OLD.state = 'archived' OR OLD.state = 'failed') AND watch = OLD.watch
        AND route = IFNULL(OLD.route, '') AND state = OLD.state AND outcome = IFNULL(OLD.outcome, '');
    INSERT INTO rest_tallies
      SELECT NEW.watch, IFNULL(NEW.route, ''), NEW.state, IFNULL(NEW.outcome, ''), 1
      WHERE NEW.state = 'archived' OR NEW.state = 'failed'
      ON CONFLICT DO UPDATE SET n = n + 1;
  END;
  CREATE INDEX files_finished ON files(updated_at) WHERE state = 'archived' OR state = 'failed';
  CREATE INDEX files_blocked ON files(updated_at) WHERE blocked IS NOT NULL;`,
  // 12: mail left as it was (issue #41): the after-action (flag, move) runs only for a message whose
  // every wanted attachment was recorded; for the others this says why it did not (NULL: it ran, or
  // the row is older than this version, which ran it for every message). Status lists the last ones.
  `ALTER TABLE mail_messages ADD COLUMN left_reason TEXT;
  CREATE INDEX mail_messages_left ON mail_messages(mailbox, id) WHERE left_reason IS NOT NULL;`,
  // 13: the audit trail of people's decisions (approve, reject, correct, retry): store/audit.ts.
  AUDIT_MIGRATION,
  // 14: batched uploads (issue #42): the request a file was sent in with others, written before it
  // leaves (domain/upload-batch.ts); NULL: sent alone.
  `ALTER TABLE files ADD COLUMN upload_batch TEXT;`,
];
export const SCHEMA_VERSION = MIGRATIONS.length;

export interface NewFile {
  watch: string;
  path: string;
  rel: string;
  size: number;
  mtimeMs: number;
  ino: number;
}
export type KnownFile = Pick<FileRow, 'state' | 'size' | 'mtime_ms' | 'ino'>;
export interface PausedWatch {
  path: string;
  paused_reason: string;
  paused_at: number;
  probe_at: number;
}

/** A message as the intake records it: what it yielded, before its after-action runs. */
export interface NewMailMessage {
  mailbox: string;
  uidvalidity: number;
  uid: number;
  message_id: string | null;
  sender: string;
  subject: string;
  sent_at: string | null;
  /** taken: its attachments are in the pipeline; duplicate: its Message-ID was taken before; skipped: nothing to take. */
  outcome: 'taken' | 'duplicate' | 'skipped';
  reason: string | null;
  skipped: Array<{ name: string; reason: string; refused?: true }>;
  /** Why the mail is left as it was (not flagged or moved); null: its after-action runs. */
  left_reason: string | null;
}
export interface MailMessageRow extends Omit<NewMailMessage, 'skipped'> {
  id: number;
  attachments: number;
  skipped: string;
  recorded_at: number;
  done_at: number | null;
}
/** The message an attachment's file row came from, as results name it. */
export interface MailSource {
  mailbox: string;
  from: string;
  subject: string;
  date: string | null;
  message_id: string | null;
  attachment: string;
}

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

/**
 * NO_REPREPARE: how the hot queries are written. SQLite prepares a statement again, at each call
 * whose bound values differ, when its planner looked at a bound value, and that took longer than the
 * query: a bound LIMIT, a bound equality in a statement with an ORDER BY (`state = ? ... ORDER BY
 * next_at`, `path = ? ORDER BY id DESC`, whatever the ORDER BY names), MIN/MAX with a bound key, a
 * join on a bound key. The scheduler's due queries, the hash, path and mail lookups were all
 * prepared again at every call, 3.6% of the daemon's main thread in a 2,000-file ingest (perf,
 * sqlite3Reprepare), and `current` (one call per file the watcher reports) still 1.7% after that.
 * So they write in what is a constant of the code (a state, the config's cap), read a row count
 * with an iterator instead of a bound LIMIT, look up by key instead of joining, and give a key
 * that sits beside an ORDER BY as `CAST(? AS TEXT)`: an expression the planner does not evaluate,
 * with the same index seek. Counted with a uprobe on sqlite3Reprepare (docs/daemon.md,
 * "Throughput, measured"): 2,003 in a 2,000-file ingest before the CAST, 4 after.
 */

/** The first `count` ids the statement yields (its first column), read no further. */
function firstIds(statement: Database.Statement, params: unknown[], count: number): number[] {
  const ids: number[] = [];
  if (count <= 0) return ids;
  for (const id of statement.pluck().iterate(...params) as IterableIterator<number>) {
    ids.push(id);
    if (ids.length === count) break; // ends the iterator: the statement is reset, the rest never read
  }
  return ids;
}

/**
 * Rows one INSERT of discoverMany writes. A statement's own cost (binding, stepping, resetting it,
 * crossing into the native module) was most of what a new row cost: recording 1,000,000 files
 * (their rows and the index seeks of unheld) took 3.5 s of CPU at 50 rows a statement against 7.0 s
 * at one (measured on SQLite alone, bench figures in docs/daemon.md). 25 or 100 were no better.
 */
const INSERT_ROWS = 50;
const INSERT_COLUMNS = `INSERT INTO files (watch, path, rel, size, mtime_ms, ino, state, stable_since, next_at, discovered_at, updated_at) VALUES `;
/** A row always begins in flight: rest_tallies (schema 11) counts a row once it comes to rest. */
const INSERT_ROW = `(?, ?, ?, ?, ?, ?, 'discovered', ?, ?, ?, ?)`;
const INSERT_SQL = INSERT_COLUMNS + INSERT_ROW;
const INSERT_MANY_SQL = INSERT_COLUMNS + Array<string>(INSERT_ROWS).fill(INSERT_ROW).join(', ');
/** The parameters of one INSERT_ROW. */
const INSERT_PARAMS = 10;

/** Writes one new file's INSERT_ROW parameters into `args` from `at`, in the columns' order. */
function rowParams(
  args: unknown[],
  at: number,
  watch: string,
  file: Omit<NewFile, 'watch'>,
  now: number,
  stableMs: number,
) {
  args[at] = watch;
  args[at + 1] = file.path;
  args[at + 2] = file.rel;
  args[at + 3] = file.size;
  args[at + 4] = file.mtimeMs;
  args[at + 5] = file.ino;
  args[at + 6] = now;
  args[at + 7] = now + stableMs;
  args[at + 8] = now;
  args[at + 9] = now;
}

export interface StateDbOptions {
  /**
   * How long a batch of writes may stay open before it commits, in ms; 0 (the default, for the
   * commands): at the end of the event-loop turn. The daemon's pipeline uses a few ms: its effects
   * that must follow a durable state await `durable()`, so the window only delays what a crash may
   * redo anyway (docs/reference/results.md, "The delivery guarantee").
   */
  commitWindowMs?: number;
}

export class StateDb {
  readonly db: Database.Database;
  readonly path: string;
  private readonly statements = new Map<string, Database.Statement>();
  /** The parameters of an INSERT_MANY_SQL, filled again for each statement (discoverMany). */
  private readonly insertArgs: unknown[] = new Array<unknown>(INSERT_ROWS * INSERT_PARAMS);
  private batchOpen = false;
  /** `writes` when the open batch began: the batch holds `writes - batchStart` (see BATCH_WRITES). */
  private batchStart = 0;
  /** The open batch's commit: at the end of its window, or (`Immediate`) at the end of the turn. */
  private commitTimer: { window: NodeJS.Timeout } | { turn: NodeJS.Immediate } | undefined;
  private readonly commitWindowMs: number;
  /** Batches committed by this instance (what group commit saves shows in it; tests). */
  commits = 0;
  /** Callers of durable() waiting for the open batch's commit. */
  private waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  /** Rows with a job running in this process: finding due work leaves them out. */
  private readonly leased = new Set<number>();
  /** The watches table (a handful of rows), read once and kept in step with this instance's writes. */
  private paused: PausedWatch[] | undefined;
  private lock: Database.Database | undefined;
  private dataVersion: number | undefined;
  /** Writes this connection made (see mark): any write, committed or not. */
  private writes = 0;
  private commitFailed: ((error: unknown) => boolean) | undefined;

  /** `bytes`: an in-memory copy of the DB at `path` (copyOf), nothing opened on disk. */
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
      this.migrate();
    } catch (error) {
      this.db.close();
      throw unusable(path, error);
    }
  }

  /**
   * The DB at `path` read into memory, for reading only: `status` on a disk so full that SQLite
   * cannot open the DB (no room for its -shm file). What a -wal file holds is not in it; a DB left
   * by a stopped daemon has none (its last close checkpointed it). The header is marked as not WAL,
   * which is what an in-memory copy can open.
   */
  static copyOf(path: string): StateDb {
    const bytes = readFileSync(path);
    if (bytes.length > 19) bytes[18] = bytes[19] = 1;
    return new StateDb(path, bytes);
  }

  /** Marks a row as being worked on by this process (in memory: a restart starts clean). */
  lease(id: number) {
    this.leased.add(id);
  }
  release(id: number) {
    this.leased.delete(id);
  }

  private migrate() {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version > SCHEMA_VERSION)
      throw new Error(
        `${this.path}: the state DB has schema version ${version}, written by a newer docex-sync (this one knows ${SCHEMA_VERSION})`,
      );
    if (version === SCHEMA_VERSION) return;
    this.db.transaction(() => {
      for (let v = version; v < SCHEMA_VERSION; v++) this.db.exec(MIGRATIONS[v]!);
      this.db.pragma(`user_version = ${SCHEMA_VERSION}`);
    })();
  }

  /**
   * Makes this process the only daemon on the DB: a lock held by SQLite on `<db>.lock` (the OS drops
   * it when the process dies, so a kill -9 leaves no stale lock). A second daemon gets a message
   * naming the DB and the holder.
   */
  lockExclusive(now: number) {
    const lock = new Database(`${this.path}.lock`);
    lock.pragma('busy_timeout = 0');
    try {
      lock.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      lock.close();
      if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
      const holder = this.getValue(KV.holder);
      throw new StateLockedError(
        `the state DB ${this.path} is in use by another docex-sync${holder ? ` (${holder})` : ''}; stop it first, or give this one its own state_db`,
      );
    }
    this.lock = lock;
    this.setValue(KV.holder, `pid ${process.pid} on ${hostname()}, started ${new Date(now).toISOString()}`);
    this.flush();
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

  private st(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs a write inside the open batch, opening one (committed at the end of this event-loop turn) if
   * needed. `count`: the writes it makes (rows a statement of many rows inserts), counted in `writes`.
   */
  private write<T>(fn: () => T, count = 1): T {
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

  /** The batch is gone: what this instance keeps of the DB is read again. */
  private rolledBack(error: unknown) {
    this.endBatch();
    this.paused = undefined;
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

  private commit(throwHandled: boolean) {
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

  /** The row that currently owns this path (in the pipeline, or kept in place after success). */
  current(path: string): FileRow | undefined {
    // The key in a CAST, for the ORDER BY: see NO_REPREPARE.
    return this.st(`SELECT * FROM files WHERE path = CAST(? AS TEXT) ORDER BY id DESC LIMIT 1`).get(path) as
      FileRow | undefined;
  }

  /**
   * Which of `paths` (a folder a scan listed) no row in the pipeline holds, as their indexes: one
   * index seek per path and no row read into JavaScript, so a rescan of 100,000 waiting files costs
   * milliseconds per folder. Rows at rest (next_at = NEVER) hold nothing, but for held ones (no
   * route maps them): they wait for a config that does. A folder no row names at all (the start-up
   * scan of files the DB has never seen) is one seek, not one per path.
   */
  unheld(watch: string, paths: string[]): number[] {
    if (paths.length === 0) return [];
    if (this.noRowUnder(paths)) return paths.map((_, i) => i);
    return this.st(
      `SELECT j.key FROM json_each(?) AS j WHERE NOT EXISTS
         (SELECT 1 FROM files AS f WHERE f.path = j.value AND +f.watch = ? AND (f.next_at < ${NEVER} OR f.state = 'held'))`,
    )
      .pluck()
      .all(JSON.stringify(paths), watch) as number[];
  }

  /**
   * Whether no row of any state or watch has a path in the folder of the first of `paths` or under
   * it (false when some of `paths` are elsewhere): one seek in files_path over the range of paths
   * that start with the folder's path and separator (up to the separator's next character; SQLite
   * compares text by its UTF-8 bytes, which keeps every path with that start inside the range and
   * every other path out of it).
   */
  private noRowUnder(paths: string[]): boolean {
    const first = paths[0]!;
    const end = first.lastIndexOf(sep) + 1;
    if (end === 0) return false;
    const folder = first.slice(0, end);
    for (const path of paths) if (!path.startsWith(folder)) return false;
    const after = folder.slice(0, -1) + String.fromCharCode(folder.charCodeAt(end - 1) + 1);
    return (
      this.st(`SELECT 1 FROM files WHERE path >= ? AND path < ? LIMIT 1`).get(folder, after) === undefined
    );
  }

  /**
   * The latest row of each of `paths` (a folder a scan listed) that a scan must compare with, in one
   * read through the path index. Rows at rest (archived, or failed and moved to failed_dir:
   * next_at = NEVER) are left out unless `withArchived`: a path whose row is archived is new work
   * anyway when the watch moves or deletes its files. Only `on_success: keep` needs the archived
   * rows (a kept file is new only if it changed).
   */
  known(watch: string, paths: string[], withArchived: boolean): Map<string, KnownFile> {
    const map = new Map<string, KnownFile & { id: number }>();
    if (paths.length === 0) return map;
    const rows = this.st(
      `SELECT id, path, state, size, mtime_ms, ino FROM files
       WHERE path IN (SELECT value FROM json_each(?)) AND +watch = ?${withArchived ? '' : ` AND (next_at < ${NEVER} OR state = 'held')`}`,
    );
    for (const r of rows.iterate(JSON.stringify(paths), watch) as Iterable<
      KnownFile & { id: number; path: string }
    >) {
      const seen = map.get(r.path);
      if (!seen || seen.id < r.id) map.set(r.path, r);
    }
    return map;
  }

  discover(file: NewFile, now: number, stableMs: number): FileRow {
    return this.get(this.insert(file.watch, file, now, stableMs))!;
  }

  /**
   * Many new files of a watch in one transaction (not copied, not read back: 100,000 at start-up),
   * INSERT_ROWS rows a statement.
   */
  discoverMany(watch: string, files: Array<Omit<NewFile, 'watch'>>, now: number, stableMs: number) {
    if (files.length === 0) return;
    const whole = files.length - (files.length % INSERT_ROWS);
    // One write per row, as single inserts count (BATCH_WRITES, mark): `whole` here, the rest in insert.
    this.write(() => {
      const many = whole > 0 ? this.st(INSERT_MANY_SQL) : undefined;
      const args = this.insertArgs;
      for (let i = 0; i < whole; i += INSERT_ROWS) {
        for (let k = 0; k < INSERT_ROWS; k++)
          rowParams(args, k * INSERT_PARAMS, watch, files[i + k]!, now, stableMs);
        many!.run(args);
      }
      for (let i = whole; i < files.length; i++) this.insert(watch, files[i]!, now, stableMs);
    }, whole);
  }

  private insert(watch: string, file: Omit<NewFile, 'watch'>, now: number, stableMs: number): number {
    const args = new Array<unknown>(INSERT_PARAMS);
    rowParams(args, 0, watch, file, now, stableMs);
    return Number(this.write(() => this.st(INSERT_SQL).run(args).lastInsertRowid));
  }

  get(id: number): FileRow | undefined {
    return this.st(`SELECT * FROM files WHERE id = ?`).get(id) as FileRow | undefined;
  }

  update(id: number, changes: Partial<Omit<FileRow, 'id'>>, now: number) {
    const keys = Object.keys(changes).sort();
    const sets = [...keys.map((k) => `${k} = @${k}`), 'updated_at = @updated_at'].join(', ');
    this.write(() =>
      this.st(`UPDATE files SET ${sets} WHERE id = @id`).run({ ...changes, updated_at: now, id }),
    );
  }

  inState(state: FileState, limit = 1000): FileRow[] {
    return this.st(`SELECT * FROM files WHERE state = ? ORDER BY id LIMIT ?`).all(state, limit) as FileRow[];
  }

  /** Rows of a state in id order, after `afterId`: for walking all of them a page at a time. */
  page(state: FileState, afterId: number, limit: number): FileRow[] {
    return this.st(`SELECT * FROM files WHERE state = ? AND id > ? ORDER BY id LIMIT ?`).all(
      state,
      afterId,
      limit,
    ) as FileRow[];
  }

  /**
   * Rows of a state whose next_at has come and that no job holds, soonest first. Ids are read from
   * the (state, next_at) index alone and only the rows taken are read whole: most due rows are held
   * by a job while the pipeline is busy, and reading them whole on every scheduler step cost more
   * than the rest of the step.
   */
  due(state: FileState, now: number, limit: number): FileRow[] {
    if (limit <= 0) return [];
    if (!FILE_STATES.includes(state)) throw new TypeError(`not a file state: ${String(state)}`);
    // One statement per state, the state written in (see NO_REPREPARE).
    const ids = this.st(
      `SELECT id FROM files WHERE state = '${state}' AND next_at <= ? ORDER BY next_at, id`,
    );
    return this.rowsOf(firstIds(ids, [now], limit + this.leased.size), limit);
  }

  /** Stable rows ready for upload and not held by a job, leaving out paused watches. */
  dueForUpload(now: number, limit: number): FileRow[] {
    if (limit <= 0) return [];
    const ids = this.st(
      `SELECT id FROM files WHERE state = 'stable' AND next_at <= ?
       AND watch NOT IN (SELECT path FROM watches) ORDER BY next_at, id`,
    );
    return this.rowsOf(firstIds(ids, [now], limit + this.leased.size), limit);
  }

  /** The whole rows of the first `limit` ids that no job holds. */
  private rowsOf(ids: number[], limit: number): FileRow[] {
    const rows: FileRow[] = [];
    for (const id of ids) {
      if (rows.length === limit) break;
      if (this.leased.has(id)) continue;
      const row = this.get(id);
      if (row) rows.push(row);
    }
    return rows;
  }

  /**
   * The earliest next_at still to come, over all rows waiting for something; undefined when idle.
   * Rows at rest have next_at = NEVER. One seek in the (state, next_at) index per state: a MIN over
   * all states at once would read every index entry past `now`.
   */
  nextDue(now: number): number | undefined {
    const { at } = this.st(
      `SELECT MIN(at) AS at FROM (${FILE_STATES.map(
        (s) =>
          `SELECT MIN(next_at) AS at FROM files WHERE state = '${s}' AND next_at > @now AND next_at < ${NEVER}`,
      ).join(' UNION ALL ')})`,
    ).get({ now }) as { at: number | null };
    return at ?? undefined;
  }

  /**
   * A finished upload of the same bytes: its document can be reused instead of uploading again.
   * Whichever the hash index gives first (in practice the oldest): no ORDER BY, see NO_REPREPARE.
   */
  completedWithHash(sha256: string, exceptId: number): FileRow | undefined {
    return this.st(
      `SELECT * FROM files WHERE sha256 = ? AND id != ? AND state IN ('done', 'archived') AND document_id IS NOT NULL`,
    ).get(sha256, exceptId) as FileRow | undefined;
  }

  /** Another row with the same bytes already on its way (uploading or uploaded): wait for it. */
  inFlightWithHash(sha256: string, exceptId: number): FileRow | undefined {
    return this.st(
      `SELECT * FROM files WHERE sha256 = ? AND id != ? AND state IN ('uploading', 'uploaded')`,
    ).get(sha256, exceptId) as FileRow | undefined;
  }

  isActive(path: string): boolean {
    const row = this.current(path);
    return row !== undefined && ACTIVE_STATES.includes(row.state);
  }

  /** How many tasks wait for their results (rows in 'uploaded'), counted up to `limit` only. */
  awaitingResults(limit: number): number {
    // The limit written in, one statement per limit (a constant of the config): see NO_REPREPARE.
    if (!Number.isSafeInteger(limit)) throw new TypeError(`not a whole number: ${limit}`);
    return this.st(`SELECT COUNT(*) FROM (SELECT 1 FROM files WHERE state = 'uploaded' LIMIT ${limit})`)
      .pluck()
      .get() as number;
  }

  /**
   * Files per state. REST_COUNTED: the rows in flight counted through files_state, the rows at rest
   * (archived, failed: they pile up over the years) read from their tally (schema 11).
   */
  counts(): Record<FileState, number> {
    const out = Object.fromEntries(FILE_STATES.map((s) => [s, 0])) as Record<FileState, number>;
    for (const r of this.st(
      `SELECT state, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) GROUP BY state
       UNION ALL SELECT state, SUM(n) FROM rest_tallies GROUP BY state`,
    ).all() as Array<{ state: FileState; n: number }>)
      out[r.state] += r.n;
    return out;
  }

  /** Files per outcome (processed, duplicate...), counted as counts() counts (REST_COUNTED). */
  outcomes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.st(
      `SELECT outcome, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) AND outcome IS NOT NULL GROUP BY outcome
       UNION ALL SELECT outcome, SUM(n) FROM rest_tallies WHERE outcome != '' GROUP BY outcome`,
    ).all() as Array<{ outcome: string; n: number }>) {
      if (r.n > 0) out[r.outcome] = (out[r.outcome] ?? 0) + r.n;
    }
    return out;
  }

  oldestWaiting(): FileRow | undefined {
    return this.st(
      `SELECT * FROM files WHERE state IN ('discovered','stable','uploading','uploaded','done') ORDER BY discovered_at LIMIT 1`,
    ).get() as FileRow | undefined;
  }

  /**
   * The last failures and local problems (results, archive or report that could not be written),
   * newest first: the newest of each kind (the failed rows through files_state, the held back ones
   * through files_blocked), not every row sorted.
   */
  lastErrors(limit = 5): FileRow[] {
    const rows = new Map<number, FileRow>();
    for (const row of [...this.lastFailed(limit), ...this.blocked(limit)]) rows.set(row.id, row);
    return [...rows.values()].sort((a, b) => b.updated_at - a.updated_at || b.id - a.id).slice(0, limit);
  }

  /** Rows held back by a local problem (e.g. the output folder is read-only or full), newest first. */
  blocked(limit = 100): FileRow[] {
    return this.st(`SELECT * FROM files WHERE blocked IS NOT NULL ORDER BY updated_at DESC LIMIT ?`).all(
      limit,
    ) as FileRow[];
  }

  /** What holds work back at run level or locally, for `status` and /healthz. */
  problems() {
    const unreachable = this.getValue(KV.unreachable);
    return {
      paused_watches: this.pausedWatches().map((w) => ({
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
      blocked: this.blocked(20).map((r) => ({ file: r.path, state: r.state, reason: r.blocked })),
    };
  }

  pausedWatches(): PausedWatch[] {
    this.paused ??= this.st(`SELECT * FROM watches ORDER BY path`).all() as PausedWatch[];
    return this.paused;
  }
  pauseWatch(path: string, reason: string, now: number, probeAt: number) {
    this.paused = undefined;
    this.write(() => {
      this.st(
        `INSERT INTO watches (path, paused_reason, paused_at, probe_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET paused_reason = excluded.paused_reason, probe_at = excluded.probe_at`,
      ).run(path, reason, now, probeAt);
    });
  }
  resumeWatch(path: string) {
    this.paused = undefined;
    this.write(() => this.st(`DELETE FROM watches WHERE path = ?`).run(path));
  }
  /** The oldest stable row of a paused watch: the one file sent to see whether the watch works again. */
  probeRow(watch: string): FileRow | undefined {
    return this.st(
      `SELECT * FROM files WHERE state = 'stable' AND watch = ? ORDER BY next_at, id LIMIT 1`,
    ).get(watch) as FileRow | undefined;
  }

  /** Since when, and why, the service has been unreachable (undefined: it answers). */
  serviceUnreachable(): { since: number; reason: string } | undefined {
    const value = this.getValue(KV.unreachable);
    if (!value) return undefined;
    try {
      const parsed = JSON.parse(value) as { since: number; reason: string };
      return { since: Number(parsed.since), reason: String(parsed.reason) };
    } catch {
      return { since: 0, reason: value };
    }
  }
  markServiceUnreachable(since: number, reason: string) {
    this.setValue(KV.unreachable, JSON.stringify({ since, reason }));
  }
  markServiceReachable() {
    this.deleteValue(KV.unreachable);
  }

  /** When and why the service last refused the API key, if no run's key check has passed since. */
  keyRefusal(): { at: number; message: string } | undefined {
    const value = this.getValue(KV.keyRefused);
    if (!value) return undefined;
    try {
      const parsed = JSON.parse(value) as { at: number; message: string };
      return { at: Number(parsed.at), message: String(parsed.message) };
    } catch {
      return { at: 0, message: value };
    }
  }
  markKeyRefused(at: number, message: string) {
    this.setValue(KV.keyRefused, JSON.stringify({ at, message }));
  }
  clearKeyRefusal() {
    this.deleteValue(KV.keyRefused);
  }

  /** The watches whose native watcher was found blind, by path. */
  blindWatchers(): Record<string, BlindWatcherRecord> {
    try {
      const value = JSON.parse(this.getValue(KV.blindWatchers) ?? '{}') as unknown;
      return value && typeof value === 'object' ? (value as Record<string, BlindWatcherRecord>) : {};
    } catch {
      return {};
    }
  }
  /** Records (or, with null, clears) a watch's blind watcher. */
  setBlindWatcher(watch: string, blind: BlindWatcherRecord | null) {
    const all = this.blindWatchers();
    if (blind) all[watch] = blind;
    else if (watch in all) delete all[watch];
    else return;
    if (Object.keys(all).length) this.setValue(KV.blindWatchers, JSON.stringify(all));
    else this.deleteValue(KV.blindWatchers);
  }

  /** Keeps the last `keep` pulls, newest first. */
  recordPull(record: PullRecord, keep = 10) {
    this.setValue(KV.pullHistory, JSON.stringify([record, ...this.lastPulls(keep)].slice(0, keep)));
  }
  lastPulls(limit = 10): PullRecord[] {
    try {
      const value = JSON.parse(this.getValue(KV.pullHistory) ?? '[]') as unknown;
      return Array.isArray(value) ? (value as PullRecord[]).slice(0, limit) : [];
    } catch {
      return [];
    }
  }

  /** Files per watch and state. */
  countsByWatch(): Array<{ watch: string; state: FileState; n: number }> {
    this.commit(false); // a failed commit (a full disk) is the pipeline's to handle: the read goes on
    // REST_COUNTED (see counts()); a (watch, state) comes from one side only.
    return this.st(
      `SELECT watch, state, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) GROUP BY watch, state
       UNION ALL SELECT watch, state, SUM(n) AS n FROM rest_tallies GROUP BY watch, state HAVING SUM(n) > 0`,
    ).all() as Array<{ watch: string; state: FileState; n: number }>;
  }
  /** Files per watch, route and state, held ones left out (they have no route). */
  countsByRoute(): Array<{ watch: string; route: string | null; state: FileState; n: number }> {
    this.commit(false); // a failed commit (a full disk) is the pipeline's to handle: the read goes on
    // REST_COUNTED; the tally keeps no route as ''.
    return this.st(
      `SELECT watch, route, state, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) AND state != 'held'
       GROUP BY watch, route, state
       UNION ALL SELECT watch, NULLIF(route, ''), state, SUM(n) AS n FROM rest_tallies
       GROUP BY watch, route, state HAVING SUM(n) > 0`,
    ).all() as Array<{ watch: string; route: string | null; state: FileState; n: number }>;
  }
  /** The held rows (no route maps them), newest first. */
  lastHeld(limit: number): FileRow[] {
    return this.st(`SELECT * FROM files WHERE state = 'held' ORDER BY updated_at DESC, id DESC LIMIT ?`).all(
      limit,
    ) as FileRow[];
  }
  /** The rows waiting for review (state review), oldest first: the order a person works through them. */
  inReview(limit: number): FileRow[] {
    return this.st(`SELECT * FROM files WHERE state = 'review' ORDER BY updated_at, id LIMIT ?`).all(
      limit,
    ) as FileRow[];
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
  /** The failed rows, newest first. */
  lastFailed(limit: number): FileRow[] {
    return this.st(
      `SELECT * FROM files WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT ?`,
    ).all(limit) as FileRow[];
  }
  /** Files that ended (archived or failed) since `ms`, oldest first. */
  finishedSince(ms: number): Array<{ state: FileState; updated_at: number }> {
    // Through files_finished, named (without statistics SQLite prefers files_state, and then reads
    // and sorts every row at rest): the rows since `ms` only, in order.
    return this.st(
      `SELECT state, updated_at FROM files INDEXED BY files_finished
       WHERE (state = 'archived' OR state = 'failed') AND updated_at >= ? ORDER BY updated_at`,
    ).all(ms) as Array<{ state: FileState; updated_at: number }>;
  }
  /**
   * When the documents waiting for review since `ms` went there. Through files_state (a seek to
   * state 'review'): it reads the rows waiting for a person, few by nature (the page lists them
   * too), never the rows at rest, so no index and no migration for it.
   */
  reviewSince(ms: number): number[] {
    return this.st(`SELECT updated_at FROM files WHERE state = 'review' AND updated_at >= ?`)
      .pluck()
      .all(ms) as number[];
  }
  /**
   * Rows of a watch whose files of `kind` are older than `cutoff` (by the time the DB recorded their
   * move or write) and not settled by retention yet, in id order after `afterId`. Results of a
   * document that another row still within the period shares (the same bytes again) wait for it, as
   * do those of a document a row waiting for review shares (its results go to output when approved).
   * A row in review is never due: its original and results wait in review_dir, not retention's folders.
   */
  pruneDue(watch: string, kind: PruneKind, cutoff: number, afterId: number, limit: number): FileRow[] {
    const which = {
      processed: `state = 'archived'`,
      failed: `state = 'failed' AND finalized = 1`,
      results: `state = 'archived' AND document_id IS NOT NULL AND NOT EXISTS
        (SELECT 1 FROM files AS g WHERE g.document_id = f.document_id AND g.id != f.id
         AND g.state IN ('uploaded', 'done', 'review', 'archived') AND g.updated_at > @cutoff)`,
    }[kind];
    return this.st(
      `SELECT * FROM files AS f WHERE watch = @watch AND ${which} AND updated_at <= @cutoff AND id > @afterId
       AND NOT EXISTS (SELECT 1 FROM pruned AS p WHERE p.file_id = f.id AND p.kind = @kind)
       ORDER BY id LIMIT @limit`,
    ).all({ watch, kind, cutoff, afterId, limit }) as FileRow[];
  }

  /** Files retention settled (all of one row's kind together, so a row is settled whole or not at all). */
  recordPruned(files: PrunedFile[], now: number) {
    this.write(() => {
      for (const f of files)
        this.st(
          `INSERT INTO pruned (file_id, kind, path, bytes, outcome, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        ).run(f.file_id, f.kind, f.path, f.bytes, f.outcome, f.reason, now);
    });
  }

  /** What retention has deleted so far, and how many files it kept because they changed. */
  prunedTotals(): { deleted: number; bytes: number; kept: number; last_at: number | null } {
    return this.st(
      `SELECT COALESCE(SUM(outcome = 'deleted'), 0) AS deleted, COALESCE(SUM(CASE WHEN outcome = 'deleted' THEN bytes END), 0) AS bytes,
       COALESCE(SUM(outcome = 'kept'), 0) AS kept, MAX(at) AS last_at FROM pruned`,
    ).get() as { deleted: number; bytes: number; kept: number; last_at: number | null };
  }

  /** The rows of files whose results came from these documents (a rerun rewrites them). */
  filesOfDocuments(documentIds: number[]): FileRow[] {
    // A seek per document in files_document: through files_state (`+state` keeps the planner off
    // it) a rerun's every chunk read all the done and archived rows there are.
    return this.st(
      `SELECT * FROM files WHERE +state IN ('done', 'archived') AND document_id IN (SELECT value FROM json_each(?)) ORDER BY id`,
    ).all(JSON.stringify(documentIds)) as FileRow[];
  }

  getValue(key: KvKey): string | undefined {
    return (this.st(`SELECT value FROM kv WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
  }
  setValue(key: KvKey, value: string) {
    this.write(() =>
      this.st(
        `INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      ).run(key, value),
    );
  }
  deleteValue(key: KvKey) {
    this.write(() => this.st(`DELETE FROM kv WHERE key = ?`).run(key));
  }

  startRerun(name: string, dryRun: boolean, override: boolean, now: number): number | undefined {
    this.flush();
    return this.db.transaction(() => {
      const running = this.st(`SELECT id FROM reruns WHERE name = ? AND status = 'running'`).get(name);
      if (running) return undefined;
      return Number(
        this.st(
          `INSERT INTO reruns (name, started_at, dry_run, override, status) VALUES (?, ?, ?, ?, 'running')`,
        ).run(name, now, dryRun ? 1 : 0, override ? 1 : 0).lastInsertRowid,
      );
    })();
  }
  finishRerun(
    id: number,
    result: { documents: number; rerun: number; not_rerun: number; errors: unknown[]; status: string },
    now: number,
  ) {
    this.write(() =>
      this.st(
        `UPDATE reruns SET finished_at = ?, documents = ?, rerun = ?, not_rerun = ?, errors = ?, status = ? WHERE id = ?`,
      ).run(
        now,
        result.documents,
        result.rerun,
        result.not_rerun,
        JSON.stringify(result.errors),
        result.status,
        id,
      ),
    );
  }
  /** Runs marked running by a process that died: they are not running any more. */
  abandonRunningReruns(now: number) {
    this.write(() =>
      this.st(`UPDATE reruns SET status = 'interrupted', finished_at = ? WHERE status = 'running'`).run(now),
    );
  }
  lastReruns(limit = 5) {
    return this.st(`SELECT * FROM reruns ORDER BY id DESC LIMIT ?`).all(limit);
  }

  /**
   * A message and the file rows of its attachments, in one commit (written to the spool before):
   * after this returns, a crash loses none of them and a restart does not take the message again.
   * A message left as it was is done at once: it has no after-action to run.
   */
  recordMail(message: NewMailMessage, files: Array<NewFile & { name: string }>, now: number): number {
    const id = this.write(() => {
      const messageId = Number(
        this.st(
          `INSERT INTO mail_messages (mailbox, uidvalidity, uid, message_id, sender, subject, sent_at, outcome, reason, attachments, skipped, recorded_at, left_reason, done_at)
           VALUES (@mailbox, @uidvalidity, @uid, @message_id, @sender, @subject, @sent_at, @outcome, @reason, @attachments, @skipped, @now, @left_reason, @done_at)`,
        ).run({
          ...message,
          attachments: files.length,
          skipped: JSON.stringify(message.skipped),
          now,
          done_at: message.left_reason === null ? null : now,
        }).lastInsertRowid,
      );
      for (const file of files) {
        const fileId = this.insert(file.watch, file, now, 0);
        this.st(`INSERT INTO mail_attachments (file_id, message, name) VALUES (?, ?, ?)`).run(
          fileId,
          messageId,
          file.name,
        );
      }
      return messageId;
    });
    this.flush();
    return id;
  }
  mailMessage(mailbox: string, uidvalidity: number, uid: number): MailMessageRow | undefined {
    return this.st(`SELECT * FROM mail_messages WHERE mailbox = ? AND uidvalidity = ? AND uid = ?`).get(
      mailbox,
      uidvalidity,
      uid,
    ) as MailMessageRow | undefined;
  }
  /** The first message of this Message-ID whose attachments were taken (the second identity check). */
  mailTakenWithMessageId(mailbox: string, messageId: string): MailMessageRow | undefined {
    return this.st(
      `SELECT * FROM mail_messages WHERE mailbox = ? AND message_id = ? AND outcome = 'taken' ORDER BY id LIMIT 1`,
    ).get(mailbox, messageId) as MailMessageRow | undefined;
  }
  /**
   * The highest UID recorded under this UIDVALIDITY (0: none). Messages are taken in UID order and
   * a new message always gets a higher UID, so a poll asks the server only for UIDs above it.
   */
  mailHighestUid(mailbox: string, uidvalidity: number): number {
    return (
      (this.st(`SELECT MAX(uid) FROM mail_messages WHERE mailbox = ? AND uidvalidity = ?`)
        .pluck()
        .get(mailbox, uidvalidity) as number | null) ?? 0
    );
  }
  /** Recorded messages whose after-action (flag, move) has not run yet. */
  mailPending(mailbox: string): MailMessageRow[] {
    return this.st(`SELECT * FROM mail_messages WHERE mailbox = ? AND done_at IS NULL ORDER BY id`).all(
      mailbox,
    ) as MailMessageRow[];
  }
  mailDone(id: number, now: number) {
    this.write(() => this.st(`UPDATE mail_messages SET done_at = ? WHERE id = ?`).run(now, id));
  }
  /** For status: messages by outcome, attachments taken, messages left as they were. */
  mailCounts(mailbox: string): { messages: Record<string, number>; attachments: number; left: number } {
    const messages: Record<string, number> = { taken: 0, duplicate: 0, skipped: 0 };
    let attachments = 0;
    let left = 0;
    for (const r of this.st(
      `SELECT outcome, COUNT(*) AS n, SUM(attachments) AS a, COUNT(left_reason) AS l FROM mail_messages WHERE mailbox = ? GROUP BY outcome`,
    ).all(mailbox) as Array<{ outcome: string; n: number; a: number; l: number }>) {
      messages[r.outcome] = r.n;
      attachments += r.a;
      left += r.l;
    }
    return { messages, attachments, left };
  }
  /** The last messages left as they were (not flagged or moved), newest first. */
  mailLeft(mailbox: string, limit = 10): MailMessageRow[] {
    return this.st(
      `SELECT * FROM mail_messages WHERE mailbox = ? AND left_reason IS NOT NULL ORDER BY id DESC LIMIT ?`,
    ).all(mailbox, limit) as MailMessageRow[];
  }
  /** The last messages that had something skipped or were skipped, newest first. */
  mailSkips(mailbox: string, limit = 5): MailMessageRow[] {
    return this.st(
      `SELECT * FROM mail_messages WHERE mailbox = ? AND skipped != '[]' ORDER BY id DESC LIMIT ?`,
    ).all(mailbox, limit) as MailMessageRow[];
  }
  /** A mailbox's connection state as its intake last wrote it (JSON; kv key mailbox.<name>). */
  mailboxConnection(mailbox: string): string | undefined {
    return (
      this.st(`SELECT value FROM kv WHERE key = 'mailbox.' || ?`).get(mailbox) as
        { value: string } | undefined
    )?.value;
  }
  setMailboxConnection(mailbox: string, value: string) {
    this.write(() =>
      this.st(
        `INSERT INTO kv (key, value) VALUES ('mailbox.' || ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      ).run(mailbox, value),
    );
  }
  /** The message a file row came from, when it came from a mailbox. */
  mailSourceOf(fileId: number): MailSource | undefined {
    // Two lookups by key rather than a join: a file that came from no mail (most) costs one, and
    // neither is prepared again at each call (see NO_REPREPARE).
    const attachment = this.st(`SELECT message, name FROM mail_attachments WHERE file_id = ?`).get(fileId) as
      { message: number; name: string } | undefined;
    if (!attachment) return undefined;
    const message = this.st(
      `SELECT mailbox, sender AS "from", subject, sent_at AS date, message_id FROM mail_messages WHERE id = ?`,
    ).get(attachment.message) as Omit<MailSource, 'attachment'> | undefined;
    return message && { ...message, attachment: attachment.name };
  }
}
