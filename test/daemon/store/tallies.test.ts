/**
 * counts(), outcomes(), countsByWatch() and countsByRoute() read the rows at rest from a tally kept
 * by triggers (schema 11). Whatever happens to the rows, they must say what counting every row says.
 */
import { copyFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FILE_STATES, type FileState } from '../../../daemon/src/domain/lifecycle.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';

const FIXTURE = join(import.meta.dirname, '../../fixtures/state-0.1.0.db');
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function freshDir() {
  const dir = await mkdtemp(join(tmpdir(), 'docex-tallies-'));
  dirs.push(dir);
  return dir;
}

/** What the four reads must say, counted from every row. */
function countedFromEveryRow(db: StateDb) {
  const all = <T>(sql: string) => db.db.prepare(sql).all() as T[];
  const counts = Object.fromEntries(FILE_STATES.map((s) => [s, 0])) as Record<FileState, number>;
  for (const r of all<{ state: FileState; n: number }>(
    `SELECT state, COUNT(*) AS n FROM files GROUP BY state`,
  ))
    counts[r.state] = r.n;
  const outcomes = Object.fromEntries(
    all<{ outcome: string; n: number }>(
      `SELECT outcome, COUNT(*) AS n FROM files WHERE outcome IS NOT NULL GROUP BY outcome`,
    ).map((r) => [r.outcome, r.n]),
  );
  const byWatch = all<object>(`SELECT watch, state, COUNT(*) AS n FROM files GROUP BY watch, state`);
  const byRoute = all<object>(
    `SELECT watch, route, state, COUNT(*) AS n FROM files WHERE state != 'held' GROUP BY watch, route, state`,
  );
  return { counts, outcomes, byWatch, byRoute };
}

function readBack(db: StateDb) {
  return {
    counts: db.fileCounts.counts(),
    outcomes: db.fileCounts.outcomes(),
    byWatch: db.fileCounts.countsByWatch(),
    byRoute: db.fileCounts.countsByRoute(),
  };
}

const sorted = (rows: object[]) => rows.map((r) => JSON.stringify(r)).sort();
function expectSame(db: StateDb, step: string) {
  const want = countedFromEveryRow(db);
  const got = readBack(db);
  expect(got.counts, step).toEqual(want.counts);
  expect(got.outcomes, step).toEqual(want.outcomes);
  expect(sorted(got.byWatch), step).toEqual(sorted(want.byWatch));
  expect(sorted(got.byRoute), step).toEqual(sorted(want.byRoute));
}

/** xorshift32: the same run every time, and many different steps in it. */
function random(seed: number) {
  let x = seed;
  return (n: number) => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % n;
  };
}

describe('the tally of rows at rest', () => {
  it('says what counting every row says, after any mix of new rows, state, outcome, route and watch changes', async () => {
    const db = new StateDb(join(await freshDir(), 'sync.db'));
    try {
      const pick = random(0x9e3779b9);
      const watches = ['/in/a', '/in/b'];
      const routes = [null, 'invoices', 'receipts'];
      const outcomes = [null, 'processed', 'duplicate', 'deleted'];
      let files = 0;
      const add = (watch: string, count: number) => {
        db.files.discoverMany(
          watch,
          Array.from({ length: count }, () => {
            files++;
            return { path: `${watch}/f${files}`, rel: `f${files}`, size: 1, mtimeMs: 1, ino: files };
          }),
          0,
          0,
        );
      };
      add('/in/a', 60);
      add('/in/b', 40);
      expectSame(db, 'after the first rows');
      for (let step = 0; step < 2000; step++) {
        const id = 1 + pick(files);
        const change: Record<string, unknown> = {};
        // Mostly state changes, often into and out of the states at rest, and the other columns
        // the tally is keyed by, alone or together.
        if (pick(4) !== 0) change.state = FILE_STATES[pick(FILE_STATES.length)];
        if (pick(3) === 0) change.outcome = outcomes[pick(outcomes.length)];
        if (pick(5) === 0) change.route = routes[pick(routes.length)];
        if (pick(20) === 0) change.watch = watches[pick(watches.length)];
        if (pick(10) === 0) change.blocked = pick(2) ? 'the results folder is read-only' : null;
        db.files.update(id, change, step);
        if (pick(50) === 0) add(watches[pick(2)]!, 1 + pick(5));
        if (step % 250 === 0) {
          db.flush();
          expectSame(db, `step ${step}`);
        }
      }
      db.flush();
      expectSame(db, 'at the end');
      // The mix reached every state at rest with several outcomes and routes.
      const rest = db.db.prepare(`SELECT COUNT(*) FROM rest_tallies WHERE n > 0`).pluck().get() as number;
      expect(rest).toBeGreaterThan(10);
    } finally {
      db.close();
    }
  });

  it('a row deleted at rest leaves the tally', async () => {
    const db = new StateDb(join(await freshDir(), 'sync.db'));
    try {
      db.files.discoverMany(
        '/in',
        [1, 2].map((i) => ({ path: `/in/f${i}`, rel: `f${i}`, size: 1, mtimeMs: 1, ino: i })),
        0,
        0,
      );
      db.files.update(1, { state: 'archived', outcome: 'processed' }, 1);
      db.files.update(2, { state: 'failed' }, 1);
      db.flush();
      db.db.prepare(`DELETE FROM files WHERE id = 1`).run();
      expectSame(db, 'after the delete');
      expect(db.fileCounts.counts().archived).toBe(0);
      expect(db.fileCounts.counts().failed).toBe(1);
    } finally {
      db.close();
    }
  });

  it('rows are only ever inserted in flight (no trigger counts an insert at rest)', async () => {
    // store/files.ts is the only writer of the files table (test/lint/table-writers.test.ts).
    const store = await readFile(join(import.meta.dirname, '../../../daemon/src/store/files.ts'), 'utf8');
    const inserts = [...store.matchAll(/INSERT INTO files\b/g)];
    expect(inserts).toHaveLength(1);
    expect(store).toMatch(/const INSERT_ROW = `\(\?, \?, \?, \?, \?, \?, 'discovered', /);
    for (const dir of [
      'domain',
      'intake',
      'pipeline',
      'jobs',
      'actions',
      'app',
      'outputs',
      'mail',
      'commands',
      'status',
    ])
      for (const file of await readdir(join(import.meta.dirname, '../../../daemon/src', dir)))
        expect(
          await readFile(join(import.meta.dirname, '../../../daemon/src', dir, file), 'utf8'),
          `${dir}/${file}`,
        ).not.toMatch(/INSERT INTO files\b/);
  });

  it('a DB of docex-sync 0.1.0 migrates with its rows at rest tallied', async () => {
    const path = join(await freshDir(), 'sync.db');
    await copyFile(FIXTURE, path);
    const db = new StateDb(path);
    try {
      expect(db.fileCounts.counts().archived + db.fileCounts.counts().failed).toBeGreaterThan(0);
      expectSame(db, 'after the migration');
    } finally {
      db.close();
    }
  });
});
