/**
 * Retries through the real got transport with an injected sleep: which operations are retried on
 * what, the backoff, Retry-After and its cap, maxRetries, and error.retryable.
 */
import { Readable } from 'node:stream';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nock from 'nock';
import { afterAll, describe, expect, test } from 'vitest';
import {
  DEFAULT_RETRY,
  DocexApiError,
  DocexConnectionError,
  DocexError,
  DocexRateLimitError,
  DocexServerError,
  DocexTimeoutError,
  OPERATIONS,
  retryDelayMs,
  type Logger,
  type OperationName,
} from '@docex/shared';
import { BASE, bytes, caught, fakeTimeClient, KEY, localServer, recordingSleep } from '../support/client.ts';
import { offlineNock } from './helpers-nock.ts';
import { fakeClock } from './helpers-poll.ts';

offlineNock();

const dir = mkdtempSync(join(tmpdir(), 'docex-retry-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pdf = join(dir, 'a.pdf');
writeFileSync(pdf, 'PDF CONTENT');

/** One call per operation, with the method and path nock must answer. */
const CALLS: Record<OperationName, { input?: Record<string, unknown>; method: string; path: RegExp }> = {
  check_api_key: { method: 'POST', path: /check_api_key/ },
  upload_file: { input: { files: [{ path: pdf }] }, method: 'POST', path: /upload_file/ },
  fetch_tasks_results: { input: { task_id: 't' }, method: 'GET', path: /fetch_tasks_results/ },
  upload_csv: {
    input: { agent_id: 1, file: { data: bytes('a,b'), fileName: 'x.csv' } },
    method: 'POST',
    path: /upload_csv/,
  },
  fetch_all_folders: { method: 'GET', path: /fetch_all_folders/ },
  fetch_folder: { input: { folder_id: 1 }, method: 'GET', path: /fetch_folder/ },
  create_folder: { input: { name: 'f' }, method: 'POST', path: /create_folder/ },
  update_folder: { input: { folder_id: 1, name: 'f' }, method: 'PUT', path: /update_folder/ },
  delete_folder: { input: { folder_id: 1 }, method: 'DELETE', path: /delete_folder/ },
  fetch_template: { input: { template_id: 1 }, method: 'GET', path: /fetch_template/ },
  create_template: { input: { folder_id: 1, name: 't' }, method: 'POST', path: /create_template/ },
  update_template: { input: { template_id: 1, name: 't' }, method: 'PUT', path: /update_template/ },
  delete_template: { input: { template_id: 1 }, method: 'DELETE', path: /delete_template/ },
  fetch_field: { input: { field_id: 1 }, method: 'GET', path: /fetch_field/ },
  create_field: {
    input: { template_id: 1, name: 'n', type: 'General fields', format: 'text' },
    method: 'POST',
    path: /create_field/,
  },
  update_field: { input: { field_id: 1, name: 'n' }, method: 'PUT', path: /update_field/ },
  delete_field: { input: { field_id: 1 }, method: 'DELETE', path: /delete_field/ },
  fetch_instruction: { input: { instruction_id: 1 }, method: 'GET', path: /fetch_instruction/ },
  create_instruction: {
    input: { template_id: 1, content: 'c', type: 'Line fields' },
    method: 'POST',
    path: /create_instruction/,
  },
  update_instruction: {
    input: { instruction_id: 1, content: 'c' },
    method: 'PUT',
    path: /update_instruction/,
  },
  delete_instruction: { input: { instruction_id: 1 }, method: 'DELETE', path: /delete_instruction/ },
  fetch_documents: { method: 'GET', path: /fetch_documents/ },
  fetch_document_data: { input: { document_id: 1 }, method: 'GET', path: /fetch_document_data/ },
  fetch_file: { input: { document_id: 1 }, method: 'GET', path: /fetch_file/ },
  fetch_raw_text: { input: { document_id: 1 }, method: 'GET', path: /fetch_raw_text/ },
  fetch_files_batch: { input: { document_ids: [1] }, method: 'POST', path: /fetch_files_batch/ },
  delete_doc: { input: { doc_id: 1 }, method: 'DELETE', path: /delete_doc/ },
  rerun_documents: { input: { doc_ids: [1] }, method: 'POST', path: /rerun_documents/ },
};

/** The write operations that may act twice if repeated. */
const NOT_IDEMPOTENT = [
  'upload_file',
  'upload_csv',
  'create_folder',
  'create_template',
  'create_field',
  'create_instruction',
  'rerun_documents',
];

test('the operations that are not retried on 5xx are exactly the creating ones', () => {
  const unsafe = Object.values(OPERATIONS)
    .filter((op) => !op.idempotent)
    .map((op) => op.name)
    .sort();
  expect(unsafe).toEqual([...NOT_IDEMPOTENT].sort());
});

function callOf(client: ReturnType<typeof fakeTimeClient>, name: OperationName, options = {}) {
  return (client.call as (n: string, i: unknown, o: unknown) => Promise<unknown>)(
    name,
    CALLS[name].input,
    options,
  );
}

/** Answers each attempt in turn; counts what arrived. */
function script(name: OperationName, replies: Array<[number, unknown?, Record<string, string>?] | Error>) {
  const { method, path } = CALLS[name];
  const seen = { count: 0, bodies: [] as string[] };
  let scope = nock(BASE);
  for (const reply of replies) {
    const interceptor = scope.intercept(path, method).query(true);
    scope =
      reply instanceof Error
        ? interceptor.replyWithError(reply)
        : interceptor.reply(async (req: Request) => {
            seen.count++;
            seen.bodies.push(await req.text());
            return [reply[0], (reply[1] ?? '') as string, reply[2] ?? {}];
          });
  }
  return seen;
}

const refused = () => Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
const ok = (name: OperationName): [number, unknown] => [200, OK_BODIES[name] ?? {}];
const OK_BODIES: Partial<Record<OperationName, unknown>> = {
  upload_file: { task_id: 't' },
  fetch_tasks_results: { status: 'DONE', status_message: '' },
  fetch_all_folders: { folders: [] },
  fetch_folder: { id: 1 },
  create_folder: { id: 1 },
  update_folder: { id: 1 },
  fetch_template: { id: 1, name: 't', folder_id: 1 },
  create_template: { id: 1, name: 't', folder_id: 1 },
  update_template: { id: 1, name: 't', folder_id: 1 },
  fetch_field: { id: 1, template_id: 1 },
  create_field: { id: 1, template_id: 1 },
  update_field: { id: 1, template_id: 1 },
  fetch_instruction: { id: 1, template_id: 1 },
  create_instruction: { id: 1, template_id: 1 },
  update_instruction: { id: 1, template_id: 1 },
  fetch_documents: [],
  fetch_document_data: { document_id: 1 },
  fetch_raw_text: { text: '' },
  rerun_documents: { rerun: 1, not_rerun: 0 },
};

describe('which failures are retried, per operation', () => {
  const names = Object.keys(CALLS) as OperationName[];

  test.each(names)('%s: 503 then 200', async (name) => {
    const idempotent = !NOT_IDEMPOTENT.includes(name);
    const seen = script(name, idempotent ? [[503], ok(name)] : [[503]]);
    const client = fakeTimeClient();
    const result = callOf(client, name);
    if (idempotent) {
      await result;
      expect(seen.count).toBe(2);
      expect(client.sleep.calls).toEqual([375]);
    } else {
      const error = (await caught(result)) as DocexServerError;
      expect(error).toBeInstanceOf(DocexServerError);
      expect(error.retryable).toBe(true); // worth trying later, but the client did not: it may have acted
      expect(seen.count).toBe(1);
      expect(client.sleep.calls).toEqual([]);
    }
  });

  test.each(names)('%s: 429 then 200 (the server refused without acting)', async (name) => {
    const seen = script(name, [[429, { detail: 'slow' }, { 'retry-after': '2' }], ok(name)]);
    const client = fakeTimeClient();
    await callOf(client, name);
    expect(seen.count).toBe(2);
    expect(client.sleep.calls).toEqual([2000]);
  });

  test.each(names)('%s: connection refused then 200 (the request was never sent)', async (name) => {
    const seen = script(name, [refused(), ok(name)]);
    const client = fakeTimeClient();
    await callOf(client, name);
    expect(seen.count).toBe(1);
    expect(client.sleep.calls).toEqual([375]);
  });

  test.each(names)('%s: connection reset', async (name) => {
    const idempotent = !NOT_IDEMPOTENT.includes(name);
    const seen = script(name, idempotent ? [reset(), ok(name)] : [reset()]);
    const client = fakeTimeClient();
    const result = callOf(client, name);
    if (idempotent) {
      await result;
      expect(seen.count).toBe(1);
      expect(client.sleep.calls).toEqual([375]);
    } else {
      const error = await caught(result);
      expect(error).toBeInstanceOf(DocexConnectionError);
      expect((error as DocexConnectionError).code).toBe('ECONNRESET');
      expect(client.sleep.calls).toEqual([]);
    }
  });

  test('408 is retried for idempotent operations', async () => {
    const seen = script('fetch_folder', [[408], ok('fetch_folder')]);
    await callOf(fakeTimeClient(), 'fetch_folder');
    expect(seen.count).toBe(2);
  });

  test('4xx other than 408 and 429 are never retried', async () => {
    for (const status of [400, 401, 403, 404, 409, 413, 422]) {
      const seen = script('fetch_folder', [[status]]);
      const client = fakeTimeClient();
      const error = (await caught(callOf(client, 'fetch_folder'))) as DocexApiError;
      expect(error.status).toBe(status);
      expect(error.retryable).toBe(false);
      expect(seen.count).toBe(1);
      expect(client.sleep.calls).toEqual([]);
    }
  });
});

describe('uploads', () => {
  test('a path upload sent again after a 429 carries the whole file again', async () => {
    const seen = script('upload_file', [
      [429, '', { 'retry-after': '1' }],
      [200, { task_id: 't' }],
    ]);
    const client = fakeTimeClient();
    await client.uploadFile({ files: [{ path: pdf }] });
    expect(seen.count).toBe(2);
    expect(seen.bodies[0]).toContain('PDF CONTENT');
    expect(seen.bodies[1]).toContain('PDF CONTENT');
    expect(seen.bodies[1]!.length).toBe(seen.bodies[0]!.length);
  });

  test('an upload from a one-shot stream is never retried, not even on 429 or connection refused', async () => {
    for (const first of [
      [429, '', { 'retry-after': '1' }] as [number, string, Record<string, string>],
      refused(),
    ]) {
      script('upload_file', [first, [200, { task_id: 't' }]]);
      const client = fakeTimeClient();
      const error = await caught(
        client.uploadFile({ files: [{ stream: Readable.from([Buffer.from('x')]), fileName: 'x.pdf' }] }),
      );
      expect(error).toBeInstanceOf(first instanceof Error ? DocexConnectionError : DocexRateLimitError);
      expect(client.sleep.calls).toEqual([]);
      nock.cleanAll();
    }
  });

  test('an upload that times out is not retried', async () => {
    nock.enableNetConnect('127.0.0.1');
    let seen = 0;
    const s = await localServer((req) => {
      seen++;
      req.resume();
    });
    try {
      // A timeout while still connecting is retried, rightly (nothing reached the server): at load
      // 17 a 100-ms limit ran out there and the upload was retried after 375 ms. A second is far
      // above a local connect on a busy machine, so the timeout comes with the request sent.
      const client = fakeTimeClient({ baseUrl: s.url, timeoutMs: 1000 });
      const error = await caught(client.uploadFile({ files: [{ path: pdf }] }));
      expect(error).toBeInstanceOf(DocexTimeoutError);
      expect(client.sleep.calls).toEqual([]);
      // It reaches the server at most once (close() waits for the connection the timeout ended).
      await s.close();
      expect(seen).toBeLessThanOrEqual(1);
    } finally {
      await s.close().catch(() => undefined);
      nock.disableNetConnect();
    }
  });
});

describe('backoff, Retry-After and its cap', () => {
  test('exponential backoff with jitter, capped at maxDelayMs', async () => {
    script('fetch_folder', [[500], [502], [503], [504], ok('fetch_folder')]);
    const client = fakeTimeClient({ retry: { initialDelayMs: 1000, factor: 3, maxDelayMs: 5000 } });
    await callOf(client, 'fetch_folder');
    // ceiling = min(5000, 1000 * 3^n); delay = ceiling/2 + random * ceiling/2, random = 0.5
    expect(client.sleep.calls).toEqual([750, 2250, 3750, 3750]);
  });

  test('jitter stays between half and all of the ceiling', () => {
    const policy = { ...DEFAULT_RETRY, initialDelayMs: 1000, factor: 2 };
    expect(retryDelayMs(2, policy, () => 0)).toBe(2000);
    expect(retryDelayMs(2, policy, () => 0.999999)).toBe(4000);
    expect(retryDelayMs(20, policy, () => 1)).toBe(DEFAULT_RETRY.maxDelayMs);
  });

  test('Retry-After: 0 or a past date is no wait: the backoff applies, so a busy server is not hammered', () => {
    const policy = { ...DEFAULT_RETRY, initialDelayMs: 1000, factor: 2 };
    expect(retryDelayMs(1, policy, () => 0, 0)).toBe(1000);
    expect(retryDelayMs(1, policy, () => 0, -5000)).toBe(1000);
    expect(retryDelayMs(1, policy, () => 0, 1)).toBe(1);
  });

  test('Retry-After in seconds, as an HTTP date, and retry-after-ms', async () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    script('fetch_folder', [
      [429, '', { 'retry-after': '3' }],
      [429, '', { 'retry-after': 'Tue, 01 Jan 2030 00:00:10 GMT' }],
      [429, '', { 'retry-after-ms': '250' }],
      [503, '', { 'retry-after': '1' }],
      ok('fetch_folder'),
    ]);
    const client = fakeTimeClient({ now: () => now });
    await callOf(client, 'fetch_folder');
    expect(client.sleep.calls).toEqual([3000, 10_000, 250, 1000]);
  });

  test('a 429 without Retry-After backs off like any retry', async () => {
    script('create_folder', [[429], [429], ok('create_folder')]);
    const client = fakeTimeClient();
    await callOf(client, 'create_folder');
    expect(client.sleep.calls).toEqual([375, 750]);
  });

  test('a 429 slows the whole client: later calls wait too, longer with each round of 429s, until an answer is not a 429', async () => {
    const clock = fakeClock(0);
    const client = fakeTimeClient({ ...clock, retry: { maxRetries: 0, initialDelayMs: 1000 } });
    script('fetch_folder', [[429], [429], [429], ok('fetch_folder'), ok('fetch_folder')]);
    await caught(callOf(client, 'fetch_folder')); // round 1: 750 ms (half fixed, random 0.5)
    expect(clock.sleep.calls).toEqual([]);
    await caught(callOf(client, 'fetch_folder')); // waits round 1 out; 429 again, so round 2 doubles
    await caught(callOf(client, 'fetch_folder')); // waits round 2 out (1500); round 3
    await callOf(client, 'fetch_folder'); // waits round 3 out (3000), and is answered: the streak ends
    expect(clock.sleep.calls).toEqual([750, 1500, 3000]);
    await callOf(client, 'fetch_folder');
    expect(clock.sleep.calls).toEqual([750, 1500, 3000]);
  });

  test('429s of requests already in flight during a cool-down do not escalate it', async () => {
    const clock = fakeClock(0);
    const client = fakeTimeClient({ ...clock, retry: { maxRetries: 0, initialDelayMs: 1000 } });
    script('fetch_folder', [[429], [429], [429], ok('fetch_folder')]);
    await Promise.all([1, 2, 3].map(() => caught(callOf(client, 'fetch_folder'))));
    await callOf(client, 'fetch_folder');
    expect(clock.sleep.calls).toEqual([750]);
  });

  test('a wall-clock step during a cool-down neither stretches nor cuts it: durations run on the steady clock', async () => {
    let wall = Date.parse('2030-01-01T00:00:00Z');
    let steady = 0;
    const sleep = recordingSleep((ms) => {
      wall += ms;
      steady += ms;
    });
    const client = fakeTimeClient({
      now: () => wall,
      elapsed: () => steady,
      sleep,
      retry: { maxRetries: 0, initialDelayMs: 1000 },
    });
    script('fetch_folder', [[429], ok('fetch_folder'), [429], ok('fetch_folder')]);
    await caught(callOf(client, 'fetch_folder')); // a cool-down of 750 ms begins
    wall -= 3_600_000; // the wall clock is stepped an hour back
    await callOf(client, 'fetch_folder');
    expect(sleep.calls).toEqual([750]); // not an hour and 750 ms
    await caught(callOf(client, 'fetch_folder')); // the streak ended: 750 ms again
    wall += 3_600_000; // and an hour forward
    await callOf(client, 'fetch_folder');
    expect(sleep.calls).toEqual([750, 750]); // not skipped
  });

  test("a Retry-After above the cap is the caller's error, not a wait for every call", async () => {
    const clock = fakeClock(0);
    const client = fakeTimeClient({ ...clock, retry: { maxRetries: 0 } });
    script('fetch_folder', [[429, '', { 'retry-after': '3600' }], ok('fetch_folder')]);
    await caught(callOf(client, 'fetch_folder'));
    await callOf(client, 'fetch_folder');
    expect(clock.sleep.calls).toEqual([]);
  });

  test('a Retry-After above maxRetryAfterMs goes to the caller at once, with retryAfterMs', async () => {
    const seen = script('fetch_folder', [[429, { detail: 'quota' }, { 'retry-after': '3600' }]]);
    const client = fakeTimeClient();
    const error = (await caught(callOf(client, 'fetch_folder'))) as DocexRateLimitError;
    expect(error).toBeInstanceOf(DocexRateLimitError);
    expect(error.retryAfterMs).toBe(3_600_000);
    expect(error.retryable).toBe(true);
    expect(seen.count).toBe(1);
    expect(client.sleep.calls).toEqual([]);

    script('fetch_folder', [[503, '', { 'retry-after': '5' }]]);
    const strict = fakeTimeClient({ retry: { maxRetryAfterMs: 1000 } });
    const e503 = (await caught(callOf(strict, 'fetch_folder'))) as DocexServerError;
    expect(e503.retryAfterMs).toBe(5000);
    expect(strict.sleep.calls).toEqual([]);
  });
});

describe('maxRetries', () => {
  test('client-wide, per call, and 0', async () => {
    const seen = script(
      'fetch_folder',
      Array.from({ length: 10 }, (): [number] => [500]),
    );
    const client = fakeTimeClient({ retry: { maxRetries: 2 } });
    await caught(callOf(client, 'fetch_folder'));
    expect(seen.count).toBe(3);
    expect(client.sleep.calls).toHaveLength(2);

    seen.count = 0;
    await caught(callOf(client, 'fetch_folder', { retry: { maxRetries: 5 } }));
    expect(seen.count).toBe(6);

    seen.count = 0;
    await caught(callOf(client, 'fetch_folder', { retry: { maxRetries: 0 } }));
    expect(seen.count).toBe(1);
  });

  test('the default is 4 retries', async () => {
    const seen = script(
      'fetch_folder',
      Array.from({ length: 10 }, (): [number] => [502]),
    );
    const client = fakeTimeClient();
    const error = await caught(callOf(client, 'fetch_folder'));
    expect(error).toBeInstanceOf(DocexServerError);
    expect(seen.count).toBe(5);
    expect(client.sleep.calls).toEqual([375, 750, 1500, 3000]);
  });
});

describe('rateLimitBudgetMs', () => {
  test('a 429 goes on past maxRetries while the retry starts within the budget, then reaches the caller', async () => {
    const clock = fakeClock(0);
    const seen = script(
      'upload_file',
      Array.from({ length: 20 }, (): [number, unknown, Record<string, string>] => [
        429,
        '',
        { 'retry-after': '10' },
      ]),
    );
    const client = fakeTimeClient({ ...clock, retry: { maxRetries: 1, rateLimitBudgetMs: 60_000 } });
    const error = await caught(callOf(client, 'upload_file'));
    expect(error).toBeInstanceOf(DocexRateLimitError);
    // Attempts at 0, 10, ..., 60 s: the retry at 70 s would start after the budget.
    expect(seen.count).toBe(7);
    expect(clock.sleep.calls).toEqual([10_000, 10_000, 10_000, 10_000, 10_000, 10_000]);
    nock.cleanAll();
  });

  test('a 429 within the budget ends in the answer; other failures still stop at maxRetries', async () => {
    const clock = fakeClock(0);
    const client = fakeTimeClient({ ...clock, retry: { maxRetries: 1, rateLimitBudgetMs: 60_000 } });
    script('upload_file', [...Array.from({ length: 5 }, (): [number] => [429]), ok('upload_file')]);
    await expect(callOf(client, 'upload_file')).resolves.toMatchObject({ task_id: 't' });

    const seen = script(
      'fetch_folder',
      Array.from({ length: 5 }, (): [number] => [503]),
    );
    await caught(callOf(client, 'fetch_folder'));
    expect(seen.count).toBe(2);
    nock.cleanAll();
  });
});

describe('logging', () => {
  test('each retry is logged as a warning with the operation, attempt and delay, without the key', async () => {
    script('fetch_folder', [[503, `down for ${KEY}`], ok('fetch_folder')]);
    const lines: Array<{ level: string; obj: Record<string, unknown>; msg?: string }> = [];
    const log =
      (level: string) =>
      (obj: object, msg?: string): void => {
        lines.push({ level, obj: obj as Record<string, unknown>, msg });
      };
    const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
    await callOf(fakeTimeClient({ logger }), 'fetch_folder');
    const warn = lines.filter((l) => l.level === 'warn');
    expect(warn).toHaveLength(1);
    expect(warn[0]!.obj).toMatchObject({ operation: 'fetch_folder', attempt: 1, delayMs: 375 });
    expect(JSON.stringify(lines)).not.toContain(KEY);
    expect(lines.filter((l) => l.level === 'debug').map((l) => l.obj.status)).toEqual([503, 200]);
  });
});

test('every error class reports retryable as documented', async () => {
  const client = fakeTimeClient({ retry: { maxRetries: 0 } });
  const cases: Array<[Array<[number, unknown?, Record<string, string>?] | Error>, boolean]> = [
    [[[400]], false],
    [[[404]], false],
    [[[422]], false],
    [[[429]], true],
    [[[500]], true],
    [[refused()], true],
    [[[200, { id: 'not an id' }]], false],
  ];
  for (const [replies, retryable] of cases) {
    script('fetch_folder', replies);
    const error = (await caught(callOf(client, 'fetch_folder'))) as DocexError;
    expect(error).toBeInstanceOf(DocexError);
    expect(error.retryable, error.message).toBe(retryable);
    nock.cleanAll();
  }
});

describe('a delete retried after an uncertain failure', () => {
  test('404 on the retry means the first attempt deleted it: success', async () => {
    script('delete_doc', [[503], [404, { detail: 'Document not found' }]]);
    await expect(callOf(fakeTimeClient(), 'delete_doc')).resolves.toBeUndefined();
    script('delete_instruction', [reset(), [404]]);
    await expect(callOf(fakeTimeClient(), 'delete_instruction')).resolves.toBeUndefined();
    script('delete_folder', [[504], [404]]);
    await expect(callOf(fakeTimeClient(), 'delete_folder')).resolves.toBe('');
  });

  test('404 at the first attempt, or after a failure that cannot have acted, stays an error', async () => {
    script('delete_doc', [[404]]);
    expect(await caught(callOf(fakeTimeClient(), 'delete_doc'))).toBeInstanceOf(DocexApiError);
    script('delete_doc', [[429], [404]]);
    expect(await caught(callOf(fakeTimeClient(), 'delete_doc'))).toBeInstanceOf(DocexApiError);
    script('delete_doc', [refused(), [404]]);
    expect(await caught(callOf(fakeTimeClient(), 'delete_doc'))).toBeInstanceOf(DocexApiError);
    // not a delete: a fetch that 404s on its retry is a 404
    script('fetch_folder', [[503], [404]]);
    expect(await caught(callOf(fakeTimeClient(), 'fetch_folder'))).toBeInstanceOf(DocexApiError);
  });
});
