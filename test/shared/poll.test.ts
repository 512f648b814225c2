/** waitForTask, uploadAndWait and rerunAll through the got transport, on a fake clock. */
import nock from 'nock';
import { describe, expect, test } from 'vitest';
import {
  DocexAbortError,
  DocexInputError,
  DocexServerError,
  DocexTaskTimeoutError,
  type Logger,
  type TaskResult,
  type Transport,
} from '@docex/shared';
import { NodeTransport } from '@docex/shared/node';
import { BASE, bytes, caught, fakeTimeClient, KEY } from '../support/client.ts';
import { offlineNock } from './helpers-nock.ts';
import { fakeClock } from './helpers-poll.ts';

offlineNock();

type Answer = Partial<TaskResult> & { status: string };

/** fetch_tasks_results answers per task id, in order; the last one repeats. */
function tasks(answers: Record<string, Answer[]>) {
  const polls: string[] = [];
  nock(BASE)
    .persist()
    .get('/v1/fetch_tasks_results/')
    .query(true)
    .reply((req: Request) => {
      const id = new URL(req.url).searchParams.get('task_id')!;
      polls.push(id);
      const list = answers[id];
      if (!list) return [404, { detail: 'Task not found' }];
      const answer = list.length > 1 ? list.shift()! : list[0]!;
      return [200, { status_message: '', task_id: id, ...answer }];
    });
  return polls;
}

const inProgress: Answer = { status: 'IN PROGRESS', status_message: 'working' };

function clockClient(extra: Parameters<typeof fakeTimeClient>[0] = {}) {
  const clock = fakeClock();
  const client = fakeTimeClient({ now: clock.now, sleep: clock.sleep, ...extra });
  return { client, clock };
}

function memoryLogger() {
  const lines: Array<{ level: string; obj: Record<string, unknown>; msg?: string }> = [];
  const log =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, obj: obj as Record<string, unknown>, msg });
    };
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
  return { lines, logger };
}

describe('waitForTask', () => {
  test('polls with growing pauses up to maxIntervalMs until DONE, reporting progress', async () => {
    const polls = tasks({
      t: [inProgress, inProgress, inProgress, inProgress, inProgress, { status: 'DONE' }],
    });
    const { client, clock } = clockClient();
    const progress: Array<[string, number, number]> = [];
    const result = await client.waitForTask('t', {
      intervalMs: 1000,
      maxIntervalMs: 3000,
      onProgress: (r, info) => progress.push([r.status, info.polls, info.elapsedMs]),
    });
    expect(result.status).toBe('DONE');
    expect(polls).toHaveLength(6);
    expect(clock.sleep.calls).toEqual([1000, 1500, 2250, 3000, 3000]);
    expect(progress).toEqual([
      ['IN PROGRESS', 1, 0],
      ['IN PROGRESS', 2, 1000],
      ['IN PROGRESS', 3, 2500],
      ['IN PROGRESS', 4, 4750],
      ['IN PROGRESS', 5, 7750],
      ['DONE', 6, 10750],
    ]);
  });

  test('a custom factor', async () => {
    tasks({ t: [inProgress, inProgress, inProgress, { status: 'DONE' }] });
    const { client, clock } = clockClient();
    await client.waitForTask('t', { intervalMs: 100, factor: 3 });
    expect(clock.sleep.calls).toEqual([100, 300, 900]);
  });

  test.each(['FAILED', 'DUPLICATE', 'done', 'Failed'])(
    '%s is final and returned, not thrown',
    async (status) => {
      tasks({ t: [inProgress, { status, status_message: `it is ${status}` }] });
      const { client } = clockClient();
      const result = await client.waitForTask('t');
      expect(result.status).toBe(status.toUpperCase());
      expect(result.status_message).toBe(`it is ${status}`);
    },
  );

  test('follows child_task_ids and returns every child settled', async () => {
    const polls = tasks({
      parent: [{ status: 'IN PROGRESS', child_task_ids: ['c1', 'c2', 'c1', 'parent'] }],
      c1: [inProgress, { status: 'DONE', document_id: 11 }],
      c2: [{ status: 'FAILED', status_message: 'unreadable' }],
    });
    const { client } = clockClient();
    const seen: string[] = [];
    const result = await client.waitForTask('parent', { onProgress: (_r, info) => seen.push(info.taskId) });
    expect(result.status).toBe('IN PROGRESS');
    expect(result.children?.map((c) => [c.task_id, c.status])).toEqual([
      ['c1', 'DONE'],
      ['c2', 'FAILED'],
    ]);
    expect(polls).toEqual(['parent', 'c1', 'c1', 'c2']);
    expect(seen).toEqual(['parent', 'c1', 'c1', 'c2']);
  });

  test('followChildren: false waits for the parent only', async () => {
    tasks({ p: [{ status: 'DONE', child_task_ids: ['c'] }] });
    const { client } = clockClient();
    const result = await client.waitForTask('p', { followChildren: false });
    expect(result.children).toBeUndefined();
  });

  test('an unknown status keeps polling and is logged once', async () => {
    tasks({
      t: [
        { status: 'QUEUED' },
        { status: 'QUEUED' },
        { status: 'in_progress' },
        { status: 'QUEUED' },
        { status: 'DONE' },
      ],
    });
    const { lines, logger } = memoryLogger();
    const { client } = clockClient({ logger });
    const result = await client.waitForTask('t');
    expect(result.status).toBe('DONE');
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.obj).toEqual({ taskId: 't', status: 'QUEUED' });
    expect(JSON.stringify(lines)).not.toContain(KEY);
  });

  test('times out with the last status, after one last look at the deadline', async () => {
    const polls = tasks({ t: [{ status: 'IN PROGRESS' }] });
    const { client, clock } = clockClient();
    const error = (await caught(
      client.waitForTask('t', { timeoutMs: 5000, intervalMs: 1000 }),
    )) as DocexTaskTimeoutError;
    expect(error).toBeInstanceOf(DocexTaskTimeoutError);
    expect(error.taskId).toBe('t');
    expect(error.lastStatus).toBe('IN PROGRESS');
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(
      'fetch_tasks_results: task t not finished after 5 s (last status: IN PROGRESS)',
    );
    expect(clock.sleep.calls).toEqual([1000, 1500, 2250, 250]);
    expect(clock.elapsed()).toBe(5000);
    expect(polls).toHaveLength(5);
  });

  test('aborted from a progress callback: no further poll', async () => {
    const polls = tasks({ t: [inProgress] });
    const { client } = clockClient();
    const controller = new AbortController();
    const error = await caught(
      client.waitForTask('t', {
        signal: controller.signal,
        onProgress: (_r, info) => info.polls === 2 && controller.abort(),
      }),
    );
    expect(error).toBeInstanceOf(DocexAbortError);
    expect(polls).toHaveLength(2);
  });

  test('an error of fetch_tasks_results ends the wait', async () => {
    tasks({});
    const { client } = clockClient();
    const error = await caught(client.waitForTask('missing'));
    expect(error.message).toBe('fetch_tasks_results: HTTP 404 Not Found: Task not found');
  });
});

describe('uploadAndWait', () => {
  function upload(answer: unknown) {
    nock(BASE)
      .post('/v1/upload_file/')
      .query(true)
      .reply(200, answer as string);
  }
  const files = [{ data: bytes('a'), fileName: 'a.pdf' }];

  test('a list of task ids: waits for each', async () => {
    upload({ task_ids: ['a', 'b'] });
    tasks({ a: [{ status: 'DONE' }], b: [inProgress, { status: 'DUPLICATE' }] });
    const { client } = clockClient();
    const result = await client.uploadAndWait({ files, template_id: 3 });
    expect(result.upload.task_ids).toEqual(['a', 'b']);
    expect(result.tasks.map((t) => [t.task_id, t.status])).toEqual([
      ['a', 'DONE'],
      ['b', 'DUPLICATE'],
    ]);
  });

  test('one parent task with children: the children are the tasks', async () => {
    upload({ task_id: 'p' });
    tasks({
      p: [{ status: 'IN PROGRESS', child_task_ids: ['c1', 'c2'] }],
      c1: [{ status: 'DONE' }],
      c2: [{ status: 'FAILED' }],
    });
    const { client } = clockClient();
    const result = await client.uploadAndWait({ files });
    expect(result.tasks.map((t) => [t.task_id, t.status])).toEqual([
      ['c1', 'DONE'],
      ['c2', 'FAILED'],
    ]);
  });

  test('timeoutMs is one deadline for all tasks; requestTimeoutMs bounds the upload request only', async () => {
    upload({ task_ids: ['a', 'b'] });
    tasks({ a: [inProgress, inProgress, { status: 'DONE' }], b: [inProgress] });
    const clock = fakeClock();
    const timeouts: Array<[string, number | undefined]> = [];
    const inner = new NodeTransport({ baseUrl: BASE, apiKey: KEY });
    const transport: Transport = {
      send: (request) => {
        timeouts.push([request.operation, request.timeoutMs]);
        return inner.send(request);
      },
    };
    const client = fakeTimeClient({ transport, now: clock.now, sleep: clock.sleep, timeoutMs: 30_000 });
    const error = (await caught(
      client.uploadAndWait({ files }, { timeoutMs: 4000, intervalMs: 1000, requestTimeoutMs: 600_000 }),
    )) as DocexTaskTimeoutError;
    expect(error).toBeInstanceOf(DocexTaskTimeoutError);
    expect(error.taskId).toBe('b');
    expect(clock.elapsed()).toBe(4000); // not 4 s for a and 4 s more for b
    expect(timeouts[0]).toEqual(['upload_file', 600_000]);
    expect(timeouts.slice(1).every(([op, ms]) => op === 'fetch_tasks_results' && ms === 30_000)).toBe(true);
  });
});

describe('rerunAll', () => {
  function rerunServer(failChunk?: number) {
    const bodies: Array<{ doc_ids: number[]; override_extraction: boolean }> = [];
    nock(BASE)
      .persist()
      .post('/v1/rerun_documents/')
      .reply(async (req: Request) => {
        const body = (await req.json()) as { doc_ids: number[]; override_extraction: boolean };
        bodies.push(body);
        if (bodies.length === failChunk) return [500, 'boom'];
        const [first, ...rest] = body.doc_ids;
        return [
          200,
          {
            rerun: rest.length,
            not_rerun: 1,
            rerun_doc_ids: rest,
            errors: [
              {
                error_code: 'NOT_CHANGED',
                error_type: 'validation',
                message: 'unchanged',
                id_type: 'document_id',
                id: first,
              },
            ],
          },
        ];
      });
    return bodies;
  }

  test('1,234 ids (with duplicates) go out as 3 chunks of at most 500, answers merged', async () => {
    const bodies = rerunServer();
    const ids = Array.from({ length: 1234 }, (_, i) => i + 1);
    const { client } = clockClient();
    const chunks: number[] = [];
    const result = await client.rerunAll([...ids, ...ids.slice(0, 100), 7], {
      override_extraction: true,
      onChunk: (info) => chunks.push(info.doc_ids.length),
    });
    expect(bodies.map((b) => b.doc_ids.length)).toEqual([500, 500, 234]);
    expect(bodies.every((b) => b.override_extraction === true)).toBe(true);
    expect(bodies.flatMap((b) => b.doc_ids)).toEqual(ids);
    expect(chunks).toEqual([500, 500, 234]);
    expect(result).toMatchObject({ rerun: 1231, not_rerun: 3, chunks: 3, failedChunks: [] });
    expect(result.rerun_doc_ids).toHaveLength(1231);
    expect(result.errors.map((e) => e.id)).toEqual([1, 501, 1001]);
  });

  test('a failing chunk is recorded while the others go on', async () => {
    const bodies = rerunServer(2);
    const ids = Array.from({ length: 1234 }, (_, i) => i + 1);
    const { client } = clockClient();
    const result = await client.rerunAll(ids);
    expect(bodies).toHaveLength(3); // 500 on a rerun is not retried: the chunk may have been dispatched
    expect(result.chunks).toBe(3);
    expect(result.rerun).toBe(499 + 233);
    expect(result.not_rerun).toBe(2);
    expect(result.failedChunks).toHaveLength(1);
    expect(result.failedChunks[0]!.doc_ids).toEqual(ids.slice(500, 1000));
    expect(result.failedChunks[0]!.error).toBeInstanceOf(DocexServerError);
    expect(bodies.every((b) => b.override_extraction === false)).toBe(true);
  });

  test('chunkSize is honoured up to the limit of 500', async () => {
    const bodies = rerunServer();
    const { client } = clockClient();
    await client.rerunAll(
      Array.from({ length: 450 }, (_, i) => i + 1),
      { chunkSize: 200 },
    );
    expect(bodies.map((b) => b.doc_ids.length)).toEqual([200, 200, 50]);
    bodies.length = 0;
    await client.rerunAll(
      Array.from({ length: 700 }, (_, i) => i + 1),
      { chunkSize: 5000 },
    );
    expect(bodies.map((b) => b.doc_ids.length)).toEqual([500, 200]);
  });

  test('no ids: nothing sent; numeric strings are ids; other values refused before sending', async () => {
    const bodies = rerunServer();
    const { client } = clockClient();
    await expect(client.rerunAll([])).resolves.toEqual({
      rerun: 0,
      not_rerun: 0,
      rerun_doc_ids: [],
      errors: [],
      chunks: 0,
      failedChunks: [],
    });
    await client.rerunAll([1, '1', '2'] as unknown as number[]);
    expect(bodies.map((b) => b.doc_ids)).toEqual([[1, 2]]);
    const error = await caught(client.rerunAll([1, 2.5, 3]));
    expect(error).toBeInstanceOf(DocexInputError);
    expect(error.message).toBe('rerun_documents: doc_ids must be integers (got 2.5)');
    expect(bodies).toHaveLength(1);
  });

  test('an abort stops the run and is thrown', async () => {
    const bodies = rerunServer();
    const { client } = clockClient();
    const controller = new AbortController();
    const error = await caught(
      client.rerunAll(
        Array.from({ length: 1500 }, (_, i) => i + 1),
        { signal: controller.signal, onChunk: () => controller.abort() },
      ),
    );
    expect(error).toBeInstanceOf(DocexAbortError);
    expect(bodies).toHaveLength(1);
  });
});
