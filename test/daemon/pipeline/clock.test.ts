/**
 * The wall clock stepped an hour back or forward while docex-sync runs (NTP, a restored VM, a
 * `date -s`): scheduling follows the monotonic clock, so no file waits for the size of the step and
 * the files due at once do not burst above the rate limit. The test steps the daemon's wall clock.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { steadyClock } from '../../../daemon/src/common/clock.ts';
import { createNodeClient } from '@docex/shared/node';
import { invoice, makeWorld, SECRET, until, type World } from '../helpers.ts';

const HOUR = 3_600_000;
let world: World;
afterEach(async () => world?.cleanup());

/** A wall clock the test steps; otherwise the machine's. */
function steppedWall() {
  let step = 0;
  return { now: () => Date.now() + step, stepBy: (ms: number) => void (step += ms) };
}

describe('the scheduling clock', () => {
  it('follows the monotonic clock from the wall time at start, whatever the wall clock does after', () => {
    let wall = 1_000_000;
    let mono = 50.7;
    const now = steadyClock(
      () => wall,
      () => mono,
    );
    expect(now()).toBe(1_000_000);
    wall -= HOUR;
    mono += 1000;
    expect(now()).toBe(1_001_000);
    wall += 2 * HOUR;
    mono += 250.4;
    expect(now()).toBe(1_001_250);
  });
});

describe('a wall-clock step while files are on their way', () => {
  it('an hour back: a task being polled and a file dropped after the step are done within seconds', async () => {
    world = await makeWorld({ taskDelayMs: 800 });
    const wall = steppedWall();
    const daemon = await world.start({ daemon: { wallClock: wall.now } });
    await writeFile(join(world.dir, 'inbox', 'before.txt'), invoice('C-1'));
    await until('uploaded, its task in progress', () => daemon.db.fileCounts.counts().uploaded === 1);
    wall.stepBy(-HOUR);
    await writeFile(join(world.dir, 'inbox', 'after.txt'), invoice('C-2'));
    // The default limit of until (15 s) is far below the hour a wall-clock scheduler would wait.
    await until('both archived', () => daemon.db.fileCounts.counts().archived === 2);
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
  });

  it('an hour forward: files waiting for stability are not taken early, and the uploads keep to the rate limit', async () => {
    // The per-file config (batch_files: 1, document_data: always): an upload, a poll and a data read
    // per file at least, so the rate limit below is checked under the most requests a file makes.
    world = await makeWorld({ watchYaml: '    document_data: always' });
    const config = await readFile(world.configFile, 'utf8');
    await writeFile(
      world.configFile,
      config
        .replace('stable_ms: 200', 'stable_ms: 1500')
        .replace('max_attempts: 20 }', 'max_attempts: 20, batch_files: 1 }'),
    );
    // As docex-sync run makes it from api.requests_per_second: 4.
    const client = createNodeClient({
      baseUrl: world.emulator.url,
      apiKey: SECRET,
      intervalCap: 4,
      intervalMs: 1000,
    });
    const wall = steppedWall();
    const daemon = await world.start({ client, daemon: { wallClock: wall.now } });
    world.emulator.resetStats();
    const names = Array.from({ length: 12 }, (_, i) => `f${i}.txt`);
    // Before the files exist: no upload can come sooner than 1.5 s (stable_ms) after this.
    const writtenFrom = performance.now();
    for (const name of names) await writeFile(join(world.dir, 'inbox', name), invoice(name));
    await until('all discovered', () => daemon.db.fileCounts.counts().discovered === names.length);
    wall.stepBy(HOUR);
    // Something wakes the scheduler right after the step (a new file): it must still wait.
    await writeFile(join(world.dir, 'inbox', 'waker.txt'), invoice('waker'));
    names.push('waker.txt');
    await until('the first upload', () => (world.emulator.stats().requestsByOperation.upload_file ?? 0) > 0);
    // Not before its 1.5 s of stability: a wall-clock scheduler would take them at once.
    expect(performance.now() - writtenFrom).toBeGreaterThanOrEqual(1500);
    await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length, 30_000);
    // No burst: at most 4 requests in any second since the step (counted from the step to the end,
    // which a loaded machine only lengthens; the emulator's own per-second peak is not used, as it
    // runs in this process and a busy event loop bunches its arrival times).
    const seconds = (performance.now() - writtenFrom) / 1000;
    const { totalRequests } = world.emulator.stats();
    expect(totalRequests).toBeGreaterThanOrEqual(names.length * 3); // upload, poll, data per file at least
    expect(totalRequests).toBeLessThanOrEqual(4 * Math.ceil(seconds + 1.05));
  });
});
