/**
 * The files table's indexes (schema 9, issue #22): a new row is written to the table, files_path and
 * files_state only, so recording 1,000,000 files at start-up writes three B-trees per row instead of
 * six. files_next is gone (nextDue seeks files_state once per state), files_sha holds rows with a
 * hash only and files_watch the rows retention pages through (archived, failed). Schema 10:
 * files_document holds rows with a document id, so that retention finds a document's other rows by
 * a seek, not by reading every row of their states for each row it pages through.
 *
 * What must not be lost with them: every query the pipeline runs per file or per scheduler step
 * still reads through an index, never the whole table. The plans are read with EXPLAIN QUERY PLAN
 * for the very statements (and parameters) StateDb runs, caught as it prepares them.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { FILE_STATES, NEVER } from '../../../daemon/src/domain/lifecycle.ts';
import { SCHEMA_VERSION, StateDb } from '../../../daemon/src/store/state.ts';

const FIXTURE = join(import.meta.dirname, '../../fixtures/state-0.1.0.db');
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function freshDir() {
  const dir = await mkdtemp(join(tmpdir(), 'docex-indexes-'));
  dirs.push(dir);
  return dir;
}

/** The indexes of the files table: name → whether partial. */
function filesIndexes(db: Database.Database): Record<string, boolean> {
  const list = db.pragma('index_list(files)') as Array<{ name: string; partial: number }>;
  return Object.fromEntries(list.map((i) => [i.name, i.partial === 1]));
}

const EXPECTED_INDEXES = {
  files_path: false,
  files_state: false,
  files_sha: true,
  files_watch: true,
  files_document: true,
  files_finished: true,
  files_blocked: true,
};

/** Records the SQL and parameters of each statement StateDb runs from now on. */
function recordStatements(db: StateDb) {
  const ran: Array<{ sql: string; args: unknown[] }> = [];
  const prepare = db.db.prepare.bind(db.db);
  db.db.prepare = ((sql: string) => {
    const statement = prepare(sql);
    for (const method of ['get', 'all', 'iterate', 'run'] as const) {
      const original = statement[method].bind(statement) as (...args: unknown[]) => unknown;
      (statement as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
        ran.push({ sql, args });
        return original(...args);
      };
    }
    return statement;
  }) as typeof db.db.prepare;
  /** The plan (one detail per line) of each statement run by `call`. */
  return (call: () => unknown): string[][] => {
    const from = ran.length;
    call();
    return ran
      .slice(from)
      .map(({ sql, args }) =>
        (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail),
      );
  };
}

/** A full scan of the files table (as itself or under an alias). */
const FULL_SCAN = /^SCAN (files|f|g)\b/;

describe('the files indexes', () => {
  it('a 0.1.0 DB (schema 3) migrates to them; its rows are found through them as before', async () => {
    const path = join(await freshDir(), 'sync.db');
    await copyFile(FIXTURE, path);
    const db = new StateDb(path);
    try {
      expect(db.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      expect(filesIndexes(db.db)).toEqual(EXPECTED_INDEXES);
      const watch = db.db.prepare('SELECT watch FROM files LIMIT 1').pluck().get() as string;
      const archived = db.files.get(1)!;
      expect(archived.state).toBe('archived');
      // files_sha (partial) still finds a hash; files_state serves the next due time;
      // files_watch (partial) retention's rows; files_path a file's row.
      expect(db.files.completedWithHash(archived.sha256!, 0)?.id).toBe(1);
      expect(db.dueWork.nextDue(0)).toBe(db.files.get(4)!.next_at);
      expect(db.retention.pruneDue(watch, 'processed', NEVER, 0, 10).map((r) => r.id)).toEqual([1, 2]);
      expect(db.files.current(archived.path)?.id).toBe(1);
    } finally {
      db.close();
    }
    // Opened again: nothing left to migrate.
    const again = new StateDb(path);
    expect(filesIndexes(again.db)).toEqual(EXPECTED_INDEXES);
    again.close();
  });

  it('a new DB has them, and the hot queries read through an index, never the whole table', async () => {
    const db = new StateDb(join(await freshDir(), 'sync.db'));
    try {
      expect(filesIndexes(db.db)).toEqual(EXPECTED_INDEXES);
      const watch = '/in';
      const now = 1_000_000;
      db.files.discoverMany(
        watch,
        Array.from({ length: 50 }, (_, i) => ({
          path: `/in/f${i}`,
          rel: `f${i}`,
          size: 1,
          mtimeMs: 1,
          ino: i,
        })),
        now,
        1000,
      );
      db.files.update(1, { state: 'stable', sha256: 'a'.repeat(64), next_at: now }, now);
      db.files.update(2, { state: 'archived', sha256: 'b'.repeat(64), document_id: 7, next_at: NEVER }, now);
      db.files.update(3, { state: 'failed', finalized: 1, next_at: NEVER }, now);
      db.flush();
      const plans = recordStatements(db);
      const paths = ['/in/f1', '/in/f2', '/in/nope'];
      const hot: Array<[string, () => unknown, string]> = [
        ['due', () => db.dueWork.due('discovered', now + 5000, 10), 'files_state'],
        ['dueForUpload', () => db.dueWork.dueForUpload(now, 10), 'files_state'],
        ['unheld', () => db.files.unheld(watch, paths), 'files_path'],
        ['known', () => db.files.known(watch, paths, false), 'files_path'],
        ['known, with archived rows', () => db.files.known(watch, paths, true), 'files_path'],
        ['current', () => db.files.current('/in/f1'), 'files_path'],
        ['completedWithHash', () => db.files.completedWithHash('b'.repeat(64), 1), 'files_sha'],
        ['inFlightWithHash', () => db.files.inFlightWithHash('a'.repeat(64), 2), 'files_sha'],
        ['nextDue', () => db.dueWork.nextDue(now), 'files_state'],
        ['probeRow', () => db.files.probeRow(watch), 'files_state'],
        ['pruneDue processed', () => db.retention.pruneDue(watch, 'processed', now, 0, 10), 'files_watch'],
        ['pruneDue failed', () => db.retention.pruneDue(watch, 'failed', now, 0, 10), 'files_watch'],
        ['pruneDue results', () => db.retention.pruneDue(watch, 'results', now, 0, 10), 'files_watch'],
      ];
      for (const [name, call, index] of hot) {
        // The query itself, then (due, dueForUpload) the rows taken, read by id; unheld first asks
        // whether any row names the folder (one seek, below), then seeks each path.
        const [plan, ...byId] = plans(call).slice(name === 'unheld' ? 1 : 0);
        expect(
          plan!.filter((d) => FULL_SCAN.test(d) || d.includes('TEMP B-TREE')),
          name,
        ).toEqual([]);
        expect(
          plan!.some((d) => d.includes(`INDEX ${index} `)),
          `${name}: ${plan!.join(' | ')}`,
        ).toBe(true);
        for (const p of byId) expect(p, name).toEqual(['SEARCH files USING INTEGER PRIMARY KEY (rowid=?)']);
      }
      // unheld: whether any row names the folder is one seek, a range of files_path; a folder no
      // row names is answered by that seek alone (a start-up scan of files the DB never saw).
      const [folder] = plans(() => db.files.unheld(watch, paths));
      expect(folder).toEqual(['SEARCH files USING COVERING INDEX files_path (path>? AND path<?)']);
      const fresh = plans(() => expect(db.files.unheld(watch, ['/in/new/a', '/in/new/b'])).toEqual([0, 1]));
      expect(fresh).toEqual([folder]);
      // pruneDue results: the other rows of each row's document by a seek in files_document. Through
      // files_state it read every row of those states for each row (20,000 archived rows: 79 s).
      const [results] = plans(() => db.retention.pruneDue(watch, 'results', now, 0, 10));
      expect(results).toContain('SEARCH g USING INDEX files_document (document_id=?)');
      // What the status page, /healthz and /metrics read: rows in flight through files_state, rows at
      // rest from their tally; the latest finished and held-back rows through their partial indexes.
      for (const [name, call] of [
        ['counts', () => db.fileCounts.counts()],
        ['outcomes', () => db.fileCounts.outcomes()],
        ['countsByWatch', () => db.fileCounts.countsByWatch()],
        ['countsByRoute', () => db.fileCounts.countsByRoute()],
        ['lastErrors', () => db.fileCounts.lastErrors()],
      ] as const)
        for (const plan of plans(call))
          expect(
            // A scan of files_blocked reads the held-back rows only (a partial index).
            plan.filter((d) => FULL_SCAN.test(d) && !d.endsWith('USING INDEX files_blocked')),
            `${name}: ${plan.join(' | ')}`,
          ).toEqual([]);
      const [finished] = plans(() => db.fileCounts.finishedSince(now));
      expect(finished).toEqual(['SEARCH files USING INDEX files_finished (updated_at>?)']);
      const [blocked] = plans(() => db.fileCounts.blocked());
      expect(blocked).toEqual(['SCAN files USING INDEX files_blocked']);
      // filesOfDocuments (a rerun's chunk of documents): a seek per document, not every done row.
      const [ofDocuments] = plans(() => expect(db.files.filesOfDocuments([7]).map((r) => r.id)).toEqual([2]));
      expect(ofDocuments).toContain('SEARCH files USING INDEX files_document (document_id=?)');
      expect(ofDocuments!.filter((d) => d.includes('files_state') || FULL_SCAN.test(d))).toEqual([]);
      // nextDue: one seek in files_state per state, each bounded by `now` and NEVER.
      const [nextDue] = plans(() => db.dueWork.nextDue(now));
      expect(nextDue!.filter((d) => d.startsWith('SEARCH files'))).toEqual(
        FILE_STATES.map(
          () => 'SEARCH files USING COVERING INDEX files_state (state=? AND next_at>? AND next_at<?)',
        ),
      );
    } finally {
      db.close();
    }
  });

  // NO_REPREPARE in store/files.ts: SQLite prepares a statement again at each call whose bound
  // values differ when one may change its plan. Counted with a uprobe on sqlite3Reprepare (perf
  // stat), each of these forms was prepared again at every call and the forms below at none; the
  // test keeps the per-file and per-step queries in the second kind.
  it('the per-file and per-step queries bind no LIMIT, no state, and no bare key beside an ORDER BY', async () => {
    const db = new StateDb(join(await freshDir(), 'sync.db'));
    try {
      const sqls: string[] = [];
      const prepare = db.db.prepare.bind(db.db);
      db.db.prepare = ((sql: string) => (sqls.push(sql), prepare(sql))) as typeof db.db.prepare;
      db.dueWork.due('discovered', 0, 8);
      db.dueWork.due('uploaded', 0, 8);
      db.dueWork.dueForUpload(0, 4);
      db.files.current('/in/a');
      db.files.completedWithHash('a'.repeat(64), 1);
      db.files.inFlightWithHash('a'.repeat(64), 1);
      db.dueWork.awaitingResults(300);
      db.mail.mailSourceOf(1);
      expect(sqls.length).toBeGreaterThanOrEqual(7);
      for (const sql of sqls) {
        expect(sql, sql).not.toMatch(/LIMIT \?/);
        expect(sql, sql).not.toMatch(/\bstate = \?/);
        expect(sql, sql).not.toMatch(/\bJOIN\b/);
        // Beside an ORDER BY, a key is given in a CAST (whatever the ORDER BY names).
        if (/ORDER BY/.test(sql)) expect(sql, sql).not.toMatch(/\b\w+ = \?/);
      }
    } finally {
      db.close();
    }
  });

  it('nextDue is the earliest next_at to come, whatever the state, and undefined at rest', async () => {
    const db = new StateDb(join(await freshDir(), 'sync.db'));
    try {
      expect(db.dueWork.nextDue(0)).toBeUndefined();
      const file = (i: number) => ({ path: `/in/f${i}`, rel: `f${i}`, size: 1, mtimeMs: 1, ino: i });
      db.files.discoverMany('/in', [file(1), file(2), file(3)], 100, 0);
      db.files.update(1, { state: 'archived', next_at: NEVER }, 100);
      db.files.update(2, { state: 'uploaded', next_at: 500 }, 100);
      db.files.update(3, { state: 'failed', next_at: 300 }, 100);
      expect(db.dueWork.nextDue(0)).toBe(300);
      expect(db.dueWork.nextDue(300)).toBe(500); // strictly after now
      expect(db.dueWork.nextDue(500)).toBeUndefined();
      db.files.update(3, { state: 'held', next_at: 200 }, 100);
      expect(db.dueWork.nextDue(0)).toBe(200);
    } finally {
      db.close();
    }
  });
});
