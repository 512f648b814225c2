/**
 * A docex-sync process stopped (SIGSTOP, as a laptop lid or a paused VM does) for much longer than
 * its poll interval, then continued (SIGCONT): the tasks that finished meanwhile are polled at once
 * (within the poll interval and the rate limit's spacing),
 * not after another wait of the stop's length, files dropped meanwhile are taken, and what was due
 * during the stop is not sent in a burst above api.requests_per_second.
 *
 * Waits are on states (rows in the state DB, tasks final on the service); the one span of time the
 * test makes is the stop itself, which must outlast the poll interval by far to mean anything.
 * Limits come from calibrate() (a measured CLI start), so a busy machine gets the time it needs.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { isFinalStatus } from '@docex/shared';
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

const RATE = 4; // api.requests_per_second
const POLL_MAX_MS = 1000; // poll.max_interval_ms
const startMs = await calibrate();
let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

type Row = { rel: string; state: string; task_id: string | null };
/** The rows, read from the DB file as another process. */
function rows(w: World): Row[] {
  try {
    const db = new Database(join(w.dir, 'state', 'sync.db'), { readonly: true, fileMustExist: true });
    try {
      return db.prepare('SELECT rel, state, task_id FROM files ORDER BY id').all() as Row[];
    } finally {
      db.close();
    }
  } catch {
    return [];
  }
}
const inState = (w: World, state: string, names: string[]) =>
  names.every((n) => rows(w).some((r) => r.rel === n && r.state === state));

describe('a process stopped and continued', () => {
  it(
    'SIGSTOP past the poll interval, then SIGCONT: finished tasks polled at once, no burst above the rate limit',
    async () => {
      // The per-file config (batch_files: 1, document_data: always): the counts below are an
      // upload, polls and a data read per file, the most a file costs.
      const w = await makeWorld({ taskDelayMs: 1500, watchYaml: '    document_data: always' });
      world = w;
      const yaml = await readFile(w.configFile, 'utf8');
      await writeFile(
        w.configFile,
        yaml
          .replace('max_attempts: 20 }', 'max_attempts: 20, batch_files: 1 }')
          .replace('requests_per_second: 200', `requests_per_second: ${RATE}`)
          .replace(
            'poll: { interval_ms: 50, max_interval_ms: 200 }',
            `poll: { interval_ms: 500, max_interval_ms: ${POLL_MAX_MS} }`,
          ),
      );
      const run = runCli(['run', '--config', w.configFile]);
      await until('running', () => run.output().includes('docex-sync running'));
      const before = ['b1.txt', 'b2.txt', 'b3.txt', 'b4.txt'];
      for (const n of before) await writeFile(join(w.dir, 'inbox', n), invoice(n));
      await until('all four uploaded, their tasks running', () => inState(w, 'uploaded', before));

      run.child.kill('SIGSTOP');
      const stoppedAt = performance.now();
      const during = ['d1.txt', 'd2.txt', 'd3.txt', 'd4.txt'];
      for (const n of during) await writeFile(join(w.dir, 'inbox', n), invoice(n));
      // The tasks finish on the service while the daemon is stopped.
      const client = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
      const taskIds = rows(w).flatMap((r) => (before.includes(r.rel) && r.task_id ? [r.task_id] : []));
      expect(taskIds).toHaveLength(4);
      await until('the four tasks final on the service', async () => {
        for (const id of taskIds)
          if (!isFinalStatus((await client.fetchTasksResults({ task_id: id })).status)) return false;
        return true;
      });
      // "At once" after the continue: within the longest poll interval and the rate limit's spacing
      // of what is sent before (the new files' uploads and the finished files' results take turns
      // with the polls), given slack for a busy machine. All the run sends after the continue is 4
      // polls, 4 data reads, 5 reads for the results and 3 per new file. The stop is twice the most
      // that takes with two CLI starts of slack, and the polls must come before a stop's length has
      // passed again: a scheduler that waited the stop out again would show, a starved one not.
      const mostMs = POLL_MAX_MS + ((13 + 4 * 3) / RATE) * 1000 + 2 * startMs;
      const stopMs = Math.max(10_000, 2 * mostMs);
      await delay(Math.max(0, stopMs - (performance.now() - stoppedAt)));
      expect(rows(w).filter((r) => r.state === 'archived')).toEqual([]); // it was stopped indeed

      w.emulator.resetStats();
      const continuedAt = performance.now();
      run.child.kill('SIGCONT');
      await until(
        'the four finished tasks polled',
        () => (w.emulator.stats().requestsByOperation.fetch_tasks_results ?? 0) >= 4,
      );
      const promptlyMs = performance.now() - continuedAt;
      const sentBefore = w.emulator.stats().totalRequests;
      // Caps, not expectations: in the full suite a busy machine once needed more than the floor.
      await until('the four finished tasks archived', () => inState(w, 'archived', before), 120_000);
      await until(
        'the files dropped during the stop archived',
        () => inState(w, 'archived', during),
        120_000,
      );
      const seconds = (performance.now() - continuedAt) / 1000;
      const stats = w.emulator.stats();
      console.info(
        `stopped ${Math.round(stopMs)} ms; after SIGCONT the four finished tasks were polled in ${Math.round(promptlyMs)} ms, after ${sentBefore} requests (allowed: less than the stop); ${stats.totalRequests} requests in ${seconds.toFixed(1)} s, at most ${stats.maxRequestsInOneSecond} in one second as the emulator saw them (machine shared)`,
      );
      expect(promptlyMs).toBeLessThan(stopMs);
      expect(rows(w).filter((r) => r.state === 'failed')).toEqual([]);
      // No burst: at most RATE requests in any second since the continue. Counted from the continue to
      // the end, which a loaded machine only lengthens (the emulator runs in this process, whose event
      // loop can bunch arrival times, so its per-second peak is printed but not the measure).
      expect(stats.totalRequests).toBeGreaterThanOrEqual(4 * 2 + 4 * 3);
      expect(stats.totalRequests).toBeLessThanOrEqual(RATE * Math.ceil(seconds + 1.05));
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    },
    300_000 + startMs * 120, // the stop, plus the waits' caps
  );
});
