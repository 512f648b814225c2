/**
 * The pipeline's dispatcher, the imperative shell around domain/lifecycle.ts. It makes the steps
 * and starts each due row's step as a job of the scheduler (scheduler.ts), so a slow or hung
 * request holds back only its own file (bounded by api.timeout_ms); `pump` says which rows are due.
 * Every change to a row goes through `apply`: it asks `decide` what follows and commits that to the
 * state DB; the steps carry out the effects. It decides nothing itself.
 *
 * The steps, one file each, in a file's order: discover.ts (a watcher's or a scan's file becomes a
 * row), stabilize.ts, upload.ts (with batch-upload.ts), poll.ts, write-results.ts (with naming.ts),
 * archive.ts (or held for review), failure-report.ts; recover.ts after a restart. What holds for
 * the whole run (key refused, service unreachable, paused watches, a full disk) is run-state.ts.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import type { WatchConfig } from '../config/config.ts';
import { decide, describe, NEVER, type FileRow, type Observation, type Policy } from '../domain/lifecycle.ts';
import { DISK_RECHECK_MS } from '../domain/disk-space.ts';
import { allWatches } from '../intake/sources.ts';
import type { Candidate, Listed } from '../intake/walk.ts';
import { ResultWriter } from '../outputs/results.ts';
import { ReviewQueue } from '../outputs/review.ts';
import { stateDbSpace } from '../store/room.ts';
import type { StateDb } from '../store/state.ts';
import { Archiving } from './archive.ts';
import { discover, discoverListed } from './discover.ts';
import { reportFailure } from './failure-report.ts';
import { Polls } from './poll.ts';
import { ExtractionTimes } from './extraction-times.ts';
import { recoverRows } from './recover.ts';
import { RunState } from './run-state.ts';
import { Scheduler } from './scheduler.ts';
import { stabilize } from './stabilize.ts';
import type {
  Applied,
  JobKind,
  PipelineConfig,
  PipelineEvents,
  PipelineMetrics,
  StepHost,
} from './step-host.ts';
import { Uploads } from './upload.ts';

export type { PipelineConfig, PipelineEvents, PipelineMetrics } from './step-host.ts';

export interface PipelineDeps {
  db: StateDb;
  client: DocexClient;
  config: PipelineConfig;
  log: Logger;
  metrics?: PipelineMetrics;
  now?: () => number;
  /** Writes results (keeps the template cache and the daily CSVs); one per process. */
  results?: ResultWriter;
}

/** Jobs of each kind running at once (uploads: api.concurrency; polls: poll.batch_size). */
const LOCAL_JOBS = 8;
const POLL_GRACE_MS = 2000;

export class Pipeline extends EventEmitter<PipelineEvents> {
  private readonly deps: PipelineDeps;
  private readonly now: () => number;
  private readonly watches: Map<string, WatchConfig>;
  private readonly scheduler: Scheduler<JobKind>;
  private readonly run: RunState;
  /** What every step is given (step-host.ts). */
  private readonly host: StepHost;
  private readonly uploads: Uploads;
  private readonly polls: Polls;
  private readonly archiving: Archiving;
  /** After stop(): late answers of abandoned polls change nothing. */
  private stopped = false;

  constructor(deps: PipelineDeps) {
    super();
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.watches = allWatches(deps.config);
    const results = deps.results ?? new ResultWriter(deps.client, { log: deps.log, now: this.now });
    this.scheduler = new Scheduler({ now: this.now, pump: () => this.pump(), log: deps.log });
    this.run = new RunState({
      db: deps.db,
      log: deps.log,
      now: this.now,
      probeIntervalMs: deps.config.upload.probe_interval_ms,
      events: this,
      diskSpace: () => stateDbSpace(deps.config),
    });
    this.host = {
      db: deps.db,
      client: deps.client,
      config: deps.config,
      log: deps.log,
      metrics: deps.metrics,
      now: this.now,
      watches: this.watches,
      run: this.run,
      results,
      reviews: new ReviewQueue(results, this.now),
      events: this,
      apply: (row, observation) => this.apply(row, observation),
      wake: () => this.wake(),
    };
    const timing = new ExtractionTimes(deps.config);
    this.uploads = new Uploads(
      this.host,
      {
        scheduler: this.scheduler,
        start: (row, run) => this.startJob(row, 'upload', run),
        stopped: () => this.stopped,
      },
      timing,
    );
    this.archiving = new Archiving(this.host);
    this.polls = new Polls(this.host, { timing, batches: this.uploads.batches, archiving: this.archiving });
    // A batch whose commit at the end of a turn failed for lack of room pauses work, as a full disk does.
    deps.db.onCommitFailed((error) => this.run.diskFull(error));
  }

  private policy(watch: string): Policy {
    const { config } = this.deps;
    return {
      stable_ms: this.watches.get(watch)?.stable_ms ?? 2000,
      poll: config.poll,
      upload: config.upload,
      random: Math.random,
    };
  }

  /** Asks the lifecycle, commits the changes, reports run-level effects. Returns the decision. */
  private apply(row: FileRow, observation: Observation): Applied {
    if (this.stopped) return { decision: { changes: undefined, effect: { kind: 'none' } }, row };
    const now = this.now();
    const decision = decide(row, observation, now, this.policy(row.watch));
    const next = decision.changes ? { ...row, ...decision.changes, updated_at: now } : row;
    if (decision.changes) this.deps.db.files.update(row.id, decision.changes, now);
    if (next.state === 'failed' && row.state !== 'failed') {
      this.deps.metrics?.failed.inc();
      this.deps.log.error({ file: row.path, reason: next.reason }, 'failed');
      this.emit('file-failed', next);
    }
    this.run.apply(decision.effect, row);
    return { decision, row: next };
  }

  /** The API key was refused outside a file's step (the key check of a start): the run stops as if an upload met it. */
  refuse(error: unknown) {
    this.run.refuse(error);
  }

  /** The service could not be reached outside a file's step (the key check of a start). */
  serviceUnreachable(reason: string) {
    this.run.unreachable(reason);
  }

  /** The service answered. */
  reachable() {
    this.run.reachable();
  }

  /**
   * After a restart: uploads cut short go again (see docs/daemon.md), stability is checked anew. On
   * a full disk this waits for the pause to end (uploads cut short are then redone the same way).
   */
  recover() {
    try {
      recoverRows(this.host);
    } catch (error) {
      if (!this.run.diskFull(error)) throw error;
    }
  }

  /** A file reported by the watcher. */
  candidate(watch: WatchConfig, file: Candidate) {
    discover(this.host, watch, file);
  }

  /** What a scan listed (a folder at a time): the new files recorded; how many (discover.ts). */
  ingest(
    watch: WatchConfig,
    listed: Listed[],
    look: (listed: Listed[]) => Promise<Candidate[]>,
  ): Promise<number> {
    return discoverListed(this.host, watch, listed, look);
  }

  /** The scheduler reads due rows after every rescan: the fallback when wakeup.ts cannot watch the DB. */
  rescanned() {
    this.wake();
  }

  start() {
    this.scheduler.start();
  }

  /**
   * Stops starting new work and lets jobs in flight reach a state in the DB: uploads (their task id
   * must be stored) and file moves are waited for; polls get POLL_GRACE_MS, then are left (the task
   * is polled again after the next start).
   */
  async stop() {
    await this.scheduler.stop({ kinds: ['poll'], ms: POLL_GRACE_MS });
    this.stopped = true;
    try {
      this.deps.db.flush();
    } catch (error) {
      // On a full disk the last batch is rolled back: the next start redoes it from the DB's state.
      if (!this.run.diskFull(error)) throw error;
    }
  }

  /** When the scheduler's one timer fires next; undefined when it has nothing to wait for. */
  get nextWakeAt(): number | undefined {
    return this.scheduler.nextWakeAt;
  }

  /** The run was refused (API key): the error, else undefined. */
  get refusal() {
    return this.run.refusal;
  }

  /** Idle: nothing waiting in the pipeline (used by the demo, tests and benchmarks). */
  idle(): boolean {
    const c = this.deps.db.fileCounts.counts();
    return (
      c.discovered + c.stable + c.uploading + c.uploaded + c.done === 0 &&
      this.scheduler.size === 0 &&
      this.deps.db.dueWork.due('failed', NEVER - 1, 1).length === 0
    );
  }

  /** Runs the scheduler soon (once per event-loop turn, however often it is called). */
  wake() {
    this.scheduler.wake();
  }

  /** Why work is paused for lack of room for the state DB (status says it), else undefined. */
  get diskPaused(): string | undefined {
    return this.run.diskPaused;
  }

  /**
   * Starts the jobs of the rows that are due; returns when the next one comes due. First the state
   * DB's room is measured: while it is short nothing starts and the timer measures it again.
   */
  private pump(): number | undefined {
    if (this.scheduler.stopped || this.run.refusal !== undefined) return undefined;
    const now = this.now();
    try {
      const disk = this.run.checkDisk();
      if (disk === 'paused') return now + DISK_RECHECK_MS;
      if (disk === 'resumed') this.uploads.redoAfterDiskPause();
      return this.startDue(now);
    } catch (error) {
      if (this.run.diskFull(error)) return now + DISK_RECHECK_MS;
      throw error;
    }
  }

  /** Each state's due rows to its step, within each kind's room; when the next row comes due. */
  private startDue(now: number): number {
    const { db, config } = this.deps;
    const take = (rows: FileRow[], kind: JobKind, run: (row: FileRow) => Promise<void>) => {
      for (const row of rows) if (!this.scheduler.has(row.id)) this.startJob(row, kind, run);
    };
    const spare = (kind: JobKind, limit: number) => this.scheduler.spare(kind, limit);

    take(db.dueWork.due('discovered', now, spare('stabilize', LOCAL_JOBS)), 'stabilize', (r) =>
      stabilize(this.host, r),
    );
    this.uploads.start(now);
    take(db.dueWork.due('uploaded', now, spare('poll', config.poll.batch_size)), 'poll', (r) =>
      this.polls.poll(r),
    );
    take(db.dueWork.due('done', now, spare('archive', LOCAL_JOBS)), 'archive', (r) =>
      this.archiving.archive(r),
    );
    take(db.dueWork.due('failed', now, spare('report', LOCAL_JOBS)), 'report', (r) => this.report(r));
    const probe = Math.min(Infinity, ...db.watches.pausedWatches().map((w) => w.probe_at));
    return Math.min(db.dueWork.nextDue(now) ?? Infinity, probe);
  }

  /** The row's step as a job: leased in the DB while it runs; a failure is logged and retried when due. */
  private startJob(row: FileRow, kind: JobKind, run: (row: FileRow) => Promise<void>) {
    this.deps.db.dueWork.lease(row.id);
    this.scheduler.run(row.id, kind, () =>
      run(row)
        .catch((error: unknown) => {
          // A write that failed for lack of room: work pauses; the row keeps its state in the DB.
          if (this.run.diskFull(error)) return;
          this.deps.log.error(
            { file: row.path, err: describe(error), step: kind },
            'pipeline step failed; will retry',
          );
        })
        .finally(() => {
          if (!this.stopped) this.deps.db.dueWork.release(row.id);
        }),
    );
  }

  /** A failed file moves to the failed folder with <name>.error.json beside it (failure-report.ts). */
  private async report(row: FileRow) {
    const watch = this.watches.get(row.watch);
    if (watch) await reportFailure(this.host, watch, row);
  }
}
