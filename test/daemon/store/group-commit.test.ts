/**
 * Group commit: the state DB's batches (a window, a size, durable()), the daily CSV's group appends
 * and the grouped folder fsyncs. The moments are driven by fake timers and gates, never by sleeping.
 * The kill -9 side of it is in test/daemon/commands/process.test.ts.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { folderSyncer } from '../../../daemon/src/common/files.ts';
import { DailyCsv, parseCsv, STANDARD_CSV } from '../../../daemon/src/outputs/results.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir() {
  const dir = await mkdtemp(join(tmpdir(), 'docex-group-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A state DB, and what another process reading it sees committed: the number of file rows. */
async function openDb(commitWindowMs?: number) {
  const path = join(await tempDir(), 'state.db');
  const db = new StateDb(path, undefined, { commitWindowMs });
  const reader = new Database(path, { readonly: true });
  cleanups.push(
    () => db.close(),
    () => reader.close(),
  );
  let n = 0;
  const discover = () =>
    db.files.discover(
      { watch: '/in', path: `/in/${++n}.pdf`, rel: `${n}.pdf`, size: 1, mtimeMs: 1, ino: n },
      0,
      0,
    );
  const committed = () => (reader.prepare('SELECT count(*) AS n FROM files').get() as { n: number }).n;
  return { db, discover, committed };
}

const fakeTimers = () =>
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'clearImmediate'] });

describe('the state DB commits in groups', () => {
  it('with a window, the writes of several turns share one commit at its end', async () => {
    const { db, discover, committed } = await openDb(5);
    fakeTimers();
    discover();
    vi.advanceTimersByTime(0); // the end of the turn: nothing committed yet
    expect(committed()).toBe(0);
    discover();
    vi.advanceTimersByTime(4);
    expect(committed()).toBe(0);
    vi.advanceTimersByTime(1);
    expect(committed()).toBe(2);
    expect(db.commits).toBe(1);
  });

  it('durable() commits at the end of the turn, once for every caller of that turn, and resolves after it', async () => {
    const { db, discover, committed } = await openDb(1000);
    fakeTimers();
    discover();
    const first = db.durable();
    discover();
    const second = db.durable();
    let resolved = false;
    void Promise.all([first, second]).then(() => (resolved = true));
    await Promise.resolve();
    expect(resolved).toBe(false);
    expect(committed()).toBe(0);
    vi.advanceTimersByTime(0);
    await Promise.all([first, second]);
    expect(committed()).toBe(2);
    expect(db.commits).toBe(1);
    await db.durable(); // nothing open: at once
    expect(db.commits).toBe(1);
  });

  it('a batch of 1,000 writes commits at the end of its turn, not at the end of its window', async () => {
    const { discover, committed } = await openDb(60_000);
    fakeTimers();
    for (let i = 0; i < 999; i++) discover();
    vi.advanceTimersByTime(0);
    expect(committed()).toBe(0);
    discover();
    vi.advanceTimersByTime(0);
    expect(committed()).toBe(1000);
  });

  it("discoverMany's rows count a write each: a batch they take past 1,000 commits at the end of its turn", async () => {
    const { db, discover, committed } = await openDb(60_000);
    fakeTimers();
    for (let i = 0; i < 950; i++) discover();
    // Two statements of 50 rows: 950 + 100 writes.
    const files = Array.from({ length: 100 }, (_, i) => ({
      path: `/in/many-${i}.pdf`,
      rel: `many-${i}.pdf`,
      size: 1,
      mtimeMs: 1,
      ino: 10_000 + i,
    }));
    db.files.discoverMany('/in', files, 0, 0);
    vi.advanceTimersByTime(0);
    expect(committed()).toBe(1050);
  });

  it('without a window (the commands), a batch commits at the end of its turn', async () => {
    const { discover, committed } = await openDb();
    fakeTimers();
    discover();
    expect(committed()).toBe(0);
    vi.advanceTimersByTime(0);
    expect(committed()).toBe(1);
  });

  it('close() commits the open batch and resolves who waits for it', async () => {
    const { db, discover, committed } = await openDb(60_000);
    discover();
    const waiting = db.durable();
    db.close();
    await waiting;
    expect(committed()).toBe(1);
  });
});

describe('the daily CSV appends in groups', () => {
  const row = (id: number) => ({
    document_id: id,
    source_file: `/in/${id}.pdf`,
    document_name: `${id}.pdf`,
    archived_to: null,
    outcome: 'processed',
    written_at: '2026-11-27T00:00:00.000Z',
    fraud_verdict: '',
    fraud_score: '',
  });

  it('rows that come while an append is on its way go together in the next one, in order', async () => {
    const path = join(await tempDir(), 'daily.csv');
    const daily = new DailyCsv();
    const first = await Promise.all(
      Array.from({ length: 20 }, (_, i) => daily.append(path, row(i + 1), [['Total', i]], STANDARD_CSV)),
    );
    expect(first.every(Boolean)).toBe(true);
    expect(daily.appends).toBe(1);
    // One alone is not held back for company.
    expect(await daily.append(path, row(21), [['Total', 20]], STANDARD_CSV)).toBe(true);
    expect(daily.appends).toBe(2);
    const [header, ...rows] = parseCsv(await readFile(path, 'utf8'), ',');
    expect(header).toContain('Total');
    expect(rows.map((r) => Number(r[0]))).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  });

  it('a document twice in one group is one row; the second is told it was there', async () => {
    const path = join(await tempDir(), 'daily.csv');
    const daily = new DailyCsv();
    expect(
      await Promise.all([
        daily.append(path, row(1), [], STANDARD_CSV),
        daily.append(path, row(1), [], STANDARD_CSV),
      ]),
    ).toEqual([true, false]);
    expect(parseCsv(await readFile(path, 'utf8'), ',')).toHaveLength(2); // header and one row
  });

  it('a group that cannot be written fails each of its rows; another file of the same turn is written', async () => {
    const dir = await tempDir();
    const daily = new DailyCsv();
    const results = await Promise.allSettled([
      daily.append(join(dir, 'missing', 'daily.csv'), row(1), [], STANDARD_CSV),
      daily.append(join(dir, 'daily.csv'), row(2), [], STANDARD_CSV),
      daily.append(join(dir, 'missing', 'daily.csv'), row(3), [], STANDARD_CSV),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'rejected']);
    expect(parseCsv(await readFile(join(dir, 'daily.csv'), 'utf8'), ',')).toHaveLength(2);
  });
});

describe('folder fsyncs in groups', () => {
  /** An fsync that ends when the test says so. */
  function gatedFsync() {
    const calls: Array<{ dir: string; done: () => void; fail: (e: Error) => void }> = [];
    const fsync = (dir: string) =>
      new Promise<void>((done, fail) => {
        calls.push({ dir, done, fail });
      });
    return { calls, sync: folderSyncer(fsync) };
  }
  const settled = async (p: Promise<unknown>) => {
    let state = 'pending';
    p.then(
      () => (state = 'resolved'),
      () => (state = 'rejected'),
    );
    for (let i = 0; i < 10; i++) await Promise.resolve();
    return state;
  };

  it('who comes while an fsync runs waits for the next one, shared with all who came meanwhile', async () => {
    const { calls, sync } = gatedFsync();
    const a = sync('/out');
    await settled(a);
    expect(calls).toHaveLength(1); // started at once
    const b = sync('/out');
    const c = sync('/out');
    expect(b).toBe(c);
    calls[0]!.done();
    expect(await settled(a)).toBe('resolved');
    // The first fsync may have begun before b's rename: b waits for the second.
    expect(await settled(b)).toBe('pending');
    expect(calls).toHaveLength(2);
    calls[1]!.done();
    expect(await settled(b)).toBe('resolved');
    expect(calls).toHaveLength(2); // three callers, two fsyncs
  });

  it('folders are synced apart; a failed fsync fails its callers and the next call syncs anew', async () => {
    const { calls, sync } = gatedFsync();
    const out = sync('/out');
    const other = sync('/other');
    await settled(out);
    expect(calls.map((c) => c.dir)).toEqual(['/out', '/other']);
    calls[0]!.fail(new Error('EIO'));
    calls[1]!.done();
    expect(await settled(out)).toBe('rejected');
    expect(await settled(other)).toBe('resolved');
    const again = sync('/out');
    await settled(again);
    expect(calls).toHaveLength(3);
    calls[2]!.done();
    expect(await settled(again)).toBe('resolved');
  });
});
