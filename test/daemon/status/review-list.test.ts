/**
 * `docex-sync review list` says what waits for review and why, and `approve` of a name that names
 * nothing waiting says so and exits 2 (the usage exit code) while the other names are approved.
 * Against a running daemon with documents a review rule really held.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { calibrate, runCli, stopCliChildren, until, type World } from '../helpers.ts';
import { reviewWorld } from '../review-helpers.ts';

let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});
await calibrate();

/** Held by the watch's min_confidence (Total not in the text: confidence 0.1). */
const low = (n: number) => `Invoice number: L-${n}\nWidget | 4,00\n`;

/** Two documents waiting for review beside a running daemon. */
async function twoWaiting() {
  world = await reviewWorld();
  await writeFile(join(world.dir, 'inbox', 'low-1.txt'), low(1));
  await writeFile(join(world.dir, 'inbox', 'low-2.txt'), low(2));
  const daemon = await world.start();
  await until('two waiting for review', () => daemon.db.fileCounts.counts().review === 2);
  return { daemon };
}

describe('docex-sync review list, and approve of a name that names nothing', () => {
  it('lists what waits with its reasons; approve says the unknown name, exits 2 and approves the others', async () => {
    const { daemon } = await twoWaiting();
    const dir = world!.dir;
    const since = (name: string) =>
      new Date(
        daemon.db.fileCounts.inReview(10).find((r) => r.path.endsWith(name))!.updated_at,
      ).toISOString();
    const [first, second] = daemon.db.fileCounts
      .inReview(10)
      .map((r) => r.path.slice(join(dir, 'inbox').length + 1));

    const list = runCli(['review', 'list', '--config', world!.configFile]);
    expect(await list.exited).toBe(0);
    expect(list.stdout()).toBe(
      [
        '2 document(s) wait for review, oldest first:',
        ...[first!, second!].flatMap((name) => [
          join(dir, 'inbox', name),
          `  watch ${join(dir, 'inbox')}; waiting since ${since(name)} in ${join(dir, 'review', name)}`,
          '  held by: Total: confidence 0.1 is below 0.8',
        ]),
        'Approve them with: docex-sync approve --config FILE NAME_OR_PATTERN ... (or --all)',
        '',
      ].join('\n'),
    );
    const json = runCli(['review', 'list', '--config', world!.configFile, '--json']);
    expect(await json.exited).toBe(0);
    const listed = JSON.parse(json.stdout());
    expect(listed).toMatchObject({ schema: 'docex-sync.review-list/1', total: 2 });
    expect(listed.files[0]).toEqual({
      id: expect.any(Number),
      file: join(dir, 'inbox', first!),
      watch: join(dir, 'inbox'),
      route: null,
      original: join(dir, 'review', first!),
      document_id: expect.any(Number),
      reasons: ['Total: confidence 0.1 is below 0.8'],
      rules: [{ rule: 'minConfidence', field: 'Total', value: 0, found: 0.1, threshold: 0.8 }],
      since: since(first!),
    });

    const approve = runCli(['approve', '--config', world!.configFile, 'nosuch.pdf', 'low-1.txt']);
    expect(await approve.exited).toBe(2);
    expect(approve.output()).toContain(
      'docex-sync approve: nosuch.pdf: no file waiting for review has this name, path or pattern (docex-sync review list shows them)\n',
    );
    expect(approve.stdout()).toBe(
      '1 file(s) approved: the running docex-sync moves them to the processed and output folders now.\n',
    );
    await until('approved and archived', () => daemon.db.fileCounts.counts().archived === 1);
    expect(daemon.db.fileCounts.inReview(10).map((r) => r.path)).toEqual([join(dir, 'inbox', 'low-2.txt')]);
  });
});
