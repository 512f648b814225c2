/**
 * Nothing lost, nothing twice, when the daemon dies between moving a held or approved document's
 * files and recording it: the same rule as archiving (the files move first, the DB says so after; a
 * replay finds the move done). Each test runs the real flow up to a point, stops, and puts the DB
 * and the files where a crash at the injected point would have left them, then starts again.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, link, readFile, rename, rm } from 'node:fs/promises';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { approveReviewed } from '../../../daemon/src/actions/approve.ts';
import { parseCsv } from '../../../daemon/src/outputs/results.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';
import { until, type World } from '../helpers.ts';
import { reviewWorld, tree } from '../review-helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const LOW = 'Invoice number: L-1\nWidget | 4,00\n';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');

/** Runs until low.txt waits for review, stops, and returns its row id. */
async function heldThenStopped(w: World): Promise<number> {
  await writeFile(join(w.dir, 'inbox', 'low.txt'), LOW);
  const daemon = await w.start();
  await until('held for review', () => daemon.db.fileCounts.counts().review === 1);
  const id = daemon.db.fileCounts.inReview(1)[0]!.id;
  await daemon.stop();
  return id;
}

/** The DB as a crash before the held-for-review commit left it: done, its place in review_dir recorded. */
function back(w: World, id: number, changes: Record<string, unknown>) {
  const db = new StateDb(w.config().state_db);
  db.files.update(id, changes, Date.now());
  db.close();
}

const reviewCsvRows = async (w: World) => {
  const dir = join(w.dir, 'review');
  const name = (await tree(dir)).find((f) => f.startsWith('review-'))!;
  return parseCsv(await readFile(join(dir, name), 'utf8'), ',').slice(1);
};

describe('the review queue after a crash', () => {
  it('between the move into review_dir and the DB update: held once, the original in one place, one CSV row, no second upload', async () => {
    world = await reviewWorld();
    const id = await heldThenStopped(world);
    back(world, id, { state: 'done', next_at: 0 });
    const daemon = await world.start();
    await until('held again', () => daemon.db.files.get(id)!.state === 'review');
    expect(await tree(join(world.dir, 'inbox'))).toEqual([]);
    expect((await tree(join(world.dir, 'review'))).filter((f) => f === 'low.txt')).toHaveLength(1);
    expect(await reviewCsvRows(world)).toHaveLength(1);
    expect(world.emulator.stats().uploadsByHash[sha(LOW)]).toBe(1);
  });

  it('after the link into review_dir, before the source was removed: the source goes, the copy stays', async () => {
    world = await reviewWorld();
    const id = await heldThenStopped(world);
    // Both names of one file, as moveTo leaves them between link() and rm().
    await link(join(world.dir, 'review', 'low.txt'), join(world.dir, 'inbox', 'low.txt'));
    back(world, id, { state: 'done', next_at: 0 });
    const daemon = await world.start();
    await until('held again', () => daemon.db.files.get(id)!.state === 'review');
    expect(await tree(join(world.dir, 'inbox'))).toEqual([]);
    expect(await readFile(join(world.dir, 'review', 'low.txt'), 'utf8')).toBe(LOW);
    expect(world.emulator.stats().uploadsByHash[sha(LOW)]).toBe(1);
  });

  it('a different file where the original was to go is never overwritten: the file stays, the reason is shown', async () => {
    world = await reviewWorld();
    const id = await heldThenStopped(world);
    // The original back in the inbox (the move never happened) and a stranger at its place in review_dir.
    await rename(join(world.dir, 'review', 'low.txt'), join(world.dir, 'inbox', 'low.txt'));
    await writeFile(join(world.dir, 'review', 'low.txt'), 'someone else’s file\n');
    back(world, id, { state: 'done', next_at: 0 });
    const daemon = await world.start();
    await until('blocked', () => daemon.db.files.get(id)!.blocked !== null);
    expect(daemon.db.files.get(id)!.blocked).toBe(
      `could not archive the source file: ${join(world.dir, 'review', 'low.txt')} is taken by another file; the original stays at ${join(world.dir, 'inbox', 'low.txt')}`,
    );
    expect(await readFile(join(world.dir, 'review', 'low.txt'), 'utf8')).toBe('someone else’s file\n');
    expect(await readFile(join(world.dir, 'inbox', 'low.txt'), 'utf8')).toBe(LOW);
  });

  it('approved, then cut short after the results reached output, before the original moved: archived once, results once', async () => {
    world = await reviewWorld();
    const id = await heldThenStopped(world);
    const db = new StateDb(world.config().state_db);
    approveReviewed({ db, config: world.config() }, [id]);
    const row = db.files.get(id)!;
    db.close();
    // What release had done before the crash: results written into output (copied here), review copies
    // and review.json removed. The original still waits in review_dir; the DB says done, approved.
    const base = `low.doc-${row.document_id}`;
    for (const suffix of ['.json', '.fields.csv', '.lines.csv']) {
      await copyFile(
        join(world.dir, 'review', `${base}${suffix}`),
        join(world.dir, 'results', `${base}${suffix}`),
      );
      await rm(join(world.dir, 'review', `${base}${suffix}`));
    }
    await rm(join(world.dir, 'review', `${base}.review.json`));
    const daemon = await world.start();
    await until('archived', () => daemon.db.files.get(id)!.state === 'archived');
    expect(await tree(join(world.dir, 'processed'))).toEqual(['low.txt']);
    expect((await tree(join(world.dir, 'review'))).filter((f) => !f.startsWith('review-'))).toEqual([]);
    const results = await tree(join(world.dir, 'results'));
    expect(results.filter((f) => f.startsWith(base))).toHaveLength(3);
    const json = JSON.parse(await readFile(join(world.dir, 'results', `${base}.json`), 'utf8'));
    expect(json.archived_to).toBe(join(world.dir, 'processed', 'low.txt'));
  });

  it('approved, then cut short before anything moved: the release runs whole once, one row in the daily CSV', async () => {
    world = await reviewWorld();
    const id = await heldThenStopped(world);
    const db = new StateDb(world.config().state_db);
    approveReviewed({ db, config: world.config() }, [id]);
    const documentId = db.files.get(id)!.document_id;
    db.close();
    let daemon = await world.start();
    await until('archived', () => daemon.db.files.get(id)!.state === 'archived');
    await daemon.stop();
    // Replayed as if the archived commit had been lost: the release finds its work done.
    back(world, id, { state: 'done', next_at: 0 });
    daemon = await world.start();
    await until('archived again', () => daemon.db.files.get(id)!.state === 'archived');
    expect(await tree(join(world.dir, 'processed'))).toEqual(['low.txt']);
    const daily = (await tree(join(world.dir, 'results'))).find((f) => f.startsWith('daily-'))!;
    const rows = parseCsv(await readFile(join(world.dir, 'results', daily), 'utf8'), ',').slice(1);
    expect(rows.filter((r) => r[0] === String(documentId))).toHaveLength(1);
    expect(existsSync(join(world.dir, 'inbox', 'low.txt'))).toBe(false);
  });
});
