/**
 * The scheduler on its own, with a pump the test writes and a clock it sets: one pump per turn
 * however many wake-ups, one job per row, per-kind limits, the one timer, a failed pump retried,
 * and a stop that waits for what must finish and leaves what may be abandoned.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { Scheduler } from '../../../daemon/src/pipeline/scheduler.ts';

type Kind = 'upload' | 'poll';

function deferred() {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Resolves after the scheduler's queued pump (setImmediate) has run. */
const turn = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));

function make(pump: (s: Scheduler<Kind>) => number | undefined, clock = { now: 1_000_000 }) {
  const logs: string[] = [];
  const log = createLogger('debug', {
    pretty: false,
    destination: new Writable({ write: (chunk, _enc, done) => (logs.push(String(chunk)), done()) }),
  });
  const scheduler: Scheduler<Kind> = new Scheduler<Kind>({
    now: () => clock.now,
    pump: () => pump(scheduler),
    log,
  });
  return { scheduler, logs, clock };
}

describe('the scheduler', () => {
  it('pumps once per turn however often it is woken, and not before start nor after stop', async () => {
    let pumps = 0;
    const { scheduler } = make(() => (pumps++, Infinity));
    scheduler.wake();
    await turn();
    expect(pumps).toBe(0);
    scheduler.start();
    for (let i = 0; i < 5; i++) scheduler.wake();
    await turn();
    expect(pumps).toBe(1);
    await scheduler.stop({ kinds: ['poll'], ms: 0 });
    scheduler.wake();
    await turn();
    expect(pumps).toBe(1);
  });

  it('runs one job per row, counts running jobs per kind, and pumps again when a job ends', async () => {
    const jobs = new Map<number, ReturnType<typeof deferred>>();
    let pumps = 0;
    const { scheduler } = make((s) => {
      pumps++;
      for (const id of [1, 2, 3]) {
        if (jobs.has(id) || s.spare('upload', 2) <= 0) continue; // a row whose job ended is not due again
        const job = deferred();
        jobs.set(id, job);
        s.run(id, 'upload', () => job.promise);
      }
      return Infinity;
    });
    scheduler.start();
    await turn();
    expect([...jobs.keys()]).toEqual([1, 2]);
    expect(scheduler.running('upload')).toBe(2);
    expect(scheduler.running('poll')).toBe(0);
    expect(scheduler.size).toBe(2);
    scheduler.wake();
    await turn();
    expect(jobs.size).toBe(2); // both rows still have their job; the limit is reached
    jobs.get(1)!.reject(new Error('a job that throws still ends'));
    await turn();
    expect(pumps).toBe(3);
    expect([...jobs.keys()]).toEqual([1, 2, 3]);
    expect(scheduler.has(1)).toBe(false);
    expect(scheduler.has(2)).toBe(true);
    expect(scheduler.running('upload')).toBe(2);
    for (const job of jobs.values()) job.resolve();
    await scheduler.stop({ kinds: [], ms: 0 });
    expect(scheduler.size).toBe(0);
  });

  it('sets one timer at the time the pump returns, and pumps when it fires', async () => {
    const clock = { now: 1_000_000 };
    const answers: (number | undefined)[] = [Infinity, clock.now + 60_000, undefined, clock.now - 1];
    const fired = deferred();
    let pumps = 0;
    const { scheduler } = make(() => {
      pumps++;
      if (pumps > answers.length) fired.resolve();
      return pumps <= answers.length ? answers[pumps - 1] : Infinity;
    }, clock);
    scheduler.start();
    await turn();
    expect(scheduler.nextWakeAt).toBeUndefined();
    scheduler.wake();
    await turn();
    expect(scheduler.nextWakeAt).toBe(clock.now + 60_000);
    scheduler.wake(); // undefined: the timer stays
    await turn();
    expect(scheduler.nextWakeAt).toBe(clock.now + 60_000);
    // Due already by the steady clock: the timer replaces the one a minute away and fires at once
    // (when exactly is up to the event loop, so only that it fired is looked at).
    scheduler.wake();
    await fired.promise;
    expect(pumps).toBe(answers.length + 1);
    expect(scheduler.nextWakeAt).toBeUndefined();
    await scheduler.stop({ kinds: [], ms: 0 });
  });

  it('a pump that throws is logged and tried again a second later', async () => {
    const clock = { now: 5_000 };
    const { scheduler, logs } = make(() => {
      throw new Error('database is locked');
    }, clock);
    scheduler.start();
    await turn();
    expect(scheduler.nextWakeAt).toBe(6_000);
    expect(logs.join('')).toContain('scheduler step failed; retrying in 1 s');
    expect(logs.join('')).toContain('database is locked');
    await scheduler.stop({ kinds: [], ms: 0 });
  });

  it('stop waits for the jobs that must finish and leaves those of the grace kinds after the grace', async () => {
    const upload = deferred();
    const hungPoll = deferred();
    const { scheduler } = make((s) => {
      if (!s.has(1)) s.run(1, 'upload', () => upload.promise);
      if (!s.has(2)) s.run(2, 'poll', () => hungPoll.promise);
      return Infinity;
    });
    scheduler.start();
    await turn();
    let stopped = false;
    const stopping = scheduler.stop({ kinds: ['poll'], ms: 0 }).then(() => (stopped = true));
    expect(scheduler.stopped).toBe(true);
    // Past the grace (a later timer fires after it), but an upload in flight must store its task id
    // before the process ends, however long that takes.
    await new Promise((resolve) => setTimeout(resolve, 5));
    for (let i = 0; i < 5; i++) await turn();
    expect(stopped).toBe(false);
    upload.resolve();
    await stopping;
    expect(scheduler.has(1)).toBe(false);
    expect(scheduler.has(2)).toBe(true); // the hung poll is left; its row is polled after the next start
  });
});
