/**
 * The files table: one row per file (domain/lifecycle.ts names its states), written here and
 * nowhere else: a file found (one row or a scan's thousands), a row's changes, and the lookups the
 * pipeline makes by path, id, hash and document. What comes due next is store/due-work.ts's; what
 * the rows add up to, store/file-counts.ts's.
 */
import { sep } from 'node:path';
import { ACTIVE_STATES, NEVER, type FileRow, type FileState } from '../domain/lifecycle.ts';
import type { Connection } from './connection.ts';

export interface NewFile {
  watch: string;
  path: string;
  rel: string;
  size: number;
  mtimeMs: number;
  ino: number;
}
export type KnownFile = Pick<FileRow, 'state' | 'size' | 'mtime_ms' | 'ino'>;

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

export class FileRepository {
  private readonly c: Connection;
  /** The parameters of an INSERT_MANY_SQL, filled again for each statement (discoverMany). */
  private readonly insertArgs: unknown[] = new Array<unknown>(INSERT_ROWS * INSERT_PARAMS);

  constructor(connection: Connection) {
    this.c = connection;
  }

  /** The row that currently owns this path (in the pipeline, or kept in place after success). */
  current(path: string): FileRow | undefined {
    // The key in a CAST, for the ORDER BY: see NO_REPREPARE.
    return this.c
      .st(`SELECT * FROM files WHERE path = CAST(? AS TEXT) ORDER BY id DESC LIMIT 1`)
      .get(path) as FileRow | undefined;
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
    return this.c
      .st(
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
      this.c.st(`SELECT 1 FROM files WHERE path >= ? AND path < ? LIMIT 1`).get(folder, after) === undefined
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
    const rows = this.c.st(
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
    this.c.write(() => {
      const many = whole > 0 ? this.c.st(INSERT_MANY_SQL) : undefined;
      const args = this.insertArgs;
      for (let i = 0; i < whole; i += INSERT_ROWS) {
        for (let k = 0; k < INSERT_ROWS; k++)
          rowParams(args, k * INSERT_PARAMS, watch, files[i + k]!, now, stableMs);
        many!.run(args);
      }
      for (let i = whole; i < files.length; i++) this.insert(watch, files[i]!, now, stableMs);
    }, whole);
  }

  /** One new row, its id: for a file found alone, or an attachment of a mail (store/mail.ts). */
  insert(watch: string, file: Omit<NewFile, 'watch'>, now: number, stableMs: number): number {
    const args = new Array<unknown>(INSERT_PARAMS);
    rowParams(args, 0, watch, file, now, stableMs);
    return Number(this.c.write(() => this.c.st(INSERT_SQL).run(args).lastInsertRowid));
  }

  get(id: number): FileRow | undefined {
    return this.c.st(`SELECT * FROM files WHERE id = ?`).get(id) as FileRow | undefined;
  }

  update(id: number, changes: Partial<Omit<FileRow, 'id'>>, now: number) {
    const keys = Object.keys(changes).sort();
    const sets = [...keys.map((k) => `${k} = @${k}`), 'updated_at = @updated_at'].join(', ');
    this.c.write(() =>
      this.c.st(`UPDATE files SET ${sets} WHERE id = @id`).run({ ...changes, updated_at: now, id }),
    );
  }

  inState(state: FileState, limit = 1000): FileRow[] {
    return this.c
      .st(`SELECT * FROM files WHERE state = ? ORDER BY id LIMIT ?`)
      .all(state, limit) as FileRow[];
  }

  /** Rows of a state in id order, after `afterId`: for walking all of them a page at a time. */
  page(state: FileState, afterId: number, limit: number): FileRow[] {
    return this.c
      .st(`SELECT * FROM files WHERE state = ? AND id > ? ORDER BY id LIMIT ?`)
      .all(state, afterId, limit) as FileRow[];
  }

  /**
   * A finished upload of the same bytes: its document can be reused instead of uploading again.
   * Whichever the hash index gives first (in practice the oldest): no ORDER BY, see NO_REPREPARE.
   */
  completedWithHash(sha256: string, exceptId: number): FileRow | undefined {
    return this.c
      .st(
        `SELECT * FROM files WHERE sha256 = ? AND id != ? AND state IN ('done', 'archived') AND document_id IS NOT NULL`,
      )
      .get(sha256, exceptId) as FileRow | undefined;
  }

  /** Another row with the same bytes already on its way (uploading or uploaded): wait for it. */
  inFlightWithHash(sha256: string, exceptId: number): FileRow | undefined {
    return this.c
      .st(`SELECT * FROM files WHERE sha256 = ? AND id != ? AND state IN ('uploading', 'uploaded')`)
      .get(sha256, exceptId) as FileRow | undefined;
  }

  isActive(path: string): boolean {
    const row = this.current(path);
    return row !== undefined && ACTIVE_STATES.includes(row.state);
  }
  /** The oldest stable row of a paused watch: the one file sent to see whether the watch works again. */
  probeRow(watch: string): FileRow | undefined {
    return this.c
      .st(`SELECT * FROM files WHERE state = 'stable' AND watch = ? ORDER BY next_at, id LIMIT 1`)
      .get(watch) as FileRow | undefined;
  }

  /** The rows of files whose results came from these documents (a rerun rewrites them). */
  filesOfDocuments(documentIds: number[]): FileRow[] {
    // A seek per document in files_document: through files_state (`+state` keeps the planner off
    // it) a rerun's every chunk read all the done and archived rows there are.
    return this.c
      .st(
        `SELECT * FROM files WHERE +state IN ('done', 'archived') AND document_id IN (SELECT value FROM json_each(?)) ORDER BY id`,
      )
      .all(JSON.stringify(documentIds)) as FileRow[];
  }
}
