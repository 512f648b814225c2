/** The file lifecycle as a pure function, driven with a fake clock: every state, every observation. */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY,
  DocexApiError,
  DocexAuthenticationError,
  DocexBadRequestError,
  DocexConnectionError,
  DocexInputError,
  DocexNotFoundError,
  DocexPayloadTooLargeError,
  DocexPermissionError,
  DocexRateLimitError,
  DocexResponseShapeError,
  DocexServerError,
  DocexTimeoutError,
  retryDelayMs,
  type TaskResult,
} from '@docex/shared';
import {
  classify,
  decide,
  FILE_STATES,
  EMPTY_FILE,
  isNewWork,
  NEVER,
  RESTARTED_STATES,
  reviewStepOf,
  TRANSITIONS,
  type FileRow,
  type FileState,
  type Observation,
  type Policy,
} from '../../../daemon/src/domain/lifecycle.ts';

const policy: Policy = {
  stable_ms: 2000,
  poll: { interval_ms: 1000, max_interval_ms: 10_000, task_timeout_ms: 60_000 },
  upload: { max_attempts: 3, retry_base_ms: 500, retry_max_ms: 8000 },
  random: () => 0.5,
};
const T0 = 1_700_000_000_000;

const row = (state: FileState, extra: Partial<FileRow> = {}): FileRow => ({
  id: 1,
  watch: '/in',
  path: '/in/a.pdf',
  rel: 'a.pdf',
  size: 100,
  mtime_ms: 5000,
  ino: 7,
  sha256: state === 'discovered' ? null : 'abc',
  state,
  outcome: null,
  task_id: ['uploaded', 'done', 'archived'].includes(state) ? 't-1' : null,
  document_id: null,
  attempts: ['discovered', 'stable'].includes(state) ? 0 : 1,
  reason: null,
  blocked: null,
  finalized: 0,
  next_at: T0,
  poll_interval_ms: 1000,
  stable_since: T0,
  uploaded_at: ['uploaded', 'done', 'archived'].includes(state) ? T0 : null,
  discovered_at: T0,
  updated_at: T0,
  route: null,
  archive_rel: null,
  review: null,
  review_path: null,
  approved_at: null,
  result_base: null,
  archive_path: null,
  ...extra,
});

const response = (status: number) => ({ status, headers: {}, body: { detail: 'x' } });
const api = <C extends typeof DocexApiError>(
  Cls: C,
  status: number,
  operation = 'upload_file',
  retryAfterMs?: number,
) => new Cls({ operation, ...response(status), serverMessage: 'server says no', retryAfterMs });
const errors = {
  auth401: api(DocexAuthenticationError, 401),
  forbidden403: api(DocexPermissionError, 403),
  badKey403: api(DocexAuthenticationError, 403),
  notFound404: api(DocexNotFoundError, 404),
  tooLarge413: api(DocexPayloadTooLargeError, 413),
  bad400: api(DocexBadRequestError, 400),
  rateLimited429: api(DocexRateLimitError, 429, 'upload_file', 3000),
  server503: api(DocexServerError, 503),
  refused: new DocexConnectionError('upload_file', 'connect ECONNREFUSED', { code: 'ECONNREFUSED' }),
  timeout: new DocexTimeoutError('upload_file', 'timed out after 120000 ms', { code: 'ETIMEDOUT' }),
  input: new DocexInputError('upload_file', 'file is empty'),
  shape: new DocexResponseShapeError('upload_file', 'task_id', 'missing', {}),
  plain: new Error('EIO'),
};
const task = (status: string, extra: Partial<TaskResult> = {}): TaskResult =>
  ({ status, status_message: '', document_id: null, ...extra }) as TaskResult;

/** One of each observation, with each HTTP error class and each task status. */
const observations: Observation[] = [
  { kind: 'file-seen', size: 100, mtimeMs: 5000 },
  { kind: 'file-seen', size: 101, mtimeMs: 6000 },
  { kind: 'file-vanished' },
  { kind: 'hashed', sha256: 'abc', size: 100, mtimeMs: 5000 },
  { kind: 'hashed', sha256: 'abc', size: 120, mtimeMs: 5000 },
  { kind: 'upload-due', sameBytes: { doneDocumentId: null, inFlight: false } },
  { kind: 'upload-due', sameBytes: { doneDocumentId: 9, inFlight: false } },
  { kind: 'upload-due', sameBytes: { doneDocumentId: null, inFlight: true } },
  { kind: 'poll-due', firstPollMs: 1000 },
  { kind: 'poll-due', firstPollMs: 30_000 },
  { kind: 'upload-starting' },
  { kind: 'upload-answered', taskId: 't-2' },
  ...Object.values(errors).map((error): Observation => ({ kind: 'upload-failed', error })),
  ...['IN PROGRESS', 'DONE', 'DUPLICATE', 'FAILED', 'QUEUED'].flatMap((s): Observation[] => [
    { kind: 'task', result: task(s) },
    { kind: 'task', result: task(s, { document_id: 5 }) },
  ]),
  ...Object.values(errors).map((error): Observation => ({ kind: 'poll-failed', error })),
  { kind: 'results-written' },
  {
    kind: 'results-failed',
    error: Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }),
  },
  { kind: 'archived' },
  { kind: 'archive-failed', error: new Error('EBUSY') },
  { kind: 'failure-reported', path: '/failed/a.pdf' },
  { kind: 'report-failed', error: new Error('ENOSPC') },
  { kind: 'restarted' },
  { kind: 'retry-requested' },
  { kind: 'routed', route: 'Supplier A' },
  { kind: 'unrouted', reason: 'subfolder "Misc" is mapped by no route' },
  { kind: 'named', archiveRel: '2026/ACME/R-1.pdf', resultBase: 'ACME/R-1' },
  { kind: 'review-decided', review: '{"reasons":[]}', reviewPath: '/review/a.pdf' },
  { kind: 'review-decided', review: null, reviewPath: null },
  { kind: 'held-for-review' },
  { kind: 'approve-requested' },
  { kind: 'reject-requested', reason: 'wrong supplier' },
  { kind: 'upload-not-taken' },
  { kind: 'upload-batch', batch: null },
];

describe('lifecycle: the transition table', () => {
  it('every observation in every state gives an allowed transition, and every allowed transition happens', () => {
    const seen = new Set<string>();
    for (const state of FILE_STATES) {
      for (const extra of [{ finalized: 0 }, { finalized: 1 }, { review: '{"reasons":[]}' }]) {
        for (const obs of observations) {
          const d = decide(row(state, extra), obs, T0 + 5000, policy);
          const next = d.changes?.state ?? state;
          expect(
            next === state || TRANSITIONS[state].includes(next),
            `${state} --${obs.kind}--> ${next}`,
          ).toBe(true);
          if (next !== state) seen.add(`${state}→${next}`);
        }
      }
    }
    const allowed = FILE_STATES.flatMap((s) => TRANSITIONS[s].map((n) => `${s}→${n}`));
    expect([...seen].sort()).toEqual(allowed.sort());
  });

  it('archived is final: nothing moves it', () => {
    for (const obs of observations)
      expect(decide(row('archived'), obs, T0, policy).changes?.state).toBeUndefined();
  });
});

describe('lifecycle: routing by subfolder', () => {
  it('a file no route maps is held with the reason, waits for nothing, and is looked at again after a restart', () => {
    const held = decide(row('discovered'), { kind: 'unrouted', reason: 'no route' }, T0, policy);
    expect(held.changes).toEqual({ state: 'held', reason: 'no route', route: null, next_at: NEVER });
    expect(decide(row('stable'), { kind: 'unrouted', reason: 'no route' }, T0, policy).changes?.state).toBe(
      'held',
    );
    const again = decide(row('held'), { kind: 'restarted' }, T0, policy);
    expect(again.changes).toMatchObject({
      state: 'discovered',
      reason: null,
      next_at: T0 + policy.stable_ms,
    });
    // Nothing else moves a held file (no upload with a guessed template).
    for (const obs of observations.filter((o) => o.kind !== 'restarted'))
      expect(decide(row('held'), obs, T0, policy).changes?.state, obs.kind).toBeUndefined();
  });

  it('the route is recorded once (no write when it is unchanged)', () => {
    expect(decide(row('discovered'), { kind: 'routed', route: 'A' }, T0, policy).changes).toEqual({
      route: 'A',
    });
    expect(
      decide(row('stable', { route: 'A' }), { kind: 'routed', route: 'A' }, T0, policy).changes,
    ).toBeUndefined();
    expect(decide(row('uploaded'), { kind: 'routed', route: 'A' }, T0, policy).changes).toBeUndefined();
  });
});

describe('lifecycle: waiting for a file to settle', () => {
  it('a growing file restarts the wait; an unchanged one is hashed after stable_ms, then is stable', () => {
    const r = row('discovered');
    const grew = decide(r, { kind: 'file-seen', size: 150, mtimeMs: 7000 }, T0 + 500, policy);
    expect(grew.changes).toMatchObject({
      size: 150,
      mtime_ms: 7000,
      stable_since: T0 + 500,
      next_at: T0 + 2500,
    });
    const early = decide(r, { kind: 'file-seen', size: 100, mtimeMs: 5000 }, T0 + 1999, policy);
    expect(early).toEqual({ changes: { next_at: T0 + 2000 }, effect: { kind: 'none' } });
    const due = decide(r, { kind: 'file-seen', size: 100, mtimeMs: 5000 }, T0 + 2000, policy);
    expect(due).toEqual({ changes: undefined, effect: { kind: 'hash' } });
    const hashed = decide(r, { kind: 'hashed', sha256: 'f00', size: 100, mtimeMs: 5000 }, T0 + 2100, policy);
    expect(hashed.changes).toMatchObject({ state: 'stable', sha256: 'f00', next_at: T0 + 2100 });
    const changedWhileHashing = decide(
      r,
      { kind: 'hashed', sha256: 'f00', size: 101, mtimeMs: 5000 },
      T0 + 2100,
      policy,
    );
    expect(changedWhileHashing.changes).toMatchObject({ state: 'discovered', stable_since: T0 + 2100 });
  });

  it('a stable file that changed before its upload goes back to waiting; an unchanged one is uploaded', () => {
    const changed = decide(row('stable'), { kind: 'file-seen', size: 1, mtimeMs: 9 }, T0, policy);
    expect(changed.changes).toMatchObject({ state: 'discovered', size: 1, mtime_ms: 9 });
    expect(decide(row('stable'), { kind: 'file-seen', size: 100, mtimeMs: 5000 }, T0, policy).effect).toEqual(
      {
        kind: 'upload',
      },
    );
    const starting = decide(row('stable'), { kind: 'upload-starting' }, T0, policy);
    expect(starting).toEqual({ changes: { state: 'uploading', attempts: 1 }, effect: { kind: 'upload' } });
  });

  it('an empty file fails once settled, with its report and no upload; one still growing from 0 waits', () => {
    const empty = row('discovered', { size: 0, mtime_ms: 5000 });
    const early = decide(empty, { kind: 'file-seen', size: 0, mtimeMs: 5000 }, T0 + 1999, policy);
    expect(early.changes?.state).toBeUndefined();
    const settled = decide(empty, { kind: 'file-seen', size: 0, mtimeMs: 5000 }, T0 + 2000, policy);
    expect(settled.changes).toMatchObject({ state: 'failed', outcome: 'failed', reason: EMPTY_FILE });
    expect(settled.effect).toEqual({ kind: 'report-failure' });
    const grew = decide(empty, { kind: 'file-seen', size: 10, mtimeMs: 6000 }, T0 + 2000, policy);
    expect(grew.changes).toMatchObject({ state: 'discovered', size: 10 });
    // Emptied after it was hashed: refused before the upload, not sent.
    const emptied = decide(
      row('stable', { size: 0 }),
      { kind: 'file-seen', size: 0, mtimeMs: 5000 },
      T0,
      policy,
    );
    expect(emptied.changes).toMatchObject({ state: 'failed', reason: EMPTY_FILE });
    expect(EMPTY_FILE).toMatch(/^the file is empty \(0 bytes\); nothing was sent/);
  });

  it('a file removed before its upload fails with a reason and gets its report (error.json)', () => {
    for (const state of ['discovered', 'stable', 'uploading'] as const) {
      const d = decide(row(state), { kind: 'file-vanished' }, T0, policy);
      expect(d.changes).toMatchObject({
        state: 'failed',
        finalized: 0,
        reason: 'the file disappeared before it was uploaded',
      });
      expect(d.effect).toEqual({ kind: 'report-failure' });
    }
    expect(decide(row('uploaded'), { kind: 'file-vanished' }, T0, policy).changes).toBeUndefined();
  });

  it('the same bytes: reused when done (before waiting for one in flight), waited for while in flight, else uploaded', () => {
    const due = (doneDocumentId: number | null, inFlight: boolean, state: FileState = 'stable') =>
      decide(row(state), { kind: 'upload-due', sameBytes: { doneDocumentId, inFlight } }, T0, policy);
    for (const inFlight of [false, true]) {
      const reuse = due(42, inFlight);
      expect(reuse.changes).toEqual({
        state: 'uploaded',
        task_id: null,
        document_id: 42,
        outcome: 'duplicate',
        uploaded_at: T0,
        next_at: T0,
        reason: null,
      });
      expect(reuse.effect).toEqual({ kind: 'none' });
    }
    const wait = due(null, true);
    expect(wait.changes).toEqual({ next_at: T0 + 1000 });
    expect(wait.effect).toEqual({ kind: 'none' });
    expect(due(null, false)).toEqual({ changes: undefined, effect: { kind: 'upload' } });
    // Only a stable row is sent: one that went back to settling, or on its way already, is not.
    for (const state of FILE_STATES.filter((s) => s !== 'stable'))
      expect(due(null, false, state), state).toEqual({ changes: undefined, effect: { kind: 'none' } });
  });
});

describe('lifecycle: new work', () => {
  const found = { size: 100, mtimeMs: 5000, ino: 7 };
  const known = (state: FileState, extra: Partial<FileRow> = {}) => row(state, extra);

  it('a path the DB has no row for is new work; one it holds, failed or held is not', () => {
    expect(isNewWork(found, undefined, 'move')).toBe(true);
    for (const state of FILE_STATES.filter((s) => s !== 'archived'))
      for (const onSuccess of ['move', 'delete', 'keep'] as const)
        expect(isNewWork(found, known(state), onSuccess), `${state}, ${onSuccess}`).toBe(false);
  });

  it('after archiving: a file at a moved or deleted path is new; a kept one only once it changed', () => {
    expect(isNewWork(found, known('archived'), 'move')).toBe(true);
    expect(isNewWork(found, known('archived'), 'delete')).toBe(true);
    expect(isNewWork(found, known('archived'), 'keep')).toBe(false);
    expect(isNewWork({ ...found, size: 101 }, known('archived'), 'keep')).toBe(true);
    expect(isNewWork({ ...found, mtimeMs: 5001 }, known('archived'), 'keep')).toBe(true);
    expect(isNewWork({ ...found, ino: 8 }, known('archived'), 'keep')).toBe(true);
    // An inode not recorded (0: a row from before inodes were kept) is no change.
    expect(isNewWork({ ...found, ino: 8 }, known('archived', { ino: 0 }), 'keep')).toBe(false);
  });
});

describe('lifecycle: a due uploaded row', () => {
  const uploaded = (extra: Partial<FileRow> = {}) => row('uploaded', extra);
  const due = (r: FileRow, firstPollMs = 1000, now = T0 + 1000) =>
    decide(r, { kind: 'poll-due', firstPollMs }, now, policy);

  it('a task is polled; a reused document (no task) goes straight to its results, with its outcome', () => {
    expect(due(uploaded())).toEqual({ changes: undefined, effect: { kind: 'poll' } });
    const reused = uploaded({ task_id: null, document_id: 42, outcome: 'duplicate' });
    expect(due(reused).effect).toEqual({ kind: 'write-results', documentId: 42, outcome: 'duplicate' });
    expect(due({ ...reused, outcome: null }).effect).toEqual({
      kind: 'write-results',
      documentId: 42,
      outcome: 'processed',
    });
    expect(due(uploaded({ task_id: null, document_id: null }))).toEqual({
      changes: undefined,
      effect: { kind: 'none' },
    });
    for (const state of FILE_STATES.filter((s) => s !== 'uploaded'))
      expect(due(row(state)).effect, state).toEqual({ kind: 'none' });
  });

  it('a first poll waits until firstPollMs after the upload (never past the task timeout); later polls do not', () => {
    const fresh = uploaded({ poll_interval_ms: 0 });
    expect(due(fresh, 10_000).changes).toEqual({ next_at: T0 + 10_000 });
    expect(due(fresh, 10_000).effect).toEqual({ kind: 'none' });
    expect(due(fresh, 10_000_000).changes).toEqual({ next_at: T0 + policy.poll.task_timeout_ms });
    expect(due(fresh, 1000).effect).toEqual({ kind: 'poll' });
    expect(due(uploaded({ poll_interval_ms: 1500 }), 10_000).effect).toEqual({ kind: 'poll' });
  });
});

describe('lifecycle: upload errors', () => {
  const failUpload = (error: unknown, extra: Partial<FileRow> = {}) =>
    decide(row('uploading', extra), { kind: 'upload-failed', error }, T0, policy);

  it('401 and a credential 403 stop the run; the file goes back to stable and the attempt does not count', () => {
    for (const error of [errors.auth401, errors.badKey403]) {
      const d = failUpload(error);
      expect(d.effect).toEqual({ kind: 'stop-run', error });
      expect(d.changes).toMatchObject({ state: 'stable', attempts: 0, next_at: T0 });
    }
  });

  it('404 or a permission 403 on upload (template or folder missing, or not ours) pauses the watch; the file stays queued', () => {
    for (const error of [errors.notFound404, errors.forbidden403]) {
      const d = failUpload(error);
      expect(d.effect).toMatchObject({ kind: 'pause-watch', reason: expect.stringMatching(/40[34]/) });
      expect(d.changes).toMatchObject({ state: 'stable', attempts: 0 });
    }
  });

  it('an unreachable service is a run-level problem: the file waits with backoff and never fails for it', () => {
    for (const error of [errors.refused, errors.timeout]) {
      const d = failUpload(error, { attempts: 50 });
      expect(d.effect).toMatchObject({ kind: 'service-unreachable' });
      expect(d.changes).toMatchObject({ state: 'stable', attempts: 49 });
      expect(d.changes!.next_at).toBeGreaterThan(T0);
    }
  });

  it('a permanent refusal (4xx, bad input, unusable answer) fails the file at once with the reason', () => {
    for (const error of [errors.tooLarge413, errors.bad400, errors.input, errors.shape]) {
      const d = failUpload(error);
      expect(d.changes).toMatchObject({ state: 'failed', outcome: 'failed' });
      expect(d.changes!.reason).toBe(`upload refused: ${error.message}`);
      expect(d.effect).toEqual({ kind: 'report-failure' });
    }
  });

  it('5xx is retried with the core backoff until max_attempts, then the file fails', () => {
    const first = failUpload(errors.server503, { attempts: 1 });
    const expected = retryDelayMs(0, { ...DEFAULT_RETRY, initialDelayMs: 500, maxDelayMs: 8000 }, () => 0.5)!;
    expect(first.changes).toMatchObject({ state: 'stable', next_at: T0 + expected });
    const second = failUpload(errors.server503, { attempts: 2 });
    expect(second.changes!.next_at! - T0).toBe(2 * expected);
    const last = failUpload(errors.server503, { attempts: 3 });
    expect(last.changes).toMatchObject({ state: 'failed' });
    expect(last.changes!.reason).toMatch(/^upload failed 3 times; last error: upload_file: HTTP 503/);
  });

  it("429's Retry-After is honoured", () => {
    expect(failUpload(errors.rateLimited429, { attempts: 1 }).changes!.next_at).toBe(T0 + 3000);
  });
});

describe('lifecycle: tasks', () => {
  const uploadedAt = T0;
  const polled = (result: TaskResult, now: number, extra: Partial<FileRow> = {}) =>
    decide(row('uploaded', { uploaded_at: uploadedAt, ...extra }), { kind: 'task', result }, now, policy);

  it('the upload answer stores the task and when it was accepted', () => {
    const d = decide(row('uploading'), { kind: 'upload-answered', taskId: 't-9' }, T0 + 10, policy);
    expect(d.changes).toMatchObject({
      state: 'uploaded',
      task_id: 't-9',
      uploaded_at: T0 + 10,
      next_at: T0 + 1010,
    });
  });

  it('DONE and DUPLICATE with a document: write the results; FAILED and a missing id fail the file', () => {
    expect(polled(task('DONE', { document_id: 5 }), T0).effect).toEqual({
      kind: 'write-results',
      documentId: 5,
      outcome: 'processed',
    });
    expect(polled(task('DUPLICATE', { document_id: 5 }), T0).effect).toMatchObject({ outcome: 'duplicate' });
    const failed = polled(task('FAILED', { status_message: 'unreadable scan' }), T0);
    expect(failed.changes).toMatchObject({ state: 'failed', reason: 'extraction failed: unreadable scan' });
    expect(polled(task('DONE'), T0).changes).toMatchObject({
      state: 'failed',
      reason: 'task t-1 DONE without a document id',
    });
  });

  it('IN PROGRESS and unknown statuses wait, ×1.5 each time up to max_interval_ms', () => {
    let r = row('uploaded', { uploaded_at: uploadedAt, poll_interval_ms: 1000 });
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      const now = T0 + 1000 * (i + 1);
      const d = decide(r, { kind: 'task', result: task(i % 2 ? 'QUEUED' : 'IN PROGRESS') }, now, policy);
      waits.push(d.changes!.next_at! - now);
      r = { ...r, ...d.changes, updated_at: now };
    }
    expect(waits).toEqual([1500, 2250, 3375, 5063, 7595, 10_000, 10_000, 10_000]);
  });

  it('task_timeout_ms counts from the upload, not from the last poll (which moves every time)', () => {
    let r = row('uploaded', { uploaded_at: uploadedAt });
    let now = T0;
    let d;
    for (;;) {
      now = Math.max(now + 1, r.next_at);
      d = decide(r, { kind: 'task', result: task('IN PROGRESS') }, now, policy);
      if (d.changes?.state === 'failed') break;
      r = { ...r, ...d.changes, updated_at: now };
      expect(r.next_at).toBeLessThanOrEqual(uploadedAt + 60_000); // never sleeps past the deadline
    }
    expect(now).toBe(uploadedAt + 60_000);
    expect(d.changes!.reason).toBe('task t-1 not finished after 60000 ms (last status: IN PROGRESS)');
  });

  it('poll errors: 401 and a credential 403 stop the run without touching the file; transient waits; permanent fails', () => {
    const poll = (error: unknown) =>
      decide(row('uploaded'), { kind: 'poll-failed', error }, T0 + 100, policy);
    for (const error of [errors.auth401, errors.badKey403])
      expect(poll(error)).toEqual({ changes: undefined, effect: { kind: 'stop-run', error } });
    expect(poll(errors.forbidden403).changes).toMatchObject({ state: 'failed' });
    expect(poll(errors.server503).changes).toMatchObject({
      next_at: T0 + 1600,
      reason: expect.stringContaining('503'),
    });
    expect(poll(errors.refused).effect).toMatchObject({ kind: 'service-unreachable' });
    const gone = poll(api(DocexNotFoundError, 404, 'fetch_tasks_results'));
    expect(gone.changes).toMatchObject({
      state: 'failed',
      reason: expect.stringMatching(/^task t-1: fetch_tasks_results: HTTP 404/),
    });
  });
});

describe('lifecycle: results, archiving, failure reports', () => {
  it('results that cannot be written hold the file back with the reason, visible; written ones make it done', () => {
    const blocked = decide(
      row('uploaded', { document_id: 5 }),
      { kind: 'results-failed', error: new Error('ENOSPC: no space left') },
      T0,
      policy,
    );
    expect(blocked.changes).toMatchObject({ blocked: 'could not write the results: ENOSPC: no space left' });
    expect(blocked.changes!.state).toBeUndefined();
    const written = decide(row('uploaded', { blocked: 'x' }), { kind: 'results-written' }, T0, policy);
    expect(written).toEqual({
      changes: { state: 'done', reason: null, blocked: null, next_at: T0 },
      effect: { kind: 'archive' },
    });
  });

  it('archived and reported rows rest: never due again', () => {
    expect(decide(row('done'), { kind: 'archived' }, T0, policy).changes).toMatchObject({
      state: 'archived',
      next_at: NEVER,
    });
    const failed = row('failed', { reason: 'r' });
    expect(decide(failed, { kind: 'failure-reported', path: '/f/a.pdf' }, T0, policy).changes).toEqual({
      finalized: 1,
      path: '/f/a.pdf',
      blocked: null,
      next_at: NEVER,
    });
    const stuck = decide(failed, { kind: 'report-failed', error: new Error('EROFS') }, T0, policy);
    expect(stuck.changes!.blocked).toContain('EROFS');
    expect(stuck.changes!.next_at).toBeGreaterThan(T0);
  });
});

describe('lifecycle: the review queue', () => {
  const held = '{"reasons":[{"rule":"fraud"}]}';
  it('the decision is taken once, when the data is read: a replay keeps the first one and its place', () => {
    const first = decide(
      row('uploaded'),
      { kind: 'review-decided', review: held, reviewPath: '/review/a.pdf' },
      T0,
      policy,
    );
    expect(first.changes).toEqual({ review: held, review_path: '/review/a.pdf' });
    const replay = { ...row('uploaded'), ...first.changes } as FileRow;
    expect(
      decide(replay, { kind: 'review-decided', review: held, reviewPath: '/review/a (2).pdf' }, T0, policy)
        .changes,
    ).toBeUndefined();
    expect(
      decide(row('uploaded'), { kind: 'review-decided', review: null, reviewPath: null }, T0, policy).changes,
    ).toBeUndefined();
  });

  it('a held document rests in review until approved; approved, it is archived by the usual step', () => {
    const done = row('done', { review: held });
    expect(reviewStepOf(done)).toBe('hold');
    expect(reviewStepOf(row('done'))).toBe('archive');
    const waiting = decide(done, { kind: 'held-for-review' }, T0, policy);
    expect(waiting.changes).toEqual({ state: 'review', blocked: null, next_at: NEVER });
    // Not held twice, and a document without reasons is never held.
    expect(decide(row('done'), { kind: 'held-for-review' }, T0, policy).changes).toBeUndefined();
    const inReview = { ...done, ...waiting.changes } as FileRow;
    expect(decide(inReview, { kind: 'restarted' }, T0, policy).changes).toBeUndefined();
    const approved = decide(inReview, { kind: 'approve-requested' }, T0 + 7, policy);
    expect(approved.changes).toEqual({ state: 'done', approved_at: T0 + 7, blocked: null, next_at: T0 + 7 });
    const back = { ...inReview, ...approved.changes } as FileRow;
    expect(reviewStepOf(back)).toBe('release');
    expect(decide(back, { kind: 'held-for-review' }, T0, policy).changes).toBeUndefined();
    expect(decide(back, { kind: 'archived' }, T0, policy).changes).toMatchObject({ state: 'archived' });
    // Approving what is not waiting changes nothing.
    for (const state of ['done', 'archived', 'failed'] as const)
      expect(decide(row(state), { kind: 'approve-requested' }, T0, policy).changes).toBeUndefined();
  });

  it('a rejected document fails from where it waits, with the reason; its review is over', () => {
    const inReview = row('review', { review: held, review_path: '/r/review/a.pdf' });
    const rejected = decide(
      inReview,
      { kind: 'reject-requested', reason: 'rejected: not ours' },
      T0 + 3,
      policy,
    );
    expect(rejected.changes).toEqual({
      state: 'failed',
      reason: 'rejected: not ours',
      path: '/r/review/a.pdf',
      finalized: 0,
      review: null,
      review_path: null,
      blocked: null,
      next_at: T0 + 3,
    });
    for (const state of ['done', 'archived', 'failed'] as const)
      expect(
        decide(row(state), { kind: 'reject-requested', reason: 'x' }, T0, policy).changes,
      ).toBeUndefined();
  });
});

describe('lifecycle: crash recovery and retry', () => {
  it('RESTARTED_STATES are the states a restart changes (the shell reads only those at start)', () => {
    const changed = FILE_STATES.filter(
      (state) => decide(row(state), { kind: 'restarted' }, T0 + 5000, policy).changes !== undefined,
    );
    expect([...changed].sort()).toEqual([...RESTARTED_STATES].sort());
  });

  it('after a restart an upload cut short is sent again; a settling file waits stable_ms anew', () => {
    expect(decide(row('uploading'), { kind: 'restarted' }, T0 + 9, policy).changes).toEqual({
      state: 'stable',
      next_at: T0 + 9,
    });
    expect(decide(row('discovered'), { kind: 'restarted' }, T0 + 9, policy).changes).toEqual({
      stable_since: T0 + 9,
      next_at: T0 + 2009,
    });
    for (const state of ['stable', 'uploaded', 'done', 'archived', 'failed'] as const)
      expect(decide(row(state), { kind: 'restarted' }, T0, policy).changes).toBeUndefined();
  });

  it('retry puts a failed file (not yet moved) back at the start; a moved one is left to the CLI', () => {
    const d = decide(
      row('failed', { reason: 'x', attempts: 3, outcome: 'failed' }),
      { kind: 'retry-requested' },
      T0,
      policy,
    );
    // Settled already: an unchanged file is hashed at once, without a second stability wait.
    expect(d.changes).toMatchObject({
      state: 'discovered',
      attempts: 0,
      outcome: null,
      reason: null,
      stable_since: T0 - policy.stable_ms,
      next_at: T0,
    });
    const back = { ...row('failed'), ...d.changes } as FileRow;
    expect(decide(back, { kind: 'file-seen', size: 100, mtimeMs: 5000 }, T0, policy).effect).toEqual({
      kind: 'hash',
    });
    // Changed while it lay in the failed folder: it waits to settle like a new file.
    expect(decide(back, { kind: 'file-seen', size: 300, mtimeMs: 9000 }, T0, policy).changes).toMatchObject({
      state: 'discovered',
      next_at: T0 + policy.stable_ms,
    });
    expect(
      decide(row('failed', { finalized: 1 }), { kind: 'retry-requested' }, T0, policy).changes,
    ).toBeUndefined();
  });
});

describe('classify', () => {
  it('sorts every error class', () => {
    expect(classify(errors.auth401, 'upload')).toBe('auth');
    expect(classify(errors.badKey403, 'poll')).toBe('auth');
    expect(classify(errors.forbidden403, 'upload')).toBe('target-missing');
    expect(classify(errors.forbidden403, 'poll')).toBe('permanent');
    expect(classify(errors.notFound404, 'upload')).toBe('target-missing');
    expect(classify(errors.notFound404, 'poll')).toBe('permanent');
    expect(classify(errors.refused, 'upload')).toBe('unreachable');
    expect(classify(errors.timeout, 'poll')).toBe('unreachable');
    expect(classify(errors.server503, 'upload')).toBe('transient');
    expect(classify(errors.rateLimited429, 'upload')).toBe('transient');
    expect(classify(errors.tooLarge413, 'upload')).toBe('permanent');
    expect(classify(errors.input, 'upload')).toBe('permanent');
    expect(classify(errors.shape, 'poll')).toBe('permanent');
    expect(classify(errors.plain, 'poll')).toBe('transient');
  });
});
