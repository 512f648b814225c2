/**
 * What waits for review and what is held are counted wherever the counts are said: the page's "Now"
 * and "Last hour" lines (and /api/status), `docex-sync status` (text and --json), the progress
 * log line and /metrics. Files really waiting (a review rule fired) and really held (no route).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { summarize } from '../../../daemon/src/jobs/progress.ts';
import type { StatusSnapshot } from '../../../daemon/src/status/read-model.ts';
import { calibrate, runCli, stopCliChildren, until, type World } from '../helpers.ts';
import { reviewWorld } from '../review-helpers.ts';
import { call } from '../../support/http-call.ts';

let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});
await calibrate();

const portOf = (daemon: RunningDaemon) => (daemon.http!.address() as AddressInfo).port;
/** Held by the watch's min_confidence (Total not in the text: confidence 0.1). */
const low = (n: number) => `Invoice number: L-${n}\nWidget | 4,00\n`;

/** Two documents waiting for review and one file held (its subfolder maps to no route). */
async function waitingAndHeld() {
  world = await reviewWorld({ extra: 'http: { port: 0 }\n' });
  const inbox = join(world.dir, 'inbox');
  await mkdir(join(inbox, 'Misc'));
  await writeFile(join(inbox, 'low-1.txt'), low(1));
  await writeFile(join(inbox, 'low-2.txt'), low(2));
  await writeFile(join(inbox, 'Misc', 'stray.txt'), low(3));
  const daemon = await world.start();
  await until('two waiting for review, one held', () => {
    const counts = daemon.db.fileCounts.counts();
    return counts.review === 2 && counts.held === 1;
  });
  return { daemon, port: portOf(daemon) };
}

describe('counts of what waits for review and what is held', () => {
  it('on the page, /api/status, docex-sync status (text and --json), the progress line and /metrics', async () => {
    const { daemon, port } = await waitingAndHeld();

    const api = (await call(port, '/api/status')).json() as StatusSnapshot;
    expect(api.review.total).toBe(2);
    expect(api.held.total).toBe(1);
    expect(api.throughput.last_hour).toEqual({ processed: 0, failed: 0, review: 2 });
    expect(api.throughput.per_10_minutes[0]).toMatchObject({ processed: 0, failed: 0, review: 2 });

    const page = (await call(port, '/')).text;
    expect(page).toContain('<span data-testid="review-total">2</span> waiting for review');
    expect(page).toContain('<span data-testid="held-total">1</span> held');
    expect(page).toContain('<strong data-testid="hour-review">2</strong> to review');
    expect(page).toContain('Per 10 minutes, newest first: 0 processed, 2 to review;');

    const text = runCli(['status', '--config', world!.configFile]);
    expect(await text.exited).toBe(1);
    expect(text.stdout()).toContain(
      'Now: 0 in the queue, 2 waiting for review, 1 held, 0 failed, 0 finished (archived)',
    );
    expect(text.stdout()).toContain('Last hour: 0 processed, 2 to review, 0 failed');

    const json = runCli(['status', '--config', world!.configFile, '--json']);
    expect(await json.exited).toBe(1);
    const cli = JSON.parse(json.stdout()) as StatusSnapshot & { schema: string };
    expect(cli.schema).toBe('docex-sync.status/1');
    expect(cli.review.total).toBe(2);
    expect(cli.held.total).toBe(1);
    expect(cli.throughput.last_hour).toEqual({ processed: 0, failed: 0, review: 2 });

    // The progress line's fields, from the daemon's own counts.
    expect(summarize(daemon.db.fileCounts.counts(), 0, 30_000)).toMatchObject({
      done: 0,
      failed: 0,
      review: 2,
      held: 1,
    });

    const metrics = (await call(port, '/metrics')).text;
    expect(metrics).toContain('docex_sync_files{state="review"} 2');
    expect(metrics).toContain('docex_sync_files{state="held"} 1');
  });
});
