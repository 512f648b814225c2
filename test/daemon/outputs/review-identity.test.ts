/**
 * One set of records per file (issue #41, defect 7), tried as a back office would: a watch with
 * routed subfolders, names from the data and the example's review rules (examples/docex-sync.yaml),
 * against the emulator. Two files that end up with one result name, because their bytes are the
 * same (the second reuses the first's document) or because their data gives the same name, each
 * wait with their own review files, are approved on the status page one at a time without touching
 * the other, and end with their own result JSON, daily CSV row and prune entries.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { NEVER, type FileRow } from '../../../daemon/src/domain/lifecycle.ts';
import { prune } from '../../../daemon/src/jobs/retention.ts';
import type { ResultJson } from '../../../daemon/src/outputs/results.ts';
import type { ReviewJson } from '../../../daemon/src/outputs/review.ts';
import { invoice, makeWorld, until, type World } from '../helpers.ts';
import { backOffice, csvRecords, drop, heldInvoice, jsonFiles, tree } from '../review-helpers.ts';
import { call } from '../../support/http-call.ts';

const DAY = 86_400_000;
let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** Approve on the status page, as its button does (POST /api/approve with the page's headers). */
async function approveOnPage(daemon: RunningDaemon, id: number) {
  const port = (daemon.http!.address() as AddressInfo).port;
  const answer = await call(port, '/api/approve', {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-docex-sync-request': 'approve',
      origin: `http://127.0.0.1:${port}`,
    },
    body: JSON.stringify({ ids: [id] }),
  });
  expect(answer.status).toBe(200);
  expect(answer.json()).toEqual({ approved: [id], skipped: [] });
}

/** The contents of files, by path (to see later that nothing of them changed). */
async function snapshot(paths: string[]): Promise<Record<string, string>> {
  return Object.fromEntries(
    await Promise.all(paths.map(async (p) => [p, await readFile(p, 'utf8')] as const)),
  );
}

/**
 * The scenario, whatever makes the two files' names meet: both wait with their own records, the
 * first approved on the page leaves the second's alone, and each ends with its own result JSON,
 * daily CSV row and prune entries (each file listed once).
 */
async function eachFileOwnsItsRecords(
  w: World,
  daemon: RunningDaemon,
  files: Array<{ path: string; text: string }>,
  outcomes: { [path: string]: 'processed' | 'duplicate' },
) {
  const review = join(w.dir, 'to-review');
  const rowOf = (path: string) => daemon.db.files.current(path) as FileRow;
  const [first, second] = files.map((f) => ({ ...f, id: rowOf(f.path).id }));

  // Held: a review.json for each file, naming its own source, original and result files.
  const held = await jsonFiles<ReviewJson>(review, '.review.json');
  const reviewOf = (path: string) => [...held].find(([, r]) => r.source_file === path);
  expect.soft([...held.values()].map((r) => r.source_file).sort()).toEqual(files.map((f) => f.path).sort());
  for (const f of files) {
    const own = reviewOf(f.path);
    expect.soft(own, `review.json of ${f.path}`).toBeDefined();
    if (!own) continue;
    const [reviewPath, json] = own;
    expect.soft(json.original).toBe(rowOf(f.path).review_path);
    expect.soft(await readFile(json.original, 'utf8').catch(() => 'missing'), json.original).toBe(f.text);
    expect.soft(reviewPath).toBe(join(review, `${rowOf(f.path).result_base}.review.json`));
    for (const result of json.results)
      expect
        .soft(
          await readFile(result).then(
            () => 'there',
            () => 'missing',
          ),
          result,
        )
        .toBe('there');
    const resultJson = json.results.find((r) => r.endsWith('.json'));
    const written = resultJson
      ? ((await readFile(resultJson, 'utf8')
          .then(JSON.parse)
          .catch(() => undefined)) as ResultJson | undefined)
      : undefined;
    expect.soft(written?.source_file, `${resultJson} names its file`).toBe(f.path);
    expect.soft(written?.archived_to, `${resultJson} says where its original waits`).toBe(json.original);
    expect.soft(written?.outcome).toBe(outcomes[f.path]);
  }
  const originals = [...held.values()].map((r) => r.original);
  expect.soft(new Set(originals).size, 'each original waits under its own name').toBe(files.length);
  const reviewCsv = (await tree(review)).find((f) => /^review-\d{4}-\d\d-\d\d\.csv$/.test(f));
  const reviewRows = reviewCsv ? await csvRecords(join(review, reviewCsv)) : [];
  expect
    .soft(reviewRows.map((r) => [r.source_file, r.archived_to]).sort())
    .toEqual(files.map((f) => [f.path, rowOf(f.path).review_path]).sort());

  // The first approved on the page: the second's review files are still there, unchanged.
  const secondReview = reviewOf(second!.path);
  const secondFiles = secondReview
    ? [secondReview[0], secondReview[1].original, ...secondReview[1].results]
    : [];
  expect.soft(secondFiles, "the second's review.json, original and three result files").toHaveLength(5);
  const secondBefore = await snapshot(secondFiles);
  await approveOnPage(daemon, first!.id);
  await until('the first archived', () => daemon.db.files.get(first!.id)!.state === 'archived', 30_000);
  expect.soft(daemon.db.files.get(second!.id)!.state).toBe('review');
  expect
    .soft(
      await snapshot(Object.keys(secondBefore)).catch((e: Error) => e.message),
      "the second's review files",
    )
    .toEqual(secondBefore);

  await approveOnPage(daemon, second!.id);
  await until('the second archived', () => daemon.db.files.get(second!.id)!.state === 'archived', 30_000);

  // Each file's own result JSON: its source, where its original went, its outcome.
  const results = join(w.dir, 'results');
  const written = await jsonFiles<ResultJson>(results, '.json');
  expect
    .soft([...written.values()].map((j) => j.source_file).sort(), 'one result JSON per file')
    .toEqual(files.map((f) => f.path).sort());
  for (const f of files) {
    const row = daemon.db.files.get(rowOf(f.path).id)!;
    const json = [...written.values()].find((j) => j.source_file === f.path);
    expect.soft(json?.archived_to, `archived_to of ${f.path}`).toBe(row.archive_path);
    expect.soft(json?.outcome, `outcome of ${f.path}`).toBe(outcomes[f.path]);
    expect.soft(json?.document.document_id).toBe(row.document_id);
    expect.soft(await readFile(row.archive_path!, 'utf8').catch(() => 'missing')).toBe(f.text);
  }

  // A row per file in the day's CSV, each with its own source, archive and outcome.
  const daily = (await tree(results)).find((f) => f.startsWith('daily-'));
  const dailyRows = daily ? await csvRecords(join(results, daily)) : [];
  expect
    .soft(dailyRows.map((r) => [r.source_file, r.archived_to, r.outcome]).sort(), 'daily CSV rows')
    .toEqual(
      files
        .map((f) => [f.path, daemon.db.files.get(rowOf(f.path).id)!.archive_path, outcomes[f.path]])
        .sort(),
    );

  // Prune, long after: each file's original and results listed once.
  const expected = [
    ...files.map((f) => daemon.db.files.get(rowOf(f.path).id)!.archive_path!),
    ...(await tree(results)).filter((f) => !f.startsWith('daily-')).map((f) => join(results, f)),
  ];
  await daemon.stop();
  const lines: string[] = [];
  await prune(w.config(), {
    dryRun: true,
    out: (l) => void lines.push(l),
    now: () => Date.now() + 500 * DAY,
  });
  const listed = lines
    .filter((l) => l.startsWith('would delete '))
    .map((l) => /^would delete (.+) \([\d,]+ bytes; /.exec(l)![1]!);
  expect.soft(listed.sort(), 'prune --dry-run lists').toEqual(expected.sort());
  expect.soft(expected).toHaveLength(2 + 3 * files.length);
  expect.soft(lines.at(-1)).toMatch(new RegExp(`^Dry run: ${expected.length} file\\(s\\), `));
}

describe('one set of records per file', () => {
  it(
    'two copies of one file, both held for review: each has its own review files, result JSON, daily row and prune entries',
    { timeout: 120_000 },
    async () => {
      world = await backOffice();
      const text = heldInvoice();
      const copy = await drop(world, 'R-1001 copy.txt', text);
      const routed = await drop(world, 'ACME GmbH/2026/R-1001.txt', text);
      const daemon = await world.start();
      await until('both held for review', () => daemon.db.fileCounts.counts().review === 2, 60_000);
      // Whichever was uploaded first is processed; the other reuses its document (the same bytes).
      const rows = [copy, routed].map((p) => daemon.db.files.current(p)!);
      expect(rows[0]!.document_id).toBe(rows[1]!.document_id);
      const outcomes = Object.fromEntries(rows.map((r) => [r.path, r.outcome as 'processed' | 'duplicate']));
      expect(Object.values(outcomes).sort()).toEqual(['duplicate', 'processed']);
      await eachFileOwnsItsRecords(
        world,
        daemon,
        [
          { path: copy, text },
          { path: routed, text },
        ],
        outcomes,
      );
    },
  );

  it(
    'two different files whose data gives one name (one held before a restart, the other after): each its own records',
    { timeout: 120_000 },
    async () => {
      world = await backOffice();
      const older = heldInvoice('Widget | 4,00\n');
      const newer = heldInvoice('Gadget | 6,00\n');
      const a = await drop(world, 'ACME GmbH/2025/R-1001.txt', older);
      let daemon = await world.start();
      await until('the first held', () => daemon.db.fileCounts.counts().review === 1, 60_000);
      await daemon.stop();
      const b = await drop(world, 'ACME GmbH/2026/R-1001.txt', newer);
      daemon = await world.start();
      await until('both held', () => daemon.db.fileCounts.counts().review === 2, 60_000);
      expect(daemon.db.files.current(a)!.document_id).not.toBe(daemon.db.files.current(b)!.document_id);
      await eachFileOwnsItsRecords(
        world,
        daemon,
        [
          { path: a, text: older },
          { path: b, text: newer },
        ],
        { [a]: 'processed', [b]: 'processed' },
      );
    },
  );

  it(
    'the same bytes dropped again at the same path once the first was archived: its own result files and daily row, the first untouched',
    { timeout: 120_000 },
    async () => {
      world = await makeWorld({ watchYaml: '    retention: { processed_days: 400, results_days: 90 }' });
      const daemon = await world.start();
      const text = invoice('A-1');
      const path = await drop(world, 'a.txt', text);
      await until('the first archived', () => daemon.db.files.current(path)?.state === 'archived');
      const first = daemon.db.files.current(path)!;
      const results = join(world.dir, 'results');
      const firstFiles = (await tree(results))
        .filter((f) => !f.startsWith('daily-'))
        .map((f) => join(results, f));
      expect(firstFiles).toHaveLength(3);
      const before = await snapshot(firstFiles);

      await drop(world, 'a.txt', text);
      await until('the second archived', () => {
        const row = daemon.db.files.current(path);
        return row !== undefined && row.id !== first.id && row.state === 'archived';
      });
      const second = daemon.db.files.current(path)!;
      expect([second.outcome, second.document_id]).toEqual(['duplicate', first.document_id]);
      expect.soft(await snapshot(firstFiles), "the first file's results").toEqual(before);
      const written = await jsonFiles<ResultJson>(results, '.json');
      expect.soft([...written.values()].map((j) => [j.source_file, j.archived_to, j.outcome]).sort()).toEqual(
        [
          [path, first.archive_path, 'processed'],
          [path, second.archive_path, 'duplicate'],
        ].sort(),
      );
      const daily = (await tree(results)).find((f) => f.startsWith('daily-'))!;
      expect
        .soft(
          (await csvRecords(join(results, daily)))
            .map((r) => [r.source_file, r.archived_to, r.outcome])
            .sort(),
        )
        .toEqual(
          [
            [path, first.archive_path, 'processed'],
            [path, second.archive_path, 'duplicate'],
          ].sort(),
        );
      await daemon.stop();
      const lines: string[] = [];
      await prune(world.config(), {
        dryRun: true,
        out: (l) => void lines.push(l),
        now: () => Date.now() + 500 * DAY,
      });
      const listed = lines.filter((l) => l.startsWith('would delete '));
      expect.soft(listed).toHaveLength(2 + 6);
      expect.soft(new Set(listed).size).toBe(listed.length);
    },
  );
});

describe('records two files shared before each file got names of its own', () => {
  it(
    'approving the file whose review.json the other wrote over leaves the other alone and says why; prune lists a shared result file once',
    { timeout: 120_000 },
    async () => {
      world = await backOffice();
      const text = heldInvoice();
      const copy = await drop(world, 'R-1001 copy.txt', text);
      const routed = await drop(world, 'ACME GmbH/2026/R-1001.txt', text);
      let daemon = await world.start();
      await until('both held for review', () => daemon.db.fileCounts.counts().review === 2, 60_000);
      await daemon.stop();
      // What an earlier docex-sync left: both rows name one base, whose review files are the routed
      // file's (written last, over the copy's).
      const review = join(world.dir, 'to-review');
      const db = new Database(join(world.dir, 'state', 'sync.db'));
      const base = (path: string) =>
        (db.prepare('SELECT result_base FROM files WHERE path = ?').get(path) as { result_base: string })
          .result_base;
      const [shared, routedOwn] = [base(copy), base(routed)];
      for (const suffix of ['.json', '.fields.csv', '.lines.csv', '.review.json']) {
        await rm(join(review, `${shared}${suffix}`));
        await rename(join(review, `${routedOwn}${suffix}`), join(review, `${shared}${suffix}`));
      }
      db.prepare('UPDATE files SET result_base = ? WHERE path = ?').run(shared, routed);
      db.close();
      const routedFiles = (await tree(review))
        .filter((f) => f.startsWith(`${shared}.`) || f.endsWith('R-1001 (2).txt') || f.endsWith('R-1001.txt'))
        .map((f) => join(review, f));
      const before = await snapshot(routedFiles);

      daemon = await world.start();
      const copyRow = daemon.db.files.current(copy)!;
      const routedRow = daemon.db.files.current(routed)!;
      await approveOnPage(daemon, copyRow.id);
      await until('the copy held back with the reason', () => daemon.db.files.get(copyRow.id)!.blocked);
      expect(daemon.db.files.get(copyRow.id)!.blocked).toContain(
        `is the review of another file (${routed}), not of ${copy}: it is left alone`,
      );
      expect(await snapshot(routedFiles)).toEqual(before);

      await approveOnPage(daemon, routedRow.id);
      await until(
        'the routed file archived',
        () => daemon.db.files.get(routedRow.id)!.state === 'archived',
        30_000,
      );
      const json = JSON.parse(
        await readFile(join(world.dir, 'results', `${shared}.json`), 'utf8'),
      ) as ResultJson;
      expect([json.source_file, json.archived_to]).toEqual([
        routed,
        daemon.db.files.get(routedRow.id)!.archive_path,
      ]);
      // The copy still waits, and still says why: its review files are gone with the other's.
      expect(daemon.db.files.get(copyRow.id)!.state).toBe('done');
      await until('the copy says its review is gone', () =>
        daemon.db.files.get(copyRow.id)!.blocked?.includes("are not this file's results"),
      );
      await daemon.stop();

      // Two archived rows naming one result set (as an earlier docex-sync left them): listed once.
      const db2 = new Database(join(world.dir, 'state', 'sync.db'));
      db2.prepare(`UPDATE files SET state = 'archived', next_at = ? WHERE path = ?`).run(NEVER, copy);
      db2.close();
      const lines: string[] = [];
      await prune(world.config(), {
        dryRun: true,
        out: (l) => void lines.push(l),
        now: () => Date.now() + 100 * DAY,
      });
      const listed = lines.filter((l) => l.startsWith('would delete '));
      expect(listed.filter((l) => l.includes(`${shared}.json `))).toHaveLength(1);
      expect(new Set(listed).size).toBe(listed.length);
    },
  );
});

describe('failed files', () => {
  it(
    'two failed files of one name, the second gone before its upload: each keeps its own failure report',
    { timeout: 120_000 },
    async () => {
      world = await makeWorld({ watchYaml: '    retention: { failed_days: 60 }' });
      // Long enough a wait for stability that the second file is surely removed within it.
      await writeFile(
        world.configFile,
        (await readFile(world.configFile, 'utf8')).replace('stable_ms: 200', 'stable_ms: 3000'),
      );
      const daemon = await world.start();
      const path = await drop(world, 'x.txt', ''); // empty: fails without a request
      await until(
        'the first failed and reported',
        () => daemon.db.fileCounts.lastFailed(5)[0]?.finalized === 1,
        30_000,
      );
      await drop(world, 'x.txt', invoice('X-2'));
      await until('the second recorded', () => daemon.db.files.current(path)?.state === 'discovered');
      await rm(path);
      await until(
        'both failed and reported',
        () => daemon.db.fileCounts.lastFailed(5).filter((r) => r.finalized === 1).length === 2,
        30_000,
      );
      const [second, first] = daemon.db.fileCounts.lastFailed(5);
      const reports = await jsonFiles<{ reason: string }>(join(world.dir, 'failed'), '.error.json');
      expect
        .soft([...reports.values()].map((r) => r.reason).sort())
        .toEqual([first!.reason, second!.reason].sort());
      for (const row of [first!, second!])
        expect.soft(reports.get(`${row.path}.error.json`)?.reason, row.path).toBe(row.reason);
      await daemon.stop();
      const lines: string[] = [];
      await prune(world.config(), {
        dryRun: true,
        out: (l) => void lines.push(l),
        now: () => Date.now() + 100 * DAY,
      });
      const listed = lines.filter((l) => l.startsWith('would delete '));
      expect.soft(listed).toHaveLength(3); // the first's original and report, the second's report
      expect.soft(new Set(listed).size).toBe(listed.length);
    },
  );
});
