/**
 * What other processes change reaches the running daemon: `docex-sync retry` in its own process
 * wakes the daemon's scheduler at once (not at the next rescan, not after minutes), and an empty
 * file fails locally without a request.
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { EMPTY_FILE } from '../../../daemon/src/domain/lifecycle.ts';
import { KV, StateDb } from '../../../daemon/src/store/state.ts';
import { wakeOnOtherWriters } from '../../../daemon/src/pipeline/wakeup.ts';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  stateOf,
  stopCliChildren,
  until,
  type World,
  testLimit,
} from '../helpers.ts';

// Time limits from a measured start of the CLI these tests run as a process (busy machines).
await calibrate();

let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

/** Rescans far apart: only the wake-up can bring the daemon to a retried file within the test. */
async function withSlowRescan(w: World) {
  const text = await readFile(w.configFile, 'utf8');
  await writeFile(w.configFile, text.replace('rescan_interval_ms: 1000', 'rescan_interval_ms: 600000'));
}

describe('changes by other processes wake the daemon', () => {
  it('another connection committing wakes it; its own commits do not', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-wakeup-'));
    const path = join(dir, 'state.db');
    const own = new StateDb(path);
    const other = new StateDb(path);
    const log = createLogger('silent', { pretty: false });
    let wakes = 0;
    let woken: () => void = () => undefined;
    const watching = wakeOnOtherWriters(own, () => (wakes++, woken()), log);
    try {
      // data_version tells the commits apart: our own change nothing, another connection's do.
      own.setValue(KV.pullCursor, '1');
      own.flush();
      expect(own.changedElsewhere()).toBe(false);
      other.setValue(KV.pullCursor, '2');
      other.flush();
      expect(own.changedElsewhere()).toBe(true);
      expect(own.changedElsewhere()).toBe(false);

      own.setValue(KV.pullSeen, '1');
      own.flush();
      other.setValue(KV.pullHistory, '1');
      other.flush();
      await new Promise<void>((resolve) => (woken = resolve));
      expect(wakes).toBe(1);
      // Our own commits after that: seen by the watch, told apart by data_version, no wake.
      own.setValue(KV.pullSeen, '2');
      own.flush();
      other.setValue(KV.pullHistory, '2');
      other.flush();
      await new Promise<void>((resolve) => (woken = resolve));
      expect(wakes).toBe(2);
    } finally {
      watching.close();
      other.close();
      own.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('docex-sync retry in another process reaches the running daemon: the file is processed at once', async () => {
    world = await makeWorld();
    await withSlowRescan(world);
    world.emulator.faults.set({ errorRate: 1, statuses: [400], operations: ['upload_file'] });
    await writeFile(join(world.dir, 'inbox', 'refused.txt'), invoice('R-1'));
    const run = runCli(['run', '--config', world.configFile]);
    await until(
      'moved to the failed folder',
      async () =>
        (await readdir(join(world!.dir, 'failed')).catch((): string[] => [])).includes(
          'refused.txt.error.json',
        ),
      30_000,
    );
    world.emulator.faults.clear();

    const retry = runCli(['retry', '--config', world.configFile, '--all']);
    expect(await retry.exited).toBe(0);
    expect(retry.stdout()).toContain('1 failed file(s) re-queued.');
    const retried = performance.now();
    await until('archived', () => stateOf(world!, 'refused.txt') === 'archived', 15_000);
    const ms = performance.now() - retried;
    // Without the wake-up nothing brings the daemon to the file for 10 minutes (the rescan);
    // with it, the time is the pipeline's own (a hash, an upload, two polls, the moves).
    expect(ms).toBeLessThan(5000);
    console.info(`retried file archived ${Math.round(ms)} ms after docex-sync retry exited`);
    expect(await readdir(join(world.dir, 'processed'))).toEqual(['refused.txt']);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  }, testLimit(60_000));

  it('an empty file fails locally with its .error.json; no request is sent', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'inbox', 'empty.pdf'), '');
    const daemon = await world.start();
    await until('reported', async () =>
      (await readdir(join(world!.dir, 'failed'))).includes('empty.pdf.error.json'),
    );
    const report = JSON.parse(await readFile(join(world.dir, 'failed', 'empty.pdf.error.json'), 'utf8'));
    expect(report).toMatchObject({ file: 'empty.pdf', status: 'failed', reason: EMPTY_FILE, task_id: null });
    expect(world.emulator.stats().requestsByOperation.upload_file ?? 0).toBe(0);
    expect(daemon.db.fileCounts.counts().failed).toBe(1);
  });
});
