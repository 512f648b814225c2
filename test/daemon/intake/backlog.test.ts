/**
 * A backlog far larger than the service's rate lets through (issue #42, "a backlog as large as the
 * share stays in bounded memory"): what the daemon holds while thousands of files wait must follow
 * its limits (jobs at once, requests per second), not the number of files. Timers are the proof in
 * the small: a timer or a queued job per waiting file shows up as thousands of them.
 * bench/backlog.bench.ts measures the same at 1,000,000 files, in RSS.
 */
import { createHook } from 'node:async_hooks';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeWorld, until, invoice, type World } from '../helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const FILES = 5000;
const PER_FOLDER = 500;

/**
 * Live timers of this process (the test's, the emulator's and the daemon's), unref'd ones included
 * (process.getActiveResourcesInfo() leaves those out): made and not yet fired or cleared.
 */
function liveTimers() {
  const live = new Set<number>();
  const hook = createHook({
    init: (id, type) => void (type === 'Timeout' && live.add(id)),
    destroy: (id) => void live.delete(id),
  }).enable();
  return { count: () => live.size, stop: () => hook.disable() };
}

describe('a backlog of thousands of files', () => {
  // Writing and recording 5,000 files takes a few seconds idle, several times that on a busy machine.
  it(
    'holds no timer per waiting file while they are checked and uploaded, and uploads none twice',
    { timeout: 120_000 },
    async () => {
      // 5 requests a second: the backlog outlasts the sampling by far, as a share's does.
      world = await makeWorld({ apiYaml: 'requests_per_second: 5', watchYaml: '    recursive: true' });
      for (let folder = 0; folder < FILES / PER_FOLDER; folder++) {
        const dir = join(world.dir, 'inbox', `d${folder}`);
        await mkdir(dir);
        for (let i = 0; i < PER_FOLDER; i++) {
          const n = folder * PER_FOLDER + i;
          await writeFile(join(dir, `invoice-${n}.pdf`), invoice(`B-${n}`));
        }
      }
      const timers = liveTimers();
      const running = await world.start();
      const counts = () => running.db.fileCounts.counts();
      expect(Object.values(counts()).reduce((a, b) => a + b, 0)).toBe(FILES);

      let most = 0;
      // Sampled on every turn of `until` until a hundred files have their task, the rest waiting.
      await until(
        'a hundred files uploaded',
        () => {
          most = Math.max(most, timers.count());
          const c = counts();
          return c.uploaded + c.done + c.archived >= 100;
        },
        60_000,
      );
      const c = counts();
      expect(c.discovered + c.stable).toBeGreaterThan(FILES / 2); // still a backlog when sampled
      // The scheduler's one timer, the watcher's rescan, the client's rate window, the emulator's
      // task timers (a few per second at this rate), polls: tens at most, never thousands.
      timers.stop();
      expect(most).toBeLessThan(100);

      await running.stop();
      const repeated = Object.values(world.emulator.stats().uploadsByHash).filter((n) => n > 1);
      expect(repeated).toEqual([]);
    },
  );
});
