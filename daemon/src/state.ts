/**
 * The state DB (SQLite, WAL): one row per file, keyed by path and content hash. Every transition is
 * committed before the side effect that follows it, so a crash anywhere resumes from the last state.
 *
 *   discovered → stable → uploading → uploaded(task_id) → done(results written) → archived
 *                                  ↘ failed(reason, attempts)          (outcome: processed | duplicate)
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

export type FileState = 'discovered' | 'stable' | 'uploading' | 'uploaded' | 'done' | 'archived' | 'failed';
export const FILE_STATES: FileState[] = [
  'discovered',
  'stable',
  'uploading',
  'uploaded',
  'done',
  'archived',
  'failed',
];

export interface FileRow {
  id: number;
  watch: string;
  path: string;
  rel: string;
  size: number;
  mtime_ms: number;
  sha256: string | null;
  state: FileState;
  outcome: 'processed' | 'duplicate' | 'failed' | null;
  task_id: string | null;
  document_id: number | null;
  attempts: number;
  reason: string | null;
  /** failed rows: whether the source was moved to the failed folder with its .error.json */
  finalized: number;
  next_at: number;
  poll_interval_ms: number;
  stable_since: number;
  discovered_at: number;
  updated_at: number;
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS files (
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
);
`;

/** Files still in the pipeline: a path with one of these is not discovered again. */
const ACTIVE: FileState[] = ['discovered', 'stable', 'uploading', 'uploaded', 'done'];

export class StateDb {
  readonly db: Database.Database;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(SCHEMA);
  }

  close() {
    this.db.close();
  }

  /** The row that currently owns this path (in the pipeline, or kept in place after success). */
  current(path: string): FileRow | undefined {
    return this.db.prepare(`SELECT * FROM files WHERE path = ? ORDER BY id DESC LIMIT 1`).get(path) as
      FileRow | undefined;
  }

  discover(watch: string, path: string, rel: string, size: number, mtimeMs: number, now: number): FileRow {
    const info = this.db
      .prepare(
        `INSERT INTO files (watch, path, rel, size, mtime_ms, state, stable_since, discovered_at, updated_at) VALUES (?, ?, ?, ?, ?, 'discovered', ?, ?, ?)`,
      )
      .run(watch, path, rel, size, mtimeMs, now, now, now);
    return this.get(Number(info.lastInsertRowid))!;
  }

  get(id: number): FileRow | undefined {
    return this.db.prepare(`SELECT * FROM files WHERE id = ?`).get(id) as FileRow | undefined;
  }

  update(id: number, changes: Partial<Omit<FileRow, 'id'>>, now: number) {
    const keys = Object.keys(changes);
    const sets = [...keys.map((k) => `${k} = @${k}`), 'updated_at = @updated_at'].join(', ');
    this.db.prepare(`UPDATE files SET ${sets} WHERE id = @id`).run({ ...changes, updated_at: now, id });
  }

  inState(state: FileState, limit = 1000): FileRow[] {
    return this.db
      .prepare(`SELECT * FROM files WHERE state = ? ORDER BY id LIMIT ?`)
      .all(state, limit) as FileRow[];
  }

  /** Rows of a state whose next_at has come, oldest first. */
  due(state: FileState, now: number, limit: number): FileRow[] {
    return this.db
      .prepare(`SELECT * FROM files WHERE state = ? AND next_at <= ? ORDER BY next_at, id LIMIT ?`)
      .all(state, now, limit) as FileRow[];
  }

  /** A finished upload of the same bytes: its document can be reused instead of uploading again. */
  completedWithHash(sha256: string, exceptId: number): FileRow | undefined {
    return this.db
      .prepare(
        `SELECT * FROM files WHERE sha256 = ? AND id != ? AND state IN ('done', 'archived') AND document_id IS NOT NULL ORDER BY id LIMIT 1`,
      )
      .get(sha256, exceptId) as FileRow | undefined;
  }

  /** Another row with the same bytes already on its way (uploading or uploaded): wait for it. */
  inFlightWithHash(sha256: string, exceptId: number): FileRow | undefined {
    return this.db
      .prepare(
        `SELECT * FROM files WHERE sha256 = ? AND id != ? AND state IN ('uploading', 'uploaded') ORDER BY id LIMIT 1`,
      )
      .get(sha256, exceptId) as FileRow | undefined;
  }

  isActive(path: string): boolean {
    const row = this.current(path);
    return row !== undefined && ACTIVE.includes(row.state);
  }

  counts(): Record<FileState, number> {
    const out = Object.fromEntries(FILE_STATES.map((s) => [s, 0])) as Record<FileState, number>;
    for (const r of this.db.prepare(`SELECT state, COUNT(*) AS n FROM files GROUP BY state`).all() as Array<{
      state: FileState;
      n: number;
    }>)
      out[r.state] = r.n;
    return out;
  }

  outcomes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.db
      .prepare(`SELECT outcome, COUNT(*) AS n FROM files WHERE outcome IS NOT NULL GROUP BY outcome`)
      .all() as Array<{ outcome: string; n: number }>) {
      out[r.outcome] = r.n;
    }
    return out;
  }

  oldestWaiting(): FileRow | undefined {
    return this.db
      .prepare(
        `SELECT * FROM files WHERE state IN ('discovered','stable','uploading','uploaded','done') ORDER BY discovered_at LIMIT 1`,
      )
      .get() as FileRow | undefined;
  }

  lastErrors(limit = 5): FileRow[] {
    return this.db
      .prepare(`SELECT * FROM files WHERE state = 'failed' ORDER BY updated_at DESC LIMIT ?`)
      .all(limit) as FileRow[];
  }

  getValue(key: string): string | undefined {
    return (this.db.prepare(`SELECT value FROM kv WHERE key = ?`).get(key) as { value: string } | undefined)
      ?.value;
  }
  setValue(key: string, value: string) {
    this.db
      .prepare(
        `INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      )
      .run(key, value);
  }

  startRerun(name: string, dryRun: boolean, override: boolean, now: number): number | undefined {
    return this.db.transaction(() => {
      const running = this.db
        .prepare(`SELECT id FROM reruns WHERE name = ? AND status = 'running'`)
        .get(name);
      if (running) return undefined;
      return Number(
        this.db
          .prepare(
            `INSERT INTO reruns (name, started_at, dry_run, override, status) VALUES (?, ?, ?, ?, 'running')`,
          )
          .run(name, now, dryRun ? 1 : 0, override ? 1 : 0).lastInsertRowid,
      );
    })();
  }
  finishRerun(
    id: number,
    result: { documents: number; rerun: number; not_rerun: number; errors: unknown[]; status: string },
    now: number,
  ) {
    this.db
      .prepare(
        `UPDATE reruns SET finished_at = ?, documents = ?, rerun = ?, not_rerun = ?, errors = ?, status = ? WHERE id = ?`,
      )
      .run(
        now,
        result.documents,
        result.rerun,
        result.not_rerun,
        JSON.stringify(result.errors),
        result.status,
        id,
      );
  }
  /** Runs marked running by a process that died: they are not running any more. */
  abandonRunningReruns(now: number) {
    this.db
      .prepare(`UPDATE reruns SET status = 'interrupted', finished_at = ? WHERE status = 'running'`)
      .run(now);
  }
  lastReruns(limit = 5) {
    return this.db.prepare(`SELECT * FROM reruns ORDER BY id DESC LIMIT ?`).all(limit);
  }
}
