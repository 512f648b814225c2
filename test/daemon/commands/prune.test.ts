/**
 * Retention (`docex-sync prune`, in-process, and the daemon's schedule): files processed and failed
 * against the emulator, then pruned with a clock moved on. It deletes only what the state DB records
 * as moved or written by docex-sync, while unchanged; foreign files in the same folders survive
 * whatever their age; a dry run deletes and records nothing.
 */
import { mkdir, readFile, rename, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { prune, nodePruneFs, type PruneFs } from '../../../daemon/src/jobs/retention.ts';
import { approveReviewed } from '../../../daemon/src/actions/approve.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';
import { filesUnder, invoice, makeWorld, stateOf, syncInProcess, until, type World } from '../helpers.ts';

const DAY = 86_400_000;
let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const RETENTION = [
  "    archive_name: '{yyyy}/{MM}/{name}{ext}'",
  '    retention: { processed_days: 30, failed_days: 7, results_days: 90 }',
].join('\n');

/** Two processed files and one failed (an empty file fails locally), then the daemon stopped. */
async function processedWorld(extra = '') {
  world = await makeWorld({ watchYaml: `${RETENTION}\n${extra}` });
  const daemon = await world.start();
  const inbox = join(world.dir, 'inbox');
  await writeFile(join(inbox, 'a.txt'), invoice('A-1'));
  await writeFile(join(inbox, 'b.txt'), invoice('B-2'));
  await writeFile(join(inbox, 'empty.txt'), '');
  const w = world;
  await until('a and b archived, empty failed', () =>
    stateOf(w, 'a.txt') === 'archived' &&
    stateOf(w, 'b.txt') === 'archived' &&
    stateOf(w, 'empty.txt') === 'failed'
      ? daemon.db.files.inState('failed').every((r) => r.finalized === 1)
      : false,
  );
  await daemon.stop();
  return world;
}

function capture() {
  const lines: string[] = [];
  return { lines, out: (line: string) => void lines.push(line) };
}

const pruneAt = (w: World, days: number, dryRun: boolean, fs?: PruneFs) => {
  const printed = capture();
  return prune(w.config(), { dryRun, out: printed.out, now: () => Date.now() + days * DAY, fs }).then(
    (report) => ({ report, lines: printed.lines }),
  );
};

describe('docex-sync prune', () => {
  it('a dry run prints each file it would delete with its bytes, and deletes and records nothing', async () => {
    const w = await processedWorld();
    const results = join(w.dir, 'results');
    const processed = join(w.dir, 'processed');
    const failed = join(w.dir, 'failed');
    const before = {
      results: await filesUnder(results),
      processed: await filesUnder(processed),
      failed: await filesUnder(failed),
    };
    expect(before.failed).toEqual(['empty.txt', 'empty.txt.error.json']);
    expect(before.processed).toHaveLength(2);

    // Within every period: nothing.
    const early = await pruneAt(w, 6, true);
    expect(early.lines).toEqual(['Dry run: 0 file(s), 0 bytes, would be deleted. Nothing was deleted.']);

    // 100 days on: all of it, each line naming the file, its bytes and the period.
    const { lines } = await pruneAt(w, 100, true);
    const named = lines.filter((l) => l.startsWith('would delete '));
    const paths = named.map((l) => /^would delete (.+?) \(/.exec(l)![1]!);
    expect(paths.sort()).toEqual(
      [
        ...before.processed.map((p) => join(processed, p)),
        ...before.failed.map((p) => join(failed, p)),
        ...before.results.filter((p) => !p.startsWith('daily-')).map((p) => join(results, p)),
      ].sort(),
    );
    let total = 0;
    for (const line of named) {
      const [, path, size] = /^would delete (.+?) \(([\d,]+) bytes; /.exec(line)!;
      expect(Number(size!.replace(/,/g, ''))).toBe((await stat(path!)).size);
      total += (await stat(path!)).size;
    }
    expect(named.find((l) => l.includes(`${processed}/`))).toMatch(
      /\(\d+ bytes; processed original, recorded \d{4}-\d\d-\d\d, 100 days ago; retention\.processed_days: 30\)$/,
    );
    expect(lines.at(-1)).toBe(
      `Dry run: ${named.length} file(s), ${total.toLocaleString('en-US')} bytes, would be deleted. Nothing was deleted.`,
    );
    // Nothing deleted, nothing recorded.
    expect({
      results: await filesUnder(results),
      processed: await filesUnder(processed),
      failed: await filesUnder(failed),
    }).toEqual(before);
    const db = new StateDb(w.config().state_db);
    expect(db.retention.prunedTotals()).toEqual({ deleted: 0, bytes: 0, kept: 0, last_at: null });
    db.close();
  });

  it('deletes what is due, leaves foreign files (however old) and the daily CSV, keeps a replaced original, and records it all once', async () => {
    const w = await processedWorld();
    const results = join(w.dir, 'results');
    const processed = join(w.dir, 'processed');
    const failed = join(w.dir, 'failed');
    const longAgo = new Date('2001-01-01');
    // Foreign files beside ours, much older than any period.
    const foreign = [
      join(processed, 'scanned-by-hand.pdf'),
      join(processed, new Date().getFullYear().toString(), 'note.txt'),
      join(failed, 'someone-elses.txt'),
      join(failed, 'someone-elses.txt.error.json'),
      join(results, 'report.json'),
    ];
    for (const f of foreign) {
      await mkdir(join(f, '..'), { recursive: true });
      await writeFile(f, '{"not": "ours"}');
      await utimes(f, longAgo, longAgo);
    }
    // b.txt's archived original replaced by someone (same name, other bytes).
    const [aArchived, bArchived] = (await filesUnder(processed))
      .filter((p) => p.endsWith('a.txt') || p.endsWith('b.txt'))
      .map((p) => join(processed, p));
    await writeFile(bArchived!, 'replaced by the accountant');
    // a.txt's mtime put back by years (a copy, a backup restore): its age still counts from the DB, and
    // its hash shows it is still ours.
    await utimes(aArchived!, longAgo, longAgo);
    const early = await pruneAt(w, 6, false);
    expect(early.lines).toEqual(['Pruned: 0 file(s) deleted, 0 bytes.']);
    expect(await filesUnder(processed)).toContain(relative(processed, aArchived!));

    // 10 days on: the failed file and its report only (failed_days: 7).
    const tenDays = await pruneAt(w, 10, false);
    expect(tenDays.lines.filter((l) => l.startsWith('deleted '))).toEqual([
      expect.stringMatching(new RegExp(`^deleted ${join(failed, 'empty.txt')} \\(0 bytes; failed original`)),
      expect.stringMatching(
        new RegExp(`^deleted ${join(failed, 'empty.txt.error.json')} \\(\\d+ bytes; failed original`),
      ),
    ]);

    // 100 days on: the rest.
    const { lines } = await pruneAt(w, 100, false);
    expect(lines).toContain(
      `kept ${bArchived}: its size (26 bytes) differs from what docex-sync recorded (${invoice('B-2').length} bytes): someone replaced it; retention never deletes it`,
    );
    expect(await filesUnder(processed)).toEqual(
      [relative(processed, bArchived!), 'scanned-by-hand.pdf', relative(processed, foreign[1]!)].sort(),
    );
    expect(await filesUnder(failed)).toEqual(['someone-elses.txt', 'someone-elses.txt.error.json']);
    const left = await filesUnder(results);
    expect(left.filter((p) => !p.startsWith('daily-'))).toEqual(['report.json']);
    expect(left.some((p) => p.startsWith('daily-'))).toBe(true);
    for (const f of foreign) expect(await readFile(f, 'utf8')).toBe('{"not": "ours"}');

    // Recorded: a second prune has nothing left to do and says nothing again about the kept file.
    const again = await pruneAt(w, 200, false);
    expect(again.lines).toEqual(['Pruned: 0 file(s) deleted, 0 bytes.']);
    const db = new StateDb(w.config().state_db);
    const totals = db.retention.prunedTotals();
    db.close();
    expect(totals.kept).toBe(1);
    expect(totals.deleted).toBe(2 + 1 + 3 * 2); // failed + report, a's original, 3 result files of each
  });

  it('a result file rewritten by someone else is kept; a file that cannot be deleted is tried again', async () => {
    const w = await processedWorld();
    const results = join(w.dir, 'results');
    const [json] = (await filesUnder(results)).filter((p) => p.startsWith('a.doc-') && p.endsWith('.json'));
    await writeFile(join(results, json!), JSON.stringify({ document: { document_id: 999_999 } }));
    const refusing: PruneFs = {
      ...nodePruneFs,
      rm: (path) =>
        path.endsWith('.fields.csv')
          ? Promise.reject(
              Object.assign(new Error(`EACCES: permission denied, unlink '${path}'`), { code: 'EACCES' }),
            )
          : nodePruneFs.rm(path),
    };
    const first = await pruneAt(w, 100, false, refusing);
    expect(first.lines).toContain(
      `kept ${join(results, json!)}: its content does not name document ${/doc-(\d+)/.exec(json!)![1]}: it is not the result docex-sync wrote there (${json}); retention never deletes it`,
    );
    const refused = first.lines.filter((l) => l.startsWith('not deleted '));
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatch(
      /^not deleted .+\.fields\.csv: EACCES: permission denied, unlink .+; it is tried again on the next prune$/,
    );
    expect(first.report.entries.some((e) => e.outcome === 'error')).toBe(true);
    expect((await filesUnder(results)).filter((p) => p.endsWith('.fields.csv'))).toHaveLength(2);

    const second = await pruneAt(w, 100, false);
    expect(second.lines.filter((l) => l.startsWith('deleted ')).map((l) => l.split(' ')[1])).toEqual([
      expect.stringMatching(/\.fields\.csv$/),
      expect.stringMatching(/\.fields\.csv$/),
    ]);
    expect((await filesUnder(results)).filter((p) => !p.startsWith('daily-'))).toEqual([json]);
  });

  it('without retention on any watch it says so; without a state DB it says that', async () => {
    world = await makeWorld();
    const printed = capture();
    await prune(world.config(), { dryRun: true, out: printed.out });
    expect(printed.lines).toEqual([
      `Nothing to prune: there is no state DB yet at ${world.config().state_db}.`,
    ]);
    new StateDb(world.config().state_db).close();
    const again = capture();
    await prune(world.config(), { dryRun: true, out: again.out });
    expect(again.lines).toEqual([
      'No watch has a retention section: nothing to prune (set retention.processed_days, failed_days or results_days on a watch).',
    ]);
  });

  it('processed_days with on_success other than move is refused by the config', async () => {
    world = await makeWorld({ watchYaml: '    on_success: keep\n    retention: { processed_days: 3 }' });
    expect(() => world!.config()).toThrow(
      /watch\[0\]\.retention\.processed_days: only with on_success: move \(with "keep", docex-sync keeps no original to prune\); remove it/,
    );
  });
});

describe('where the original went', () => {
  it('an original moved to a free name ("a (2).txt", the name was taken) is pruned there, by the path the DB recorded', async () => {
    world = await makeWorld({ watchYaml: RETENTION });
    const w = world;
    const daemon = await w.start();
    const inbox = join(w.dir, 'inbox');
    await writeFile(join(inbox, 'a.txt'), invoice('FIRST-1'));
    await until('the first a.txt archived', () => daemon.db.fileCounts.counts().archived === 1);
    await writeFile(join(inbox, 'a.txt'), invoice('SECOND-2'));
    await until('the second a.txt archived', () => daemon.db.fileCounts.counts().archived === 2);
    const paths = daemon.db.files.inState('archived').map((r) => r.archive_path);
    await daemon.stop();
    expect(paths.map((p) => p!.replace(/^.*\//, ''))).toEqual(['a.txt', 'a (2).txt']);
    const processed = join(w.dir, 'processed');
    // Someone put a file of their own where the first one was.
    await writeFile(paths[0]!, 'mine now');
    const { lines } = await pruneAt(w, 100, false);
    expect(lines.filter((l) => l.startsWith('deleted ') && l.includes('processed original'))).toEqual([
      expect.stringContaining(`deleted ${paths[1]} (`),
    ]);
    expect(await filesUnder(processed)).toEqual([relative(processed, paths[0]!)]);
  });
});

describe('never outside the configured folders', () => {
  it('an original whose folder was replaced by a link to elsewhere is kept, and what is elsewhere survives', async () => {
    const w = await processedWorld();
    const processed = join(w.dir, 'processed');
    const year = String(new Date().getFullYear());
    const elsewhere = join(w.dir, 'elsewhere');
    await mkdir(elsewhere);
    await rename(join(processed, year), join(elsewhere, year));
    await symlink(join(elsewhere, year), join(processed, year));
    const before = await filesUnder(elsewhere);
    expect(before).toHaveLength(2);
    const { lines } = await pruneAt(w, 100, false);
    const kept = lines.filter((l) => l.startsWith('kept '));
    expect(kept).toHaveLength(2);
    for (const line of kept)
      expect(line).toMatch(
        new RegExp(
          `^kept ${processed}/${year}/.+: it lies outside the configured folder ${processed} \\(the config changed since, or a folder on the way is a link\\); retention never deletes it$`,
        ),
      );
    expect(await filesUnder(elsewhere)).toEqual(before);
  });
});

describe('a document waiting for review', () => {
  it('is never pruned nor settled while it waits, however old; once approved, its own period counts', async () => {
    world = await makeWorld({
      watchYaml: `${RETENTION}\n    review_dir: ./review\n    review: { fraud: { max_score: 0.9 } }`,
    });
    const daemon = await world.start();
    const inbox = join(world.dir, 'inbox');
    await writeFile(join(inbox, 'a.txt'), invoice('A-1'));
    await writeFile(join(inbox, 'suspect.txt'), `${invoice('S-1')}Fraud: high\n`); // the emulator's score 0.95
    const w = world;
    await until(
      'a archived, suspect waiting for review',
      () => stateOf(w, 'a.txt') === 'archived' && stateOf(w, 'suspect.txt') === 'review',
    );
    await daemon.stop();
    const review = join(w.dir, 'review');
    const waiting = await filesUnder(review);
    expect(waiting.some((p) => p.endsWith('suspect.txt'))).toBe(true);

    const { lines } = await pruneAt(w, 1000, false);
    expect(lines.some((l) => l.includes('suspect') || l.includes('S-1'))).toBe(false);
    expect(lines.filter((l) => l.startsWith('deleted ')).length).toBeGreaterThan(0); // a.txt's files
    expect(await filesUnder(review)).toEqual(waiting);
    expect(stateOf(w, 'suspect.txt')).toBe('review');

    // Approved, it is archived like any other, and pruned once its own period is over: the prune
    // above settled nothing of it.
    const again = await w.start();
    approveReviewed({ db: again.db, config: w.config(), wake: () => again.pipeline.wake() }, 'all');
    await until('suspect archived', () => stateOf(w, 'suspect.txt') === 'archived');
    await again.stop();
    const later = await pruneAt(w, 1000, false);
    expect(later.lines.filter((l) => l.startsWith('deleted ') && l.includes('processed original'))).toEqual([
      expect.stringContaining(join(w.dir, 'processed')),
    ]);
  });
});

describe('the command line', () => {
  it('docex-sync prune --dry-run prints the report on stdout and exits 0', async () => {
    const w = await processedWorld();
    const { code, stdout, stderr } = await syncInProcess(['prune', '--config', w.configFile, '--dry-run']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toBe('Dry run: 0 file(s), 0 bytes, would be deleted. Nothing was deleted.\n');
  });
});

describe('the daemon prunes on its schedule', () => {
  it('a running daemon deletes what is due at its retention.schedule, and logs the totals', async () => {
    const w = await processedWorld().then(async (w) => {
      const yaml = await readFile(w.configFile, 'utf8');
      await writeFile(
        w.configFile,
        yaml.replace('results_days: 90 }', 'results_days: 90, schedule: "* * * * * *" }'),
      );
      return w;
    });
    const processed = join(w.dir, 'processed');
    expect(await filesUnder(processed)).toHaveLength(2);
    // The daemon's clock 40 days on: the processed originals and the failed file are due, results not.
    const daemon = await w.start({ daemon: { wallClock: () => Date.now() + 40 * DAY } });
    await until('the processed originals pruned', async () => (await filesUnder(processed)).length === 0);
    await until('the totals logged', () =>
      w.logs.some((l) => l.includes('retention: pruned') && l.includes('"files":4')),
    );
    expect(await filesUnder(join(w.dir, 'failed'))).toEqual([]);
    expect((await filesUnder(join(w.dir, 'results'))).filter((p) => p.endsWith('.json'))).toHaveLength(2);
    await daemon.stop();
  });
});
