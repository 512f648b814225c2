/**
 * A full disk under the state DB, for real: a small tmpfs the test mounts holds state_db, a filler
 * file takes all its room while `docex-sync run` runs as a process against the emulator. Work pauses
 * (no crash), `status` (its own process, live), /healthz and the page say failing with the path and
 * what to do; once the filler is deleted work resumes by itself and every file dropped meanwhile is
 * processed, each uploaded exactly once.
 *
 * Mounting needs root (the test machine runs as root); where mount is refused the test is skipped
 * and says why. Waits are on log lines, states and files, never on a guessed time.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../e2e/services.ts';
import { call } from '../../support/http-call.ts';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { healthOf } from '../../../daemon/src/status/read-model.ts';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  SECRET,
  stopCliChildren,
  until,
  type World,
} from '../helpers.ts';

const MIB = 1024 * 1024;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
/** The free space a reason names, made fixed for comparing (SQLite may take or give back a page). */
const unmeasured = (text: string) => text.replace(/has \d+\.\d MiB free/g, 'has X MiB free');

/** Whether this process may mount a tmpfs: tried once on a throw-away folder. */
function mountRefusal(): string | undefined {
  const probe = join(tmpdir(), `docex-mount-probe-${process.pid}`);
  spawnSync('mkdir', ['-p', probe]);
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe], { encoding: 'utf8' });
  if (mounted.status !== 0)
    return `mount -t tmpfs is not permitted here (${(mounted.stderr || mounted.error?.message || '').trim()}): the test needs root`;
  spawnSync('umount', [probe]);
  spawnSync('rmdir', [probe]);
  return undefined;
}
const refusal = mountRefusal();
if (refusal) console.warn(`skipped: ${refusal}`);

const startMs = refusal ? 0 : await calibrate();
const mounts: string[] = [];
let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});
// Unmounted even when a test failed (lazily: a killed daemon's files may still be closing).
afterAll(() => {
  for (const dir of mounts.splice(0)) spawnSync('umount', ['-l', dir]);
});

/**
 * A world whose state folder is an 8 MiB tmpfs (unmounted by its cleanup, before the folder is
 * removed, and by afterAll if a test failed first), and a filler taking all its room or all but
 * `leftBytes`.
 */
async function tmpfsWorld(extraYaml: string) {
  const w = await makeWorld({ extraYaml: `state_db_min_free_mb: 1\n${extraYaml}` });
  world = w;
  const stateDir = join(w.dir, 'state');
  await mkdir(stateDir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', stateDir]);
  mounts.push(stateDir);
  const cleanup = w.cleanup.bind(w);
  w.cleanup = async () => {
    stopCliChildren();
    spawnSync('umount', ['-l', stateDir]); // detached now; a daemon's open files close on its stop
    await cleanup();
  };
  const filler = join(stateDir, 'filler');
  const free = () => statfsSync(stateDir).bavail * statfsSync(stateDir).bsize;
  const fill = async (leftBytes = 0) => {
    await writeFile(filler, Buffer.alloc(leftBytes === 0 ? 16 * MIB : free() - leftBytes)).catch(
      (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOSPC') throw error;
      },
    );
    expect(free()).toBeLessThanOrEqual(leftBytes);
  };
  return { w, stateDir, dbPath: join(stateDir, 'sync.db'), fill, unfill: () => rm(filler) };
}

/**
 * `full`: no byte left, so a write fails (SQLITE_FULL) before or as the check sees it: a pause, not
 * a crash. `low`: half a MiB left, below state_db_min_free_mb (1 MiB): the check before the
 * scheduler's pump pauses work before any write fails.
 */
const cases = [
  { room: 'full', leftBytes: 0 },
  { room: 'low', leftBytes: MIB / 2 },
] as const;

describe.skipIf(refusal !== undefined)('a full disk under the state DB', () => {
  it.each(cases)(
    'room $room: pauses work with a failing status naming the path and what to do, and resumes when space returns, each file uploaded once',
    async ({ room, leftBytes }) => {
      const port = await freePort();
      const { w, dbPath, fill, unfill } = await tmpfsWorld(`http: { port: ${port} }`);

      const run = runCli(['run', '--config', w.configFile]);
      await until('running', () => run.output().includes('docex-sync running'));
      await writeFile(join(w.dir, 'inbox', 'before.txt'), invoice('D-0'));
      await until('before.txt archived', async () =>
        (await readdir(join(w.dir, 'processed'))).includes('before.txt'),
      );

      await fill(leftBytes);

      const names = ['d1.txt', 'd2.txt', 'd3.txt', 'd4.txt'];
      for (const [i, n] of names.entries()) await writeFile(join(w.dir, 'inbox', n), invoice(`D-${i + 1}`));
      const pausedLine = await until('the pause logged', () =>
        run
          .output()
          .split('\n')
          .find((l) => l.includes('work is paused')),
      );
      console.info(`logged: ${pausedLine}`);
      expect(pausedLine).toContain(dbPath);
      if (room === 'low') expect(pausedLine).toContain('below state_db_min_free_mb (1.0 MiB)');
      expect(pausedLine).toContain(
        'free space on that filesystem (or move state_db to a filesystem with room)',
      );

      // status, in its own process, measures the room itself: failing, exit 6, with the reason.
      const status = runCli(['status', '--config', w.configFile]);
      expect(await status.exited).toBe(6);
      const reason = `the filesystem of the state DB ${dbPath} has X MiB free, below state_db_min_free_mb (1.0 MiB): work is paused; free space on that filesystem (or move state_db to a filesystem with room); work resumes by itself when there is room, nothing is lost`;
      expect(unmeasured(status.output())).toContain(`Failing:\n  ${reason}\n`);
      console.info(`status printed:\n${status.output().split('\n').slice(0, 2).join('\n')}`);
      const json = runCli(['status', '--config', w.configFile, '--json']);
      expect(await json.exited).toBe(6);
      const health = JSON.parse(json.stdout()).health as { level: string; reasons: string[] };
      expect(health.level).toBe('failing');
      expect(health.reasons.map(unmeasured)).toEqual([reason]);
      const healthz = await call(port, '/healthz');
      console.info(`/healthz ${healthz.status}: ${healthz.text}`);
      expect(healthz.status).toBe(503);
      expect(JSON.parse(unmeasured(healthz.text))).toMatchObject({ level: 'failing', reasons: [reason] });
      const page = await call(port, '/');
      expect(page.text).toContain('data-level="failing"');
      expect(unmeasured(page.text)).toContain(reason);

      // Nothing lost, nothing sent: the files wait in the inbox, the daemon runs on.
      expect((await readdir(join(w.dir, 'inbox'))).sort()).toEqual(names);
      expect(w.emulator.stats().uploadsByHash[sha(invoice('D-1'))]).toBeUndefined();
      expect(run.child.exitCode).toBeNull();

      // A stop while paused is clean (exit 0), and the next run starts paused where this one was.
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      const again = runCli(['run', '--config', w.configFile]);
      await until('paused again', () => again.output().includes('work is paused'));

      await unfill();
      await until('the resume logged', () =>
        again.output().includes('the state DB has room again: work resumes'),
      );
      await until('all four archived', async () => {
        const done = await readdir(join(w.dir, 'processed'));
        return names.every((n) => done.includes(n));
      });
      const uploads = w.emulator.stats().uploadsByHash;
      expect(names.map((_, i) => uploads[sha(invoice(`D-${i + 1}`))])).toEqual([1, 1, 1, 1]);
      expect(await readdir(join(w.dir, 'failed'))).toEqual([]);
      for (const output of [run.output(), again.output()]) {
        expect(output.split('\n').filter((l) => l.includes('work is paused'))).toHaveLength(1);
        expect(output).not.toContain('SqliteError');
      }
      expect(
        again
          .output()
          .split('\n')
          .filter((l) => l.includes('room again')),
      ).toHaveLength(1);
      const after = runCli(['status', '--config', w.configFile]);
      expect(await after.exited).toBe(0);
      again.child.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    },
    startMs * 200 + 60_000,
  );

  it('a run started on a full disk starts paused (no exit), and resumes when space returns', async () => {
    const { w, dbPath, fill, unfill } = await tmpfsWorld('');
    // A first run makes the DB and processes a file; then the disk fills while it is stopped.
    const first = runCli(['run', '--config', w.configFile]);
    await until('running', () => first.output().includes('docex-sync running'));
    await writeFile(join(w.dir, 'inbox', 's0.txt'), invoice('S-0'));
    await until('s0.txt archived', async () => (await readdir(join(w.dir, 'processed'))).includes('s0.txt'));
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    await fill();
    await writeFile(join(w.dir, 'inbox', 's1.txt'), invoice('S-1'));

    const run = runCli(['run', '--config', w.configFile]);
    await until(
      'the pause logged',
      () => run.output().includes('work is paused') || run.child.exitCode !== null,
    );
    console.info(`a run started on a full disk printed:\n${run.output().trim()}`);
    expect(run.child.exitCode).toBeNull();
    const status = runCli(['status', '--config', w.configFile]);
    const code = await status.exited;
    console.info(`status printed:\n${status.output().trim()}`);
    expect(code).toBe(6);
    // Read from a copy in memory (SQLite cannot open the DB on this disk): the counts are true.
    expect(status.output()).toContain('  archived    1\n');
    expect(unmeasured(status.output())).toContain(
      `Failing:\n  the filesystem of the state DB ${dbPath} has X MiB free, below state_db_min_free_mb (1.0 MiB): work is paused;`,
    );
    await unfill();
    await until('s1.txt archived', async () => (await readdir(join(w.dir, 'processed'))).includes('s1.txt'));
    expect(w.emulator.stats().uploadsByHash[sha(invoice('S-1'))]).toBe(1);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('an upload whose task id cannot be stored (the commit fails for lack of room) keeps the id and stores it on resume: sent once', async () => {
    const { w, stateDir } = await tmpfsWorld('');
    // Freed to make room again (the pause waits for more room than when the write failed).
    const ballast = join(stateDir, 'ballast');
    await writeFile(ballast, Buffer.alloc(MIB));
    // The commit right after the service answers fails as a full disk does (SQLITE_FULL).
    const started: { daemon?: RunningDaemon } = {};
    let failed = false;
    const service = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
    const client: DocexClient = Object.assign(Object.create(service) as DocexClient, {
      uploadFile: async (args: Parameters<DocexClient['uploadFile']>[0]) => {
        const answer = await service.uploadFile(args);
        if (failed) return answer;
        failed = true;
        // The state DB commits through a prepared statement: its next run of COMMIT fails, once.
        const statements = Object.getPrototypeOf(started.daemon!.db.db.prepare('SELECT 1')) as {
          run(this: { source: string }, ...args: unknown[]): unknown;
        };
        const run = statements.run;
        statements.run = function (this: { source: string }, ...args: unknown[]) {
          if (this.source !== 'COMMIT') return run.apply(this, args);
          statements.run = run;
          throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        };
        return answer;
      },
    });
    const daemon = await w.start({ client });
    started.daemon = daemon;
    await writeFile(join(w.dir, 'inbox', 'a.txt'), invoice('U-1'));
    await until('paused', () => daemon.pipeline.diskPaused);
    expect(daemon.pipeline.diskPaused).toContain('failed for lack of space (database or disk is full)');
    expect(daemon.db.files.inState('uploading').map((r) => r.rel)).toEqual(['a.txt']); // the answer was rolled back
    // Room above the threshold: the free-space check sees nothing; the daemon's own health says it.
    const health = healthOf({
      db: daemon.db,
      config: w.config(),
      diskPaused: () => daemon.pipeline.diskPaused,
    });
    expect(health).toMatchObject({ level: 'failing', reasons: [daemon.pipeline.diskPaused] });
    await rm(ballast);
    await until('a.txt archived', () => daemon.db.fileCounts.counts().archived === 1);
    expect(w.emulator.stats().uploadsByHash[sha(invoice('U-1'))]).toBe(1);
    expect(w.logs.join('')).not.toContain('it will be sent again');
    expect(w.logs.join('')).toContain('the state DB has room again: work resumes');
  });
});
