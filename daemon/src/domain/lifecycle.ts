/**
 * The life of one file, as a pure function: (row, observation, now) -> (changes to the row, effect).
 * No fs, no timers, no DB: the pipeline (the shell) observes the world, asks `decide`, commits the
 * changes and carries out the effect. Task statuses and backoff come from the shared core.
 *
 *   discovered → stable → uploading → uploaded(task) → done(results written) → archived
 *        ↘          ↘           ↘             ↘
 *         failed(reason) ← ─ ─ ─ ─ ─ ─ ─ ─ ─ ─ ┘   finalized = moved to failed_dir with .error.json
 *
 * A document a review rule fires for (outputs/review.ts) goes from `done` to `review` instead of
 * `archived`: its original and results wait in review_dir until a person approves it, which takes it
 * back to `done` (approved_at set) and on to `archived` by the same archiving step.
 *
 * A file of a routed watch that no route maps is `held` (with the reason) before anything is sent;
 * a restart (a reloaded config may map it now) looks at it again.
 *
 * Run-level faults (key refused, upload target missing, service unreachable) are effects, not file
 * failures: the file goes back to `stable` and waits.
 *
 * Whether a file found at a path becomes a row at all is `isNewWork`, pure as well.
 */
import {
  DocexConnectionError,
  DocexError,
  DocexNotFoundError,
  DocexPermissionError,
  DEFAULT_RETRY,
  isFinalStatus,
  retryDelayMs,
  type TaskResult,
} from '@docex/shared';
import { intervalAfter } from './poll-timing.ts';

export type FileState =
  'discovered' | 'stable' | 'uploading' | 'uploaded' | 'done' | 'review' | 'archived' | 'failed' | 'held';
export const FILE_STATES: readonly FileState[] = [
  'held',
  'discovered',
  'stable',
  'uploading',
  'uploaded',
  'done',
  'review',
  'archived',
  'failed',
];
/** States a file is still in the pipeline with: its path is not discovered again. */
export const ACTIVE_STATES: readonly FileState[] = ['discovered', 'stable', 'uploading', 'uploaded', 'done'];
/** States a restart changes (`restarted` below); rows in the others are left as they are. */
export const RESTARTED_STATES: readonly FileState[] = ['uploading', 'discovered', 'held'];

/** The allowed transitions (a state to itself is always allowed: a field changes, the state not). */
export const TRANSITIONS: Readonly<Record<FileState, readonly FileState[]>> = {
  held: ['discovered'],
  discovered: ['stable', 'failed', 'held'],
  stable: ['discovered', 'uploading', 'uploaded', 'failed', 'held'],
  uploading: ['uploaded', 'stable', 'failed'],
  uploaded: ['done', 'failed', 'stable'],
  done: ['archived', 'review'],
  review: ['done', 'failed'],
  archived: [],
  failed: ['discovered'],
};

/** next_at of a row that waits for nothing (archived, failed and reported): never due. */
export const NEVER = 8_640_000_000_000_000;

/** The part of a state DB row the lifecycle reads and writes. */
export interface FileRow {
  id: number;
  watch: string;
  path: string;
  rel: string;
  size: number;
  mtime_ms: number;
  ino: number;
  sha256: string | null;
  state: FileState;
  outcome: 'processed' | 'duplicate' | 'failed' | null;
  task_id: string | null;
  document_id: number | null;
  attempts: number;
  /** Why the file failed, or the last transient error it is waiting out. */
  reason: string | null;
  /** A local problem holding the file back (results, archive or failure report could not be written). */
  blocked: string | null;
  /** failed rows: whether the source was moved to the failed folder with its .error.json */
  finalized: number;
  next_at: number;
  poll_interval_ms: number;
  stable_since: number;
  /** When the service accepted the upload: task_timeout_ms counts from here. */
  uploaded_at: number | null;
  discovered_at: number;
  updated_at: number;
  /** The route it is sent by (routes.ts; null: the watch's own template or folder, or not routed yet). */
  route: string | null;
  /** archive_name: where the original goes in processed_dir (null: its path in the watched folder). */
  archive_rel: string | null;
  /** result_name: the base of its result files in output (null: "<name>.doc-<id>"). */
  result_base: string | null;
  /** JSON (outputs/review.ts, HeldReview): why the document waits for a person; null: it does not. */
  review: string | null;
  /** Where its original goes (went) in review_dir, decided before it moves (null: it stays, on_success keep). */
  review_path: string | null;
  /** When a person approved it (it then moves on to processed/output). */
  approved_at: number | null;
  /** Where the original was moved in processed_dir (null: not moved, or archived before this was recorded). */
  archive_path: string | null;
  /**
   * JSON (domain/upload-batch.ts): the upload it was sent in with other files (their names, its
   * place, the task ids answered), written before the request leaves; null: sent alone.
   */
  upload_batch?: string | null;
}

export interface Policy {
  stable_ms: number;
  poll: { interval_ms: number; max_interval_ms: number; task_timeout_ms: number };
  upload: { max_attempts: number; retry_base_ms: number; retry_max_ms: number };
  /** Jitter for backoff, 0..1 (the shell passes Math.random, tests a constant). */
  random: () => number;
}

/** What the DB knows of a path: enough to tell new work from a file it holds or finished. */
export type KnownFile = Pick<FileRow, 'state' | 'size' | 'mtime_ms' | 'ino'>;

/**
 * Whether a file found at a path (a watcher event, a scan) is new work, given the row the DB has
 * for that path, if any, and the watch's on_success.
 */
export function isNewWork(
  found: { size: number; mtimeMs: number; ino: number },
  known: KnownFile | undefined,
  onSuccess: 'move' | 'delete' | 'keep',
): boolean {
  if (!known) return true;
  // Every state but archived holds the file: in flight, failed, held by routing, waiting for review.
  if (known.state !== 'archived') return false;
  // Archived: moved or deleted, so a file at this path now is new work; kept in place, only if it changed.
  if (onSuccess !== 'keep') return true;
  return (
    known.size !== found.size ||
    known.mtime_ms !== found.mtimeMs ||
    (known.ino !== 0 && known.ino !== found.ino)
  );
}

/** Other rows with the same bytes as a row due for upload. */
export interface SameBytes {
  /** The document of a row with these bytes that was processed already, else null. */
  doneDocumentId: number | null;
  /** Whether another row with these bytes is being uploaded or waits for its task. */
  inFlight: boolean;
}

export type Observation =
  /** A stable row is due for upload; what the DB and the running uploads know of its bytes. */
  | { kind: 'upload-due'; sameBytes: SameBytes }
  /**
   * An uploaded row is due: its task is polled, or its document's data read (a reused document
   * has no task). `firstPollMs`: how long after the upload a task not yet polled is polled first
   * (domain/poll-timing.ts, from what its watch's tasks took so far).
   */
  | { kind: 'poll-due'; firstPollMs: number }
  /** The file's size and mtime as seen now (during the stability wait or just before upload). */
  | { kind: 'file-seen'; size: number; mtimeMs: number }
  | { kind: 'file-vanished' }
  /** The file's hash, with size and mtime unchanged from before to after hashing. */
  | { kind: 'hashed'; sha256: string; size: number; mtimeMs: number }
  | { kind: 'upload-starting' }
  /** firstPollMs: when to poll the task first, after this answer (domain/poll-timing.ts); default poll.interval_ms. */
  | { kind: 'upload-answered'; taskId: string; firstPollMs?: number }
  | { kind: 'upload-failed'; error: unknown }
  /** Its batch's one task took another file (a service that ignores arrays): it goes again, alone. */
  | { kind: 'upload-not-taken' }
  /** The upload request it is in with other files (domain/upload-batch.ts), or null: alone. */
  | { kind: 'upload-batch'; batch: string | null; taskId?: string }
  | { kind: 'task'; result: TaskResult }
  /** fetch_tasks_results or fetch_document_data failed. */
  | { kind: 'poll-failed'; error: unknown }
  | { kind: 'results-written' }
  | { kind: 'results-failed'; error: unknown }
  /** `path`: where the original was moved (on_success: move). */
  | { kind: 'archived'; path?: string }
  | { kind: 'archive-failed'; error: unknown }
  /** Moved to the failed folder (or, if gone, its .error.json written there); `path` is where it is now. */
  | { kind: 'failure-reported'; path: string }
  | { kind: 'report-failed'; error: unknown }
  /** Which route sends the file (looked at before hashing and again before upload): `held` when none maps it. */
  | { kind: 'routed'; route: string | null }
  | { kind: 'unrouted'; reason: string }
  /** Names from the data (archive_name, result_name), decided once the document's data is read. */
  | { kind: 'named'; archiveRel: string | null; resultBase: string | null }
  /** Review rules fired (review: their JSON) or not (null), decided once the document's data is read. */
  | { kind: 'review-decided'; review: string | null; reviewPath: string | null }
  /** The original and results are in review_dir: the file waits for a person. */
  | { kind: 'held-for-review' }
  /** A person approved it (status page, `docex-sync approve`). */
  | { kind: 'approve-requested' }
  /** A person rejected it (status page, `docex-sync reject`): it goes to the failed folder with the reason. */
  | { kind: 'reject-requested'; reason: string }
  /** The daemon starts after a stop or a crash. */
  | { kind: 'restarted' }
  /** `docex-sync retry`: a failed file that was not yet moved goes through the pipeline again. */
  | { kind: 'retry-requested' };

export type Effect =
  | { kind: 'none' }
  | { kind: 'hash' }
  | { kind: 'upload' }
  /** Ask the service for the task's result. */
  | { kind: 'poll' }
  | { kind: 'write-results'; documentId: number; outcome: 'processed' | 'duplicate' }
  | { kind: 'archive' }
  | { kind: 'report-failure' }
  /** The API key was refused: stop the run (exit 3); no file changes state. */
  | { kind: 'stop-run'; error: unknown }
  /** The service says the watch's template or folder does not exist: hold the watch's uploads. */
  | { kind: 'pause-watch'; reason: string }
  /** The service could not be reached: shown as a run-level problem; the file waits. */
  | { kind: 'service-unreachable'; reason: string };

export type Changes = Partial<Omit<FileRow, 'id'>>;
export interface Decision {
  changes: Changes | undefined;
  effect: Effect;
}

/** How an error from the service counts. */
export type Fault = 'auth' | 'target-missing' | 'unreachable' | 'transient' | 'permanent';

/**
 * The client's own classification (DocexError.kind) decides, with two refinements for files: a 404
 * or a permission 403 on upload means the watch's template or folder is missing or not ours (an
 * upload names no other id), and a connection that fails or times out means the service is away.
 */
export function classify(error: unknown, operation: 'upload' | 'poll'): Fault {
  if (!(error instanceof DocexError)) return 'transient';
  if (error.kind === 'auth') return 'auth';
  if (
    operation === 'upload' &&
    (error instanceof DocexNotFoundError || error instanceof DocexPermissionError)
  )
    return 'target-missing';
  if (error instanceof DocexConnectionError) return 'unreachable';
  return error.kind === 'permanent' ? 'permanent' : 'transient';
}

export const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The core's backoff (exponential with jitter; a server-given Retry-After wins). */
function backoff(policy: Policy, attempt: number, error?: unknown): number {
  const retryAfter = (error as { retryAfterMs?: number } | undefined)?.retryAfterMs;
  return (
    retryDelayMs(
      attempt,
      {
        ...DEFAULT_RETRY,
        initialDelayMs: policy.upload.retry_base_ms,
        maxDelayMs: policy.upload.retry_max_ms,
        maxRetryAfterMs: policy.upload.retry_max_ms,
      },
      policy.random,
      retryAfter,
    ) ?? policy.upload.retry_max_ms
  );
}

/** The reason an empty file fails with (no request is sent for it). */
export const EMPTY_FILE =
  'the file is empty (0 bytes); nothing was sent to the service. Put the complete file in its place (in the failed folder) and run docex-sync retry, or drop it into the watched folder again';

const none: Effect = { kind: 'none' };
const keep = (effect: Effect = none): Decision => ({ changes: undefined, effect });
const to = (changes: Changes, effect: Effect = none): Decision => ({ changes, effect });
const fail = (reason: string): Decision =>
  to(
    { state: 'failed', outcome: 'failed', reason, finalized: 0, blocked: null, next_at: 0 },
    {
      kind: 'report-failure',
    },
  );
/** Waiting for a changed file to settle again. */
const unsettled = (size: number, mtimeMs: number, now: number, policy: Policy): Decision =>
  to({ state: 'discovered', size, mtime_ms: mtimeMs, stable_since: now, next_at: now + policy.stable_ms });

export function decide(row: FileRow, obs: Observation, now: number, policy: Policy): Decision {
  const decision = decideUnchecked(row, obs, now, policy);
  const next = decision.changes?.state;
  if (next && next !== row.state && !TRANSITIONS[row.state].includes(next))
    throw new Error(`lifecycle: ${row.state} → ${next} on ${obs.kind} is not an allowed transition`);
  return decision;
}

function decideUnchecked(row: FileRow, obs: Observation, now: number, policy: Policy): Decision {
  const { state } = row;
  switch (obs.kind) {
    case 'file-seen': {
      if (state !== 'discovered' && state !== 'stable') return keep();
      if (obs.size !== row.size || obs.mtimeMs !== row.mtime_ms)
        return unsettled(obs.size, obs.mtimeMs, now, policy);
      const settled = state === 'stable' || now - row.stable_since >= policy.stable_ms;
      // Seen here, not by the service: an empty file would cost a request to be refused.
      if (settled && obs.size === 0) return fail(EMPTY_FILE);
      if (state === 'stable') return keep({ kind: 'upload' });
      if (settled) return keep({ kind: 'hash' });
      return to({ next_at: row.stable_since + policy.stable_ms });
    }
    case 'hashed':
      if (state !== 'discovered') return keep();
      if (obs.size !== row.size || obs.mtimeMs !== row.mtime_ms)
        return unsettled(obs.size, obs.mtimeMs, now, policy);
      return to({ state: 'stable', sha256: obs.sha256, next_at: now });
    case 'file-vanished':
      if (state === 'discovered' || state === 'stable' || state === 'uploading')
        return fail('the file disappeared before it was uploaded');
      return keep();
    case 'upload-due': {
      if (state !== 'stable') return keep();
      // The same bytes, done or on their way, never reach the service twice under two names.
      const { doneDocumentId, inFlight } = obs.sameBytes;
      if (doneDocumentId !== null)
        return to({
          state: 'uploaded',
          task_id: null,
          document_id: doneDocumentId,
          outcome: 'duplicate',
          uploaded_at: now,
          next_at: now,
          reason: null,
        });
      if (inFlight) return to({ next_at: now + policy.poll.interval_ms });
      return keep({ kind: 'upload' });
    }
    case 'upload-starting':
      if (state !== 'stable') return keep();
      return to({ state: 'uploading', attempts: row.attempts + 1 }, { kind: 'upload' });
    case 'upload-answered':
      if (state !== 'uploading') return keep();
      return to({
        state: 'uploaded',
        task_id: obs.taskId,
        uploaded_at: now,
        next_at: now + Math.max(policy.poll.interval_ms, obs.firstPollMs ?? 0),
        // 0: not polled yet (the first poll may still be postponed); later() counts from the time.
        poll_interval_ms: 0,
        reason: null,
      });
    case 'poll-due': {
      if (state !== 'uploaded') return keep();
      if (row.task_id === null) {
        // The same bytes were processed already: that document's data, no task to poll.
        if (row.document_id === null) return keep();
        const outcome = row.outcome === 'duplicate' ? 'duplicate' : 'processed';
        return keep({ kind: 'write-results', documentId: row.document_id, outcome });
      }
      // Not polled yet: its watch's tasks may have been seen to take longer than this one was given.
      if (row.poll_interval_ms === 0 && row.uploaded_at !== null) {
        const until = row.uploaded_at + obs.firstPollMs;
        if (until > now) return to({ next_at: Math.min(until, deadlineOf(row, policy)) });
      }
      return keep({ kind: 'poll' });
    }
    case 'upload-failed':
      return state === 'uploading' ? uploadFailed(row, obs.error, now, policy) : keep();
    case 'upload-batch':
      return state === 'stable' || state === 'uploading' || state === 'uploaded'
        ? to({ upload_batch: obs.batch, ...(obs.taskId === undefined ? {} : { task_id: obs.taskId }) })
        : keep();
    case 'upload-not-taken':
      if (state !== 'uploaded') return keep();
      return to({
        state: 'stable',
        task_id: null,
        uploaded_at: null,
        poll_interval_ms: 0,
        next_at: now,
        upload_batch: '{"alone":true}',
        reason: 'its batched upload was taken for another file only: sent again alone',
      });
    case 'task':
      return state === 'uploaded' ? taskAnswered(row, obs.result, now, policy) : keep();
    case 'poll-failed': {
      if (state !== 'uploaded') return keep();
      const fault = classify(obs.error, 'poll');
      if (fault === 'auth') return keep({ kind: 'stop-run', error: obs.error });
      if (fault === 'permanent') {
        const what = row.task_id ? `task ${row.task_id}` : `document ${row.document_id}`;
        return fail(`${what}: ${describe(obs.error)}`);
      }
      const reason = describe(obs.error);
      if (fault === 'transient') return later(row, now, policy, { reason });
      const waiting = later(row, now, policy, { reason }, obs.error);
      return { ...waiting, effect: { kind: 'service-unreachable', reason } };
    }
    case 'results-written':
      if (state !== 'uploaded') return keep();
      return to({ state: 'done', reason: null, blocked: null, next_at: now }, { kind: 'archive' });
    case 'results-failed':
      if (state !== 'uploaded') return keep();
      return later(row, now, policy, { blocked: `could not write the results: ${describe(obs.error)}` });
    case 'archived':
      if (state !== 'done') return keep();
      return to({
        state: 'archived',
        blocked: null,
        next_at: NEVER,
        ...(obs.path !== undefined ? { archive_path: obs.path } : {}),
      });
    case 'archive-failed':
      if (state !== 'done') return keep();
      return to({
        blocked: `could not archive the source file: ${describe(obs.error)}`,
        next_at: now + backoff(policy, 0),
      });
    case 'failure-reported':
      if (state !== 'failed') return keep();
      return to({ finalized: 1, path: obs.path, blocked: null, next_at: NEVER });
    case 'report-failed':
      if (state !== 'failed' || row.finalized) return keep();
      return to({
        blocked: `could not move the file to the failed folder: ${describe(obs.error)}`,
        next_at: now + backoff(policy, 0),
      });
    case 'routed':
      if (state !== 'discovered' && state !== 'stable') return keep();
      return obs.route === row.route ? keep() : to({ route: obs.route });
    case 'unrouted':
      if (state !== 'discovered' && state !== 'stable') return keep();
      return to({ state: 'held', reason: obs.reason, route: null, next_at: NEVER });
    case 'review-decided':
      // Decided once: a replay after a crash keeps the first decision and its place in review_dir.
      if (state !== 'uploaded' || row.review !== null) return keep();
      return obs.review === null ? keep() : to({ review: obs.review, review_path: obs.reviewPath });
    case 'held-for-review':
      if (reviewStepOf(row) !== 'hold') return keep();
      return to({ state: 'review', blocked: null, next_at: NEVER });
    case 'approve-requested':
      if (state !== 'review') return keep();
      return to({ state: 'done', approved_at: now, blocked: null, next_at: now });
    case 'reject-requested':
      // The failure report step moves the original from where it waits (review_dir) to the failed
      // folder. Its review is over: retried, the file is looked at anew, its rules again.
      if (state !== 'review') return keep();
      return to({
        state: 'failed',
        reason: obs.reason,
        path: row.review_path ?? row.path,
        finalized: 0,
        review: null,
        review_path: null,
        blocked: null,
        next_at: now,
      });
    case 'named':
      if (state !== 'uploaded') return keep();
      return to({ archive_rel: obs.archiveRel, result_base: obs.resultBase });
    case 'restarted':
      // The config may map it now (a reload restarts the pipeline): it is looked at again.
      if (state === 'held')
        return to({ state: 'discovered', reason: null, stable_since: now, next_at: now + policy.stable_ms });
      // An upload cut short may or may not have reached the service: it is sent again, and a
      // DUPLICATE answer gives the first document (docs/reference/results.md, "The delivery guarantee").
      if (state === 'uploading') return to({ state: 'stable', next_at: now });
      if (state === 'discovered') return to({ stable_since: now, next_at: now + policy.stable_ms });
      return keep();
    case 'retry-requested':
      if (state !== 'failed' || row.finalized) return keep();
      return to({
        state: 'discovered',
        outcome: null,
        reason: null,
        blocked: null,
        attempts: 0,
        task_id: null,
        document_id: null,
        uploaded_at: null,
        // Settled already, unless it changed since it failed (size or mtime): no second wait.
        stable_since: now - policy.stable_ms,
        next_at: now,
      });
  }
}

/**
 * What the archiving step does with a finished file: `hold` moves it into review_dir (a rule fired,
 * nobody approved it yet), `release` takes an approved one out of review_dir on to processed/output,
 * `archive` is the usual step.
 */
export function reviewStepOf(row: FileRow): 'hold' | 'release' | 'archive' {
  if (row.state !== 'done' || row.review === null) return 'archive';
  return row.approved_at === null ? 'hold' : 'release';
}

function uploadFailed(row: FileRow, error: unknown, now: number, policy: Policy): Decision {
  const fault = classify(error, 'upload');
  // Not the file's fault: the attempt does not count, the file waits in `stable`.
  const back = { state: 'stable' as const, attempts: Math.max(0, row.attempts - 1) };
  const reason = describe(error);
  if (fault === 'auth') return to({ ...back, next_at: now }, { kind: 'stop-run', error });
  if (fault === 'target-missing')
    return to({ ...back, next_at: now, reason }, { kind: 'pause-watch', reason });
  if (fault === 'unreachable')
    return to(
      { ...back, reason, next_at: now + backoff(policy, Math.min(row.attempts, 10), error) },
      { kind: 'service-unreachable', reason },
    );
  if (fault === 'permanent') return fail(`upload refused: ${reason}`);
  if (row.attempts >= policy.upload.max_attempts)
    return fail(`upload failed ${row.attempts} times; last error: ${reason}`);
  return to({ state: 'stable', reason, next_at: now + backoff(policy, row.attempts - 1, error) });
}

function taskAnswered(row: FileRow, result: TaskResult, now: number, policy: Policy): Decision {
  const { status } = result;
  if (isFinalStatus(status)) {
    if (status === 'FAILED') return fail(`extraction failed: ${result.status_message || 'no message'}`);
    if (result.document_id == null) return fail(`task ${row.task_id} ${status} without a document id`);
    return to(
      {
        document_id: result.document_id,
        outcome: status === 'DUPLICATE' ? 'duplicate' : 'processed',
        reason: null,
      },
      {
        kind: 'write-results',
        documentId: result.document_id,
        outcome: status === 'DUPLICATE' ? 'duplicate' : 'processed',
      },
    );
  }
  const since = row.uploaded_at ?? row.updated_at;
  if (now - since >= policy.poll.task_timeout_ms)
    return fail(
      `task ${row.task_id} not finished after ${policy.poll.task_timeout_ms} ms (last status: ${status})`,
    );
  return later(row, now, policy, { reason: null });
}

const deadlineOf = (row: FileRow, policy: Policy) =>
  row.task_id && row.uploaded_at !== null ? row.uploaded_at + policy.poll.task_timeout_ms : Infinity;

/**
 * Polls back off ×1.5 (as the core's waitForTask) up to max_interval_ms, and never wait less than
 * the fixed schedule would after a poll at this moment (a first poll put late by poll-timing.ts
 * goes on from there, so no task gets more polls than the fixed schedule gives it); the task
 * timeout is never overslept.
 */
function later(row: FileRow, now: number, policy: Policy, changes: Changes, serverError?: unknown): Decision {
  const sinceUpload = row.uploaded_at === null ? 0 : now - row.uploaded_at;
  const interval = Math.min(
    policy.poll.max_interval_ms,
    Math.max(
      policy.poll.interval_ms,
      Math.round(row.poll_interval_ms * 1.5),
      intervalAfter(sinceUpload, policy.poll),
    ),
  );
  const wait = serverError ? Math.max(interval, backoff(policy, 0, serverError)) : interval;
  return to({
    ...changes,
    poll_interval_ms: interval,
    next_at: Math.min(now + wait, Math.max(now, deadlineOf(row, policy))),
  });
}
