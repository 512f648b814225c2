/**
 * The pipeline, the imperative shell around lifecycle.ts: it observes files and the service, asks
 * `decide` what follows, commits that to the state DB and carries out the effect.
 *
 * Each file's step runs as its own job of the scheduler (scheduler.ts), so a slow or hung request
 * holds back only its own file (bounded by api.timeout_ms); `pump` says which rows are due. What
 * holds for the whole run (key refused, service unreachable, paused watches) is run-state.ts.
 */
import { EventEmitter } from 'node:events';
import { lstat, rm, stat } from 'node:fs/promises';
import { hashFile } from './hash.ts';
import { basename } from 'node:path';
import type { Logger } from 'pino';
import {
  generalFieldsOf,
  isFinalStatus,
  type DocexClient,
  type DocumentData,
  type TaskResult,
} from '@docex/shared';
import type { ApiSettings, ConfigSlice, WatchConfig } from '../config/config.ts';
import { freeTarget } from '../common/files.ts';
import { movedInto, moveInto } from '../common/move.ts';
import { reportFailure } from './failure-report.ts';
import {
  decide,
  describe,
  isNewWork,
  RESTARTED_STATES,
  type Decision,
  type FileRow,
  type Observation,
  type Policy,
  type SameBytes,
  NEVER,
  reviewStepOf,
} from '../domain/lifecycle.ts';
import { allWatches } from '../intake/sources.ts';
import { resultBase, ResultWriter, type ResultTarget } from '../outputs/results.ts';
import { ReviewQueue } from '../outputs/review.ts';
import { routeFor, type Routed } from '../domain/routes.ts';
import { settingsOfRoute } from '../config/route-settings.ts';
import { parseNamePattern, renderName, type NamePattern, type NameValues } from '../common/names.ts';
import type { KnownFile, StateDb } from '../store/state.ts';
import {
  firstPollDelayMs,
  firstPollDueMs,
  NO_ESTIMATE,
  observePoll,
  type ExtractionEstimate,
} from '../domain/poll-timing.ts';
import type { Candidate, Listed } from '../intake/walk.ts';
import { RunState, type RunEvents } from './run-state.ts';
import { Scheduler } from './scheduler.ts';
import { DISK_RECHECK_MS } from '../domain/disk-space.ts';
import { stateDbSpace, type StateDbRoomConfig } from '../store/room.ts';
import { crashPoint } from '../common/crash-point.ts';
import { BatchUploads, type ReadyFile } from './batch-upload.ts';
import { decodeBatch } from '../domain/upload-batch.ts';
import { dataFromTask, templateSent } from '../domain/task-data.ts';

/** A count that only goes up (a Prometheus counter: status/metrics.ts gives these). */
interface Tally {
  inc(value?: number): void;
}
interface LabelledTally {
  inc(labels: Record<string, string>, value?: number): void;
}
/** What the pipeline counts; the pipeline names the shape, the status layer implements it. */
export interface PipelineMetrics {
  discovered: Tally;
  uploads: Tally;
  failed: Tally;
  processed: LabelledTally;
  apiErrors: LabelledTally;
}
/**
 * What the pipeline reads of the config: the watches and the mailboxes' spool folders it carries
 * files through, how it polls and uploads, and how many uploads at once.
 */
export type PipelineConfig = ConfigSlice<'watch' | 'mailboxes' | 'poll' | 'upload'> &
  StateDbRoomConfig & {
    api: Pick<ApiSettings, 'concurrency' | 'requests_per_second'>;
  };

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

/** What a notifier, the status page or a test can subscribe to. */
export interface PipelineEvents extends RunEvents {
  'file-failed': [row: FileRow];
  'result-written': [row: FileRow, files: string[]];
  'file-archived': [row: FileRow];
  /** Review rules fired: the original and its results wait in review_dir for a person. */
  'file-held-for-review': [row: FileRow];
}

/** Name patterns parsed once (the config checked them when it was read). */
const patterns = new Map<string, NamePattern>();
function namePattern(source: string): NamePattern {
  let pattern = patterns.get(source);
  if (!pattern) patterns.set(source, (pattern = parseNamePattern(source)));
  return pattern;
}

/** Extraction times are learnt per template: per watch, and per route of a routed watch. */
const extractionKey = (row: FileRow) => `${row.watch}\0${row.route ?? ''}`;

/** See uploadPriority. */
const UPLOAD_FIRST_SECONDS = 30;
/** Where the rate is not what bounds throughput (a high requests_per_second), the count still is. */
const UPLOAD_FIRST_MAX = 1000;

/** Tasks awaiting results below which uploads go first (Pipeline.uploadPriority). */
export const uploadFirstCap = (requestsPerSecond: number) =>
  Math.min(UPLOAD_FIRST_MAX, requestsPerSecond * UPLOAD_FIRST_SECONDS);

/** Jobs of each kind running at once (uploads: api.concurrency; polls: poll.batch_size). */
const LOCAL_JOBS = 8;
const POLL_GRACE_MS = 2000;

type JobKind = 'stabilize' | 'upload' | 'poll' | 'archive' | 'report';

/** Where a watch's result sets are: output, and review_dir where held ones wait before they go there. */
const resultTargets = (watch: WatchConfig): [ResultTarget, ...ResultTarget[]] => [
  watch,
  ...(watch.review_dir ? [{ ...watch, output: watch.review_dir }] : []),
];

/** Where the original will go after success, written into the JSON before it moves (corrected after if need be). */
async function plannedArchive(watch: WatchConfig, row: FileRow): Promise<string | null> {
  if (watch.on_success === 'move') return freeTarget(watch.processed_dir!, row.archive_rel ?? row.rel);
  return watch.on_success === 'keep' ? row.path : null;
}

export class Pipeline extends EventEmitter<PipelineEvents> {
  private readonly deps: PipelineDeps;
  private readonly now: () => number;
  private readonly watches: Map<string, WatchConfig>;
  private readonly results: ResultWriter;
  private readonly scheduler: Scheduler<JobKind>;
  private readonly run: RunState;
  private readonly reviews: ReviewQueue;
  /** Hashes being uploaded now: a second row with the same bytes waits (checked before any await). */
  private readonly uploadingHashes = new Set<string>();
  /** After stop(): late answers of abandoned polls change nothing. */
  private stopped = false;
  /** Done rows whose results this process wrote → where their JSON says the original goes. */
  private readonly plannedArchives = new Map<number, string | null>();
  /** Per watch and route (one template): how long its extractions take, learnt from its polls (poll-timing.ts). */
  private readonly extraction = new Map<string, ExtractionEstimate>();
  /** Per watch and route: the polls not answered yet, row id -> when each went out (see firstPollDueMs). */
  private readonly pollsOut = new Map<string, Map<number, number>>();
  /**
   * Rows whose upload this process sent and saw answered, until their task is seen final: only
   * their polls teach the poll timing. A task uploaded before a restart waited through the
   * downtime too, which is no extraction time (poll-timing.ts, `seenWhole`).
   */
  private readonly uploadsSeen = new Set<number>();
  /**
   * Task ids the service gave whose commit failed (a full disk): stored when work resumes, so the
   * file is not uploaded a second time.
   */
  private readonly unsavedAnswers = new Map<number, { row: FileRow; taskId: string }>();
  /** Several files in one upload, and each one's own task (batch-upload.ts). */
  private readonly batches: BatchUploads;

  constructor(deps: PipelineDeps) {
    super();
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.watches = allWatches(deps.config);
    this.results = deps.results ?? new ResultWriter(deps.client, { log: deps.log, now: this.now });
    this.scheduler = new Scheduler({ now: this.now, pump: () => this.pump(), log: deps.log });
    this.run = new RunState({
      db: deps.db,
      log: deps.log,
      now: this.now,
      probeIntervalMs: deps.config.upload.probe_interval_ms,
      events: this,
      diskSpace: () => stateDbSpace(deps.config),
    });
    this.reviews = new ReviewQueue(this.results, this.now);
    this.batches = new BatchUploads({
      db: deps.db,
      client: deps.client,
      log: deps.log,
      apply: (row, observation) => this.apply(row, observation).row,
      readyToGo: (row) => this.readyToGo(row),
      send: (row, route) => this.send(row, route),
      answered: (row, taskId) => this.uploadAnswered(row, taskId),
      failed: (row, error) => this.uploadFailed(row, error),
      priority: () => this.uploadPriority(),
      stopped: () => this.scheduler.stopped,
    });
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
  private apply(row: FileRow, observation: Observation): { decision: Decision; row: FileRow } {
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

  /**
   * Uploads go before polls and data fetches waiting for the same request slots while fewer than
   * UPLOAD_FIRST_SECONDS × requests_per_second tasks (at most UPLOAD_FIRST_MAX) wait for their
   * results, then take their turn:
   * under the rate limit, a batch sent first keeps the service extracting while its results are
   * fetched (bench/requests.bench.ts: 0.88x -> 0.93x of the bound; the last upload no longer
   * leaves the limiter idle through the last extraction), and a large drop still shows results
   * within about a minute rather than after its last upload.
   */
  private uploadPriority(): number {
    const cap = uploadFirstCap(this.deps.config.api.requests_per_second);
    return this.deps.db.dueWork.awaitingResults(cap) < cap ? 1 : 0;
  }

  private estimateOf(row: FileRow): ExtractionEstimate {
    return this.extraction.get(extractionKey(row)) ?? NO_ESTIMATE;
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
      this.recoverRows();
    } catch (error) {
      if (!this.run.diskFull(error)) throw error;
    }
  }

  private recoverRows() {
    const { db, log } = this.deps;
    this.reserveRecordedNames();
    for (const state of RESTARTED_STATES) {
      for (
        let after = 0, rows;
        (rows = db.files.page(state, after, 1000)).length > 0;
        after = rows.at(-1)!.id
      ) {
        for (const row of rows) {
          this.apply(row, { kind: 'restarted' });
          if (state === 'uploading')
            log.warn(
              { file: row.path },
              'upload was interrupted before its task id was stored; it will be sent again (a DUPLICATE answer is handled)',
            );
        }
      }
    }
    db.flush();
  }

  /**
   * Names files recorded before a stop whose files may not be there yet (a result base named but
   * not written, a place in review_dir whose original has not moved): held for them again, so no
   * other file is given them meanwhile (files.ts, Reservations).
   */
  private reserveRecordedNames() {
    const { db } = this.deps;
    for (const state of ['uploaded', 'done'] as const) {
      for (
        let after = 0, rows;
        (rows = db.files.page(state, after, 1000)).length > 0;
        after = rows.at(-1)!.id
      ) {
        for (const row of rows) {
          const watch = this.watches.get(row.watch);
          if (!watch) continue;
          if (state === 'uploaded' && row.result_base !== null)
            this.results.reserve(watch, row.result_base, row.id);
          if (row.review_path !== null && row.approved_at === null)
            this.reviews.reservePlace(row.review_path, row.id);
        }
      }
    }
  }

  /** A file reported by the watcher. */
  candidate(watch: WatchConfig, file: Candidate) {
    const { db, log } = this.deps;
    if (!isNewWork(file, db.files.current(file.path), watch.on_success)) return;
    let created;
    try {
      created = db.files.discover({ watch: watch.path, ...file }, this.now(), watch.stable_ms);
    } catch (error) {
      if (this.run.diskFull(error)) return; // the rescan after the pause finds it again
      throw error;
    }
    log.debug({ file: file.path, id: created.id }, 'discovered');
    this.deps.metrics?.discovered.inc();
    this.wake();
  }

  /**
   * What a scan listed (a folder at a time), compared with the DB in one read: paths the pipeline
   * holds are not looked at (a rescan of 100,000 waiting files stats none), the others are, and the
   * new ones are recorded in one transaction.
   */
  async ingest(
    watch: WatchConfig,
    listed: Listed[],
    look: (listed: Listed[]) => Promise<Candidate[]>,
  ): Promise<number> {
    const { db, log } = this.deps;
    const before = db.mark();
    const unheld = db.files
      .unheld(
        watch.path,
        listed.map((l) => l.path),
      )
      .map((i) => listed[i]!);
    if (unheld.length === 0) return 0;
    const files = await look(unheld);
    if (files.length === 0) return 0;
    // Read right before recording: an event may have recorded some of them meanwhile. Unless
    // nothing was written since `unheld` (the start-up scan of a large tree, mostly): then no row
    // holds any of them now either, and only `keep` must see the archived rows `unheld` left out.
    const known =
      watch.on_success === 'keep' || db.changedSince(before)
        ? db.files.known(
            watch.path,
            files.map((f) => f.path),
            watch.on_success === 'keep',
          )
        : new Map<string, KnownFile>();
    const fresh = files.filter((f) => isNewWork(f, known.get(f.path), watch.on_success));
    if (fresh.length) {
      try {
        db.files.discoverMany(watch.path, fresh, this.now(), watch.stable_ms);
        db.flush();
      } catch (error) {
        if (this.run.diskFull(error)) return 0; // the rescan after the pause finds them again
        throw error;
      }
      this.deps.metrics?.discovered.inc(fresh.length);
      for (const f of fresh.slice(0, 20)) log.debug({ file: f.path }, 'discovered');
      this.wake();
    }
    return fresh.length;
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
      if (disk === 'resumed') this.redoAfterDiskPause();
      return this.startDue(now);
    } catch (error) {
      if (this.run.diskFull(error)) return now + DISK_RECHECK_MS;
      throw error;
    }
  }

  /**
   * After a pause for lack of room: the task ids the service gave meanwhile are stored; an upload
   * whose outcome could not be stored goes again (as after a restart: a DUPLICATE answer is handled).
   * Rows whose other steps were rolled back are simply due again; files whose discovery was rolled
   * back are found by the rescan the daemon runs on `disk-resumed`.
   */
  private redoAfterDiskPause() {
    const { db, log } = this.deps;
    for (const { row, taskId } of this.unsavedAnswers.values()) this.storeAnswer(row, taskId);
    for (const row of db.files.inState('uploading'))
      if (!this.scheduler.has(row.id)) {
        this.apply(row, { kind: 'restarted' });
        log.warn(
          { file: row.path },
          'the outcome of this upload could not be stored (the disk was full); it will be sent again (a DUPLICATE answer is handled)',
        );
      }
    db.flush();
  }

  /**
   * Stores the task id the service gave, committed with the batch (group commit): a crash before
   * that commit sends the file again, as one during the request would, and the next upload's
   * `durable()` commits it, so at most api.concurrency answers are ever uncommitted. Kept in memory
   * until the commit succeeded (a commit that failed for lack of room: see redoAfterDiskPause).
   */
  private storeAnswer(uploading: FileRow, taskId: string) {
    this.unsavedAnswers.set(uploading.id, { row: uploading, taskId });
    this.uploadsSeen.add(uploading.id);
    this.apply(uploading, {
      kind: 'upload-answered',
      taskId,
      firstPollMs: firstPollDelayMs(this.estimateOf(uploading), this.deps.config.poll),
    });
    crashPoint('answer-stored');
    this.deps.db.durable().then(
      () => this.unsavedAnswers.delete(uploading.id),
      () => undefined, // the batch's failure pauses work (onCommitFailed); the answer is stored on resume
    );
  }

  private startDue(now: number): number {
    const { db, config } = this.deps;
    const take = (rows: FileRow[], kind: JobKind, run: (row: FileRow) => Promise<void>) => {
      for (const row of rows) if (!this.scheduler.has(row.id)) this.startJob(row, kind, run);
    };
    const spare = (kind: JobKind, limit: number) => this.scheduler.spare(kind, limit);

    take(db.dueWork.due('discovered', now, spare('stabilize', LOCAL_JOBS)), 'stabilize', (r) =>
      this.stabilize(r),
    );
    this.startUploads(now);
    take(db.dueWork.due('uploaded', now, spare('poll', config.poll.batch_size)), 'poll', (r) => this.poll(r));
    take(db.dueWork.due('done', now, spare('archive', LOCAL_JOBS)), 'archive', (r) => this.archive(r));
    take(db.dueWork.due('failed', now, spare('report', LOCAL_JOBS)), 'report', (r) => this.report(r));
    const probe = Math.min(Infinity, ...db.watches.pausedWatches().map((w) => w.probe_at));
    return Math.min(db.dueWork.nextDue(now) ?? Infinity, probe);
  }

  /** Other rows with the row's bytes: processed (reused), or being uploaded by this run or waiting for their task. */
  private sameBytes(row: FileRow): SameBytes {
    const { db } = this.deps;
    if (!row.sha256) return { doneDocumentId: null, inFlight: false };
    const done = db.files.completedWithHash(row.sha256, row.id);
    if (done) return { doneDocumentId: done.document_id!, inFlight: false };
    return {
      doneDocumentId: null,
      inFlight:
        this.uploadingHashes.has(row.sha256) || db.files.inFlightWithHash(row.sha256, row.id) !== undefined,
    };
  }

  private startUploads(now: number) {
    const { db, config } = this.deps;
    const limit = config.api.concurrency;
    /** Whether the row may go now (same bytes looked at before any await: two names of one content never both go). */
    const due = (row: FileRow): boolean => {
      if (this.scheduler.has(row.id) || this.scheduler.running('upload') >= limit) return false;
      const next = this.apply(row, { kind: 'upload-due', sameBytes: this.sameBytes(row) });
      if (next.decision.effect.kind !== 'upload') {
        if (next.row.state === 'uploaded')
          this.deps.log.info(
            { file: row.path, documentId: next.row.document_id },
            'same content already processed: not uploaded again',
          );
        return false;
      }
      if (row.sha256) this.uploadingHashes.add(row.sha256);
      return true;
    };
    const done = (rows: FileRow[]) => {
      for (const r of rows) {
        if (r.sha256) this.uploadingHashes.delete(r.sha256);
        this.run.probeOver(r);
      }
    };
    const starting = (rows: FileRow[], job: () => Promise<void>) => {
      const [first, ...others] = rows;
      for (const other of others) db.dueWork.lease(other.id);
      this.startJob(first!, 'upload', () =>
        job().finally(() => {
          done(rows);
          if (!this.stopped) for (const other of others) db.dueWork.release(other.id);
        }),
      );
    };
    // A probe goes alone; one that does not start now gives up its mark (its watch probes again when next due).
    for (const row of this.run.dueProbes(now))
      if (due(row)) starting([row], () => this.batches.upload([row]));
      else this.run.probeOver(row);
    const spare = this.scheduler.spare('upload', limit);
    if (spare <= 0) return;
    const perRequest = config.upload.batch_files;
    if (perRequest <= 1) {
      for (const row of db.dueWork.dueForUpload(now, spare))
        if (due(row)) starting([row], () => this.batches.upload([row]));
      return;
    }
    // Batched (batch-upload.ts): up to `spare` requests of up to batch_files files each.
    const ready = db.dueWork.dueForUpload(now, spare * perRequest).filter(due);
    const { jobs, left } = this.batches.group(ready, perRequest, spare);
    for (const r of left) if (r.sha256) this.uploadingHashes.delete(r.sha256);
    for (const rows of jobs) starting(rows, () => this.batches.upload(rows));
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

  /** Which route sends the file; false when it is held (no route maps it). */
  private routed(row: FileRow, watch: WatchConfig): Routed | false {
    const routing = routeFor(watch, row.rel);
    if ('held' in routing) {
      this.apply(row, { kind: 'unrouted', reason: routing.held });
      this.deps.log.warn({ file: row.path, reason: routing.held }, 'held: no route for this file');
      return false;
    }
    this.apply(row, { kind: 'routed', route: routing.route });
    return routing;
  }

  private async stabilize(row: FileRow) {
    const watch = this.watches.get(row.watch);
    if (watch && !this.routed(row, watch)) return;
    const seen = await lstat(row.path).catch(() => undefined);
    if (!seen) return void this.apply(row, { kind: 'file-vanished' });
    const first = this.apply(row, { kind: 'file-seen', size: seen.size, mtimeMs: Math.floor(seen.mtimeMs) });
    if (first.decision.effect.kind !== 'hash') return;
    const hashed = await hashFile(row.path).catch(() => undefined);
    if (!hashed) return void this.apply(first.row, { kind: 'file-vanished' });
    this.apply(first.row, { kind: 'hashed', ...hashed });
  }

  /** A file's checks before its upload: its route (a reloaded config may have changed it), still there and unchanged. */
  private async readyToGo(row: FileRow): Promise<ReadyFile | undefined> {
    const watch = this.watches.get(row.watch)!;
    const route = this.routed(row, watch);
    if (!route) return undefined;
    const info = await stat(row.path).catch(() => undefined);
    if (!info) return void this.apply(row, { kind: 'file-vanished' });
    const seen = this.apply(row, { kind: 'file-seen', size: info.size, mtimeMs: Math.floor(info.mtimeMs) });
    if (seen.decision.effect.kind !== 'upload' || this.scheduler.stopped) return undefined;
    return { row: seen.row, route };
  }

  /** One file's request (the row `uploading`, committed), and what its answer or error does. */
  private async send(uploading: FileRow, route: Routed) {
    let taskId: string;
    try {
      const answer = await this.deps.client.uploadFile(
        {
          files: [{ path: uploading.path, fileName: basename(uploading.path).normalize('NFC') }],
          template_id: route.template_id,
          folder_id: route.folder_id,
          metadata: route.metadata,
        },
        { priority: this.uploadPriority() },
      );
      taskId = answer.task_ids[0]!;
    } catch (error) {
      return this.uploadFailed(uploading, error);
    }
    this.uploadAnswered(uploading, taskId);
  }

  private uploadFailed(uploading: FileRow, error: unknown) {
    this.deps.metrics?.apiErrors.inc({ operation: 'upload_file' });
    this.run.uploadFailed(uploading.watch);
    const after = this.apply(uploading, { kind: 'upload-failed', error });
    if (after.row.state === 'stable' && after.decision.effect.kind === 'none')
      this.deps.log.warn(
        { file: uploading.path, err: describe(error), retryAt: new Date(after.row.next_at).toISOString() },
        'upload failed; will retry',
      );
  }

  private uploadAnswered(uploading: FileRow, taskId: string) {
    // Outside the request's try: a commit that fails (a full disk) is no failed upload.
    this.storeAnswer(uploading, taskId);
    this.deps.metrics?.uploads.inc();
    this.run.reachable();
    this.run.uploadAccepted(uploading.watch);
    this.deps.log.debug({ file: uploading.path, taskId }, 'uploaded');
  }

  /** An open task: its result, then the document's data and the result files, then archiving. */
  private async poll(row: FileRow) {
    const { client } = this.deps;
    const poll = this.deps.config.poll;
    const key = extractionKey(row);
    const elapsedMs = row.uploaded_at === null ? 0 : this.now() - row.uploaded_at;
    const out = this.pollsOut.get(key);
    const newestOut = out ? this.now() - Math.max(...out.values()) : undefined; // never kept empty
    const firstPollMs = firstPollDueMs(this.estimateOf(row), poll, elapsedMs, newestOut);
    let next = this.apply(row, { kind: 'poll-due', firstPollMs }).decision.effect;
    let current = row;
    let task: TaskResult | null = null;
    const seenWhole = this.uploadsSeen.has(row.id);
    if (next.kind === 'poll') {
      const first = row.poll_interval_ms === 0;
      // Only a poll whose answer will teach something holds first polls back (firstPollDueMs).
      const polls = seenWhole ? (out ?? new Map<number, number>()) : undefined; // nothing awaited since `out` was read
      if (polls) this.pollsOut.set(key, polls.set(row.id, this.now()));
      const batch = decodeBatch(row.upload_batch);
      try {
        task =
          (batch && this.batches.known(batch, row.task_id!)) ??
          (await client.fetchTasksResults({ task_id: row.task_id! }));
        // A file sent with others: the answer that is its own, on evidence (batch-upload.ts).
        const own = batch ? await this.batches.resolve(row, batch, task) : { row, task };
        if (!own) return;
        ({ row, task } = own);
      } catch (error) {
        this.deps.metrics?.apiErrors.inc({ operation: 'fetch_tasks_results' });
        return void this.apply(row, { kind: 'poll-failed', error });
      } finally {
        polls?.delete(row.id);
        if (polls?.size === 0) this.pollsOut.delete(key);
      }
      this.reachable();
      if (row.uploaded_at !== null)
        this.extraction.set(
          key,
          observePoll(
            this.estimateOf(row),
            {
              elapsedMs: this.now() - row.uploaded_at,
              final: isFinalStatus(task.status),
              first,
              previousMs: row.updated_at - row.uploaded_at,
              seenWhole,
            },
            poll,
          ),
        );
      const answered = this.apply(row, { kind: 'task', result: task });
      next = answered.decision.effect;
      if (next.kind !== 'write-results' && task.status !== 'IN PROGRESS' && answered.row.state === 'uploaded')
        this.deps.log.warn({ file: row.path, status: task.status }, 'unknown task status; still waiting');
      current = answered.row;
    }
    // Waiting no more (final, failed, timed out): its polls have nothing left to teach.
    if (current.state !== 'uploaded') this.uploadsSeen.delete(row.id);
    if (next.kind !== 'write-results') return;
    const { documentId, outcome } = next;
    const watch = this.watches.get(row.watch)!;
    // The task's answer may carry all the results need (domain/task-data.ts): one request less.
    const fromTask = dataFromTask(task, watch, templateSent(watch, row.route));
    let data = fromTask;
    try {
      data ??= await client.fetchDocumentData({ document_id: documentId });
    } catch (error) {
      this.deps.metrics?.apiErrors.inc({ operation: 'fetch_document_data' });
      return void this.apply(current, { kind: 'poll-failed', error });
    }
    let files: string[];
    try {
      current = await this.named(watch, current, data);
      const review = await this.reviews.decide(watch, current, data, task);
      if (review) current = this.apply(current, { kind: 'review-decided', ...review }).row;
    } catch (error) {
      return void this.apply(current, { kind: 'results-failed', error });
    }
    const planned = current.review_path ?? (await plannedArchive(watch, current));
    try {
      files = await this.reviews.write(watch, current, data, {
        base: current.result_base ?? undefined,
        source: row.path,
        archivedTo: planned,
        sha256: row.sha256,
        task,
        outcome,
        sourceName: basename(row.path),
        message: this.deps.db.mail.mailSourceOf(row.id),
        ...(fromTask ? { documentFrom: 'task' as const } : {}),
      });
    } catch (error) {
      const blocked = this.apply(current, { kind: 'results-failed', error });
      this.deps.log.error(
        { file: row.path, err: describe(error), output: watch.output },
        'could not write the results; will retry',
      );
      return void blocked;
    }
    if (current.result_base !== null) this.results.written(watch, current.result_base, current.id);
    const done = this.apply(current, { kind: 'results-written' }).row;
    // Archived by its own job, as a done row left by a crash is: one route to archiving.
    if (done.state === 'done') this.plannedArchives.set(done.id, planned);
    this.deps.log.debug({ file: row.path, documentId, outcome }, 'results written');
    if (done.review === null) this.emit('result-written', done, files);
  }

  /**
   * The file's own names, decided the first time the document's data is read and kept in the row:
   * a replay after a crash, the archive step after a restart, an approval and a rerun use the same
   * names. Its result base (result_name's, else "<name>.doc-<id>") is one no other file's set holds,
   * "R-1 (2)" when the first is taken, even by a file of the same bytes (the same document);
   * archive_name's path for the original (its free name is found when it moves). The date parts
   * are those of the file's discovery, not of the write.
   */
  private async named(watch: WatchConfig, row: FileRow, data: DocumentData): Promise<FileRow> {
    if (row.result_base !== null) return row;
    // What the patterns are filled with, made once and only for a watch that has one.
    let filled: Promise<NameValues> | undefined;
    const values = () =>
      (filled ??= this.results.layouts.get(data.template_id).then((layout) => ({
        date: new Date(row.discovered_at),
        templateId: data.template_id,
        templateName: layout?.name,
        documentId: data.document_id,
        originalName: basename(row.path),
        fields: new Map(generalFieldsOf(data).map((f) => [f.name, f.value])),
        missing: watch.name_missing,
      })));
    // A route's own names, or its watch's when it sends to the watch's template (route-settings.ts).
    const { archive_name, result_name } = settingsOfRoute(watch, row.route);
    const archiveRel =
      row.archive_rel ?? (archive_name ? renderName(namePattern(archive_name), await values()) : null);
    const wanted = result_name
      ? renderName(namePattern(result_name), await values())
      : resultBase(basename(row.path), data.document_id);
    const base = await this.results.freeBase(
      resultTargets(watch),
      wanted,
      { fileId: row.id, documentId: data.document_id, source: row.path },
      this.basesOfOtherFiles(watch, row, data.document_id),
    );
    return this.apply(row, { kind: 'named', archiveRel, resultBase: base }).row;
  }

  /**
   * The bases other finished files of this document (the same bytes) recorded in this output. A set
   * on disk says which document and source it is of, but a file dropped again at the same path has
   * both the same; and an older file's set may be gone from disk (pruned) while its row names it.
   * (One waiting for review is on disk in review_dir; one on its way holds its base in this process.)
   */
  private basesOfOtherFiles(watch: WatchConfig, row: FileRow, documentId: number): (base: string) => boolean {
    const bases = new Set<string>();
    for (const other of this.deps.db.files.filesOfDocuments([documentId])) {
      if (other.id === row.id || this.watches.get(other.watch)?.output !== watch.output) continue;
      bases.add(other.result_base ?? resultBase(basename(other.path), documentId));
    }
    return (base) => bases.has(base);
  }

  /**
   * A done row's original goes where on_success says: the only route to `archived`, whether the
   * results were just written or a crash left the row done.
   */
  private async archive(row: FileRow) {
    const { log, metrics } = this.deps;
    const watch = this.watches.get(row.watch)!;
    // Where the JSON written by this process says the original goes; unknown after a restart, so
    // the JSON is then corrected whatever the target.
    let planned = this.plannedArchives.get(row.id);
    // The row's `done` is committed before its original moves: a crash after the move then
    // finds the source gone and only records it (never polls and writes the results again).
    await this.deps.db.durable();
    const step = reviewStepOf(row);
    if (step === 'hold') return this.holdForReview(watch, row);
    // An approved file's original waits in review_dir: it is archived from there.
    const source = row.review_path ?? row.path;
    let movedTo: string | undefined;
    try {
      if (step === 'release') {
        const released = await this.reviews.release(watch, row, () => plannedArchive(watch, row));
        if (released) {
          planned = released.planned;
          this.emit('result-written', row, released.files);
        }
      }
      if (watch.on_success === 'move') {
        const there = await lstat(source).then(
          () => true,
          () => false,
        );
        // Gone from its place: a move a crash cut short before its commit put it in processed_dir.
        const target = there
          ? await moveInto(source, watch.processed_dir!, row.archive_rel ?? row.rel)
          : await movedInto(watch.processed_dir!, row.archive_rel ?? row.rel, {
              ino: row.ino,
              size: row.size,
              mtimeMs: row.mtime_ms,
            });
        if (there) crashPoint('original-moved');
        if (target) {
          movedTo = target;
          if (row.document_id !== null && target !== planned)
            await this.results.recordArchive(
              watch,
              basename(row.path),
              row.document_id,
              target,
              row.result_base,
            );
        }
      } else if (watch.on_success === 'delete') {
        await rm(source, { force: true });
      }
    } catch (error) {
      this.apply(row, { kind: 'archive-failed', error });
      log.warn({ file: row.path, err: describe(error) }, 'could not archive the source file; will retry');
      return;
    }
    this.plannedArchives.delete(row.id);
    const archived = this.apply(row, { kind: 'archived', path: movedTo }).row;
    metrics?.processed.inc({ outcome: row.outcome ?? 'processed' });
    this.emit('file-archived', archived);
  }

  /** Review rules fired: the original into review_dir, then the row waits in `review` for a person. */
  private async holdForReview(watch: WatchConfig, row: FileRow) {
    try {
      await this.reviews.hold(watch, row);
    } catch (error) {
      this.apply(row, { kind: 'archive-failed', error });
      this.deps.log.warn(
        { file: row.path, err: describe(error), review_dir: watch.review_dir },
        'could not move the file into the review folder; will retry',
      );
      return;
    }
    this.plannedArchives.delete(row.id);
    const held = this.apply(row, { kind: 'held-for-review' }).row;
    this.deps.log.info({ file: row.path, original: row.review_path, review: held.review }, 'held for review');
    this.emit('file-held-for-review', held);
  }

  /** A failed file moves to the failed folder with <name>.error.json beside it (failure-report.ts). */
  private async report(row: FileRow) {
    const watch = this.watches.get(row.watch);
    if (watch)
      await reportFailure(
        { db: this.deps.db, log: this.deps.log, apply: (r, o) => this.apply(r, o) },
        watch,
        row,
      );
  }
}
