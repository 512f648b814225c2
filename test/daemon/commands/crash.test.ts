/**
 * The delivery guarantee under group commit, with kill -9 at exact moments: the daemon kills
 * itself (SIGKILL) when it reaches a named point (DOCEX_SYNC_CRASH_AT, daemon/src/common/crash-point.ts)
 * - mid-batch, with changes of several files uncommitted; with a task id stored but not committed;
 * between a daily CSV group's fsync and its rows' commit; between an original's move and its
 * commit - and a second run, as an operator would start it, must leave every file archived once,
 * with one document, its results and one daily row, no file sent more often than the documented
 * bound allows.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { parseCsv, type ResultJson } from '../../../daemon/src/outputs/results.ts';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  SECRET,
  stateOf,
  stopCliChildren,
  until,
  type World,
} from '../helpers.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
let world: World;
await calibrate();
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
});

const names = Array.from({ length: 8 }, (_, i) => `g${i}.txt`);

/** Drops the files, runs until the crash point kills the daemon, then runs again until all are archived. */
async function crashThenRestart(point: string) {
  world = await makeWorld({ taskDelayMs: 100 });
  for (const name of names) await writeFile(join(world.dir, 'inbox', name), invoice(name));
  const first = runCli(['run', '--config', world.configFile], { DOCEX_SYNC_CRASH_AT: point });
  expect(await first.exited).toBe(-1); // no exit code: killed
  expect(first.child.signalCode).toBe('SIGKILL');
  const before = new Map(names.map((n) => [n, stateOf(world, n)]));

  const second = runCli(['run', '--config', world.configFile]);
  await until('all archived', () => names.every((n) => stateOf(world, n) === 'archived'), 40_000);
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
  return { before, uploads: world.emulator.stats().uploadsByHash };
}

/** What the guarantee promises whatever the moment of the crash. */
async function expectEveryFileDeliveredOnce(uploads: Record<string, number>) {
  for (const n of names) expect(uploads[sha(invoice(n))], n).toBeGreaterThanOrEqual(1);
  for (const n of names) expect(uploads[sha(invoice(n))], n).toBeLessThanOrEqual(2);
  // api.concurrency (4): the most a crash may send twice (docs/daemon.md, "The re-upload bound").
  expect(names.filter((n) => uploads[sha(invoice(n))] === 2).length).toBeLessThanOrEqual(4);
  const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
  expect(await client.fetchDocuments({})).toHaveLength(names.length); // one document per file

  expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual([...names].sort());
  expect(await readdir(join(world.dir, 'inbox'))).toEqual([]);
  expect(await readdir(join(world.dir, 'failed'))).toEqual([]);

  const results = await readdir(join(world.dir, 'results'));
  const jsons = results.filter((f) => f.endsWith('.json'));
  expect(jsons).toHaveLength(names.length);
  for (const file of jsons) {
    const json = JSON.parse(await readFile(join(world.dir, 'results', file), 'utf8')) as ResultJson;
    // Where the JSON says the original went is where it is.
    expect(json.archived_to, file).toBe(join(world.dir, 'processed', basename(json.source_file)));
  }
  const daily = results.filter((f) => /^daily-.*\.csv$/.test(f));
  const rows = [];
  for (const file of daily)
    rows.push(...parseCsv(await readFile(join(world.dir, 'results', file), 'utf8'), ',').slice(1));
  expect(rows.map((r) => basename(r[1]!)).sort()).toEqual([...names].sort()); // source_file: one row per document
}

describe('group commit: kill -9 at an exact moment, then a restart', () => {
  it('with a task id stored but not committed: that file is sent again (a DUPLICATE answer), every file ends archived once', async () => {
    const { uploads } = await crashThenRestart('answer-stored@3');
    // The third answer was in the open batch when the process died: its file went up twice.
    expect(names.filter((n) => uploads[sha(invoice(n))] === 2).length).toBeGreaterThanOrEqual(1);
    await expectEveryFileDeliveredOnce(uploads);
  }, 90_000);

  it('mid-batch (a commit holding several files’ changes is lost): every file ends archived once', async () => {
    // The fifth batch of several writes: a run of these eight files commits about a dozen.
    const { before, uploads } = await crashThenRestart('state-commit@5');
    // The crash came while files were in flight, not before or after all of them.
    expect([...before.values()].some((s) => s !== 'archived')).toBe(true);
    await expectEveryFileDeliveredOnce(uploads);
  }, 90_000);

  it('after a daily CSV group was fsynced but before its rows committed: one daily row per document', async () => {
    const { uploads } = await crashThenRestart('daily-appended@1');
    await expectEveryFileDeliveredOnce(uploads);
  }, 90_000);

  it('after an original was moved but before that was committed: recorded as archived where it went, not polled or moved again', async () => {
    const { before, uploads } = await crashThenRestart('original-moved@2');
    // Its row was committed as done before the move (the pipeline waits for that), so the restart
    // only records the move: no file is left to be polled and written again.
    expect([...before.values()].filter((s) => s === 'done').length).toBeGreaterThanOrEqual(1);
    await expectEveryFileDeliveredOnce(uploads);
  }, 90_000);
});
