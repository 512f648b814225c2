/**
 * The scheduler: which jobs run (at most one per row), how many of each kind at once, and one timer
 * at the earliest moment something comes due. It knows nothing of files: the pipeline's `pump`
 * looks for due rows and starts their jobs here, and answers when the next one comes due.
 *
 * Event-driven: it runs the pump when work may have become possible (`wake`: a watcher event, a job
 * finishing, another process's commit seen by wakeup.ts, the timer). With nothing due there is no
 * timer at all. Due times are on the steady clock the daemon passes in (common/clock.ts), so a step
 * of the wall clock neither delays nor bunches them.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { describe } from '../domain/lifecycle.ts';

export interface SchedulerDeps {
  /** The steady clock due times are on. */
  now: () => number;
  /**
   * Starts the jobs that are due (through `run`) and returns when the next one comes due: a time,
   * Infinity for nothing, undefined to leave the timer as it is.
   */
  pump: () => number | undefined;
  log: Logger;
}

/** After a pump that threw, the next try. */
const PUMP_RETRY_MS = 1000;

export class Scheduler<Kind extends string> {
  private readonly deps: SchedulerDeps;
  /** Row id → its running job and the job's kind; a row has at most one. */
  private readonly jobs = new Map<number, { kind: Kind; done: Promise<void> }>();
  private readonly runningByKind = new Map<Kind, number>();
  private pumpQueued = false;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private started = false;
  private stopping = false;

  constructor(deps: SchedulerDeps) {
    this.deps = deps;
  }

  /** Pumps from now on (nothing runs before: recovery and the first scan come first). */
  start() {
    this.started = true;
    this.wake();
  }

  /** Runs the pump soon (once per event-loop turn, however often it is called). */
  wake() {
    if (this.pumpQueued || !this.started || this.stopping) return;
    this.pumpQueued = true;
    setImmediate(() => {
      this.pumpQueued = false;
      try {
        const next = this.deps.pump();
        if (next !== undefined) this.arm(next);
      } catch (error) {
        this.deps.log.error(
          { err: describe(error) },
          `scheduler step failed; retrying in ${PUMP_RETRY_MS / 1000} s`,
        );
        this.arm(this.deps.now() + PUMP_RETRY_MS);
      }
    });
  }

  /** Whether the row has a job running. */
  has(id: number): boolean {
    return this.jobs.has(id);
  }

  /** Jobs of this kind running now. */
  running(kind: Kind): number {
    return this.runningByKind.get(kind) ?? 0;
  }

  /** How many more jobs of this kind may start, given its limit. */
  spare(kind: Kind, limit: number): number {
    return limit - this.running(kind);
  }

  /** Jobs running now, of every kind. */
  get size(): number {
    return this.jobs.size;
  }

  /** Whether stop() was called: no job starts any more. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Runs `job` as the row's job; when it settles (it handles its own errors) the pump runs again. */
  run(id: number, kind: Kind, job: () => Promise<void>) {
    this.runningByKind.set(kind, this.running(kind) + 1);
    const done = job()
      .catch(() => undefined)
      .finally(() => {
        this.runningByKind.set(kind, this.running(kind) - 1);
        this.jobs.delete(id);
        this.wake();
      });
    this.jobs.set(id, { kind, done });
  }

  /** When the one timer fires next; undefined when it has nothing to wait for. */
  get nextWakeAt(): number | undefined {
    return Number.isFinite(this.timerAt) ? this.timerAt : undefined;
  }

  /**
   * Starts nothing new; waits for the jobs in flight, except that those of `grace.kinds` get
   * `grace.ms` and are then left (their rows are due again after the next start).
   */
  async stop(grace: { kinds: readonly Kind[]; ms: number }) {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const settled = (which: (kind: Kind) => boolean) =>
      Promise.allSettled([...this.jobs.values()].filter((j) => which(j.kind)).map((j) => j.done));
    const left = (kind: Kind) => grace.kinds.includes(kind);
    const waited = new AbortController();
    await Promise.race([
      settled(left),
      delay(grace.ms, undefined, { signal: waited.signal }).catch(() => undefined),
    ]);
    waited.abort();
    while ([...this.jobs.values()].some((j) => !left(j.kind))) await settled((kind) => !left(kind));
  }

  /** One timer, at the earliest time something comes due. */
  private arm(at: number) {
    if (at === this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = at;
    if (!Number.isFinite(at) || this.stopping) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.wake();
      },
      Math.max(0, at - this.deps.now()),
    );
  }
}
