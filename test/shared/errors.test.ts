/**
 * Every error path: HTTP statuses, BatchFileErrorResponse codes, connection failures, timeouts,
 * aborts, response shapes and refused input. Every message names the operation; none exposes the key.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import nock from 'nock';
import { afterEach, describe, expect, test } from 'vitest';
import {
  DocexAbortError,
  DocexApiError,
  DocexAuthenticationError,
  DocexBadRequestError,
  DocexConflictError,
  DocexConnectionError,
  DocexConnectionRefusedError,
  DocexError,
  DocexInputError,
  DocexNotFoundError,
  DocexPayloadTooLargeError,
  DocexPermissionError,
  DocexRateLimitError,
  DocexResponseShapeError,
  DocexServerError,
  DocexTimeoutError,
  DocexValidationError,
  isAuthenticationMessage,
  readAll,
  retryAfterMs,
  type Logger,
} from '@docex/shared';
import {
  BASE,
  caught,
  closedPortUrl,
  everythingOf,
  fakeTimeClient,
  KEY,
  localServer,
  nodeClient,
  recordingSleep,
  type LocalServer,
} from '../support/client.ts';

const servers: LocalServer[] = [];
async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const s = await localServer(handler);
  servers.push(s);
  return s;
}

afterEach(async () => {
  nock.cleanAll();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const noRetry = () => nodeClient({ retry: { maxRetries: 0 } });

function expectNamed(error: Error, operation: string) {
  expect(error).toBeInstanceOf(DocexError);
  expect((error as DocexError).operation).toBe(operation);
  expect(error.message.startsWith(`${operation}: `)).toBe(true);
  expect(everythingOf(error)).not.toContain(KEY);
}

describe('HTTP statuses', () => {
  const cases: Array<{
    status: number;
    body: unknown;
    headers?: Record<string, string>;
    Class: typeof DocexApiError;
    message: string;
    retryable: boolean;
  }> = [
    {
      status: 400,
      body: { detail: 'bad folder' },
      Class: DocexBadRequestError,
      message: 'HTTP 400 Bad Request: bad folder',
      retryable: false,
    },
    {
      status: 401,
      body: { detail: 'Invalid API key' },
      Class: DocexAuthenticationError,
      message: 'HTTP 401 Unauthorized: Invalid API key',
      retryable: false,
    },
    {
      status: 403,
      body: { detail: 'Not authenticated' },
      Class: DocexAuthenticationError,
      message: 'HTTP 403 Forbidden: Not authenticated',
      retryable: false,
    },
    {
      status: 403,
      body: { detail: 'Invalid authentication credentials' },
      Class: DocexAuthenticationError,
      message: 'HTTP 403 Forbidden: Invalid authentication credentials',
      retryable: false,
    },
    {
      status: 403,
      body: { detail: 'You do not have permission to access this folder' },
      Class: DocexPermissionError,
      message: 'HTTP 403 Forbidden: You do not have permission to access this folder',
      retryable: false,
    },
    {
      status: 403,
      body: { detail: 'This API key is not allowed to access folder 1' },
      Class: DocexPermissionError,
      message: 'HTTP 403 Forbidden: This API key is not allowed to access folder 1',
      retryable: false,
    },
    { status: 403, body: '', Class: DocexPermissionError, message: 'HTTP 403 Forbidden', retryable: false },
    {
      status: 404,
      body: { detail: 'Folder not found' },
      Class: DocexNotFoundError,
      message: 'HTTP 404 Not Found: Folder not found',
      retryable: false,
    },
    {
      status: 409,
      body: { message: 'name already used' },
      Class: DocexConflictError,
      message: 'HTTP 409 Conflict: name already used',
      retryable: false,
    },
    {
      status: 413,
      body: '<html>Request Entity Too Large</html>',
      Class: DocexPayloadTooLargeError,
      message: 'HTTP 413 Payload Too Large: <html>Request Entity Too Large</html>',
      retryable: false,
    },
    {
      status: 422,
      body: {
        detail: [
          {
            loc: ['query', 'folder_id'],
            msg: 'Input should be a valid integer',
            type: 'int_parsing',
            input: 'x',
          },
          { loc: ['body', 'name'], msg: 'Field required', type: 'missing' },
        ],
      },
      Class: DocexValidationError,
      message:
        'HTTP 422 Unprocessable Entity: query.folder_id: Input should be a valid integer; name: Field required',
      retryable: false,
    },
    {
      status: 429,
      body: { detail: 'slow down' },
      headers: { 'retry-after': '7' },
      Class: DocexRateLimitError,
      message: 'HTTP 429 Too Many Requests: slow down',
      retryable: true,
    },
    {
      status: 500,
      body: 'Internal Server Error',
      Class: DocexServerError,
      message: 'HTTP 500 Internal Server Error: Internal Server Error',
      retryable: true,
    },
    { status: 502, body: '', Class: DocexServerError, message: 'HTTP 502 Bad Gateway', retryable: true },
    {
      status: 503,
      body: { error: { message: 'maintenance' } },
      Class: DocexServerError,
      message: 'HTTP 503 Service Unavailable: maintenance',
      retryable: true,
    },
    {
      status: 418,
      body: 'teapot',
      Class: DocexApiError,
      message: 'HTTP 418 Error: teapot',
      retryable: false,
    },
  ];

  test.each(cases)('$status $message', async ({ status, body, headers, Class, message, retryable }) => {
    nock(BASE)
      .get('/v1/fetch_folder/')
      .query({ folder_id: '1' })
      .reply(status, body as string, headers);
    const error = await caught(noRetry().fetchFolder({ folder_id: 1 }));
    expect(error).toBeInstanceOf(Class);
    expect(error.constructor).toBe(Class);
    expect(error.message).toBe(`fetch_folder: ${message}`);
    expectNamed(error, 'fetch_folder');
    const api = error as DocexApiError;
    expect(api.status).toBe(status);
    expect(api.retryable).toBe(retryable);
    expect(api.kind).toBe(
      retryable ? 'transient' : Class === DocexAuthenticationError ? 'auth' : 'permanent',
    );
    expect(Object.getOwnPropertyDescriptor(api, 'retryable')).toBeUndefined(); // derived, never overwritten
    expect(api.body).toEqual(body);
  });

  test('422 detail entries are readable as loc: msg', async () => {
    nock(BASE)
      .post('/v1/create_field/')
      .query(true)
      .reply(422, {
        detail: [
          {
            loc: ['body', 'format'],
            msg: "Input should be 'text' or 'number'",
            type: 'enum',
            ctx: { expected: '...' },
          },
          { loc: ['body', 'position', 0], msg: 'bad', type: 'x' },
          { loc: [], msg: 'whole body', type: 'x' },
          { nonsense: true },
        ],
      });
    const error = (await caught(
      noRetry().createField({ template_id: 2, name: 'x', type: 'General fields', format: 'text' }),
    )) as DocexValidationError;
    expect(error).toBeInstanceOf(DocexValidationError);
    expect(error.issues).toEqual([
      "format: Input should be 'text' or 'number'",
      'position.0: bad',
      'whole body',
    ]);
    expect(error.detail[0]).toMatchObject({
      loc: ['body', 'format'],
      type: 'enum',
      ctx: { expected: '...' },
    });
  });

  test('the 403 heuristic: who-are-you words versus permission words', () => {
    for (const m of [
      'Not authenticated',
      'Invalid API key',
      'invalid token',
      'API key expired',
      'Missing bearer token',
    ])
      expect(isAuthenticationMessage(m), m).toBe(true);
    for (const m of [
      'Permission denied',
      'API key lacks permission for this document',
      'Not authorized to access documents of another company',
      'Forbidden',
      '',
    ])
      expect(isAuthenticationMessage(m), m).toBe(false);
  });
});

describe('BatchFileErrorResponse', () => {
  const codes: Array<[number, string, string, typeof DocexApiError, string | null, number | string | null]> =
    [
      [400, 'BATCH_INVALID_INPUT', 'validation', DocexBadRequestError, null, null],
      [404, 'TASK_NOT_FOUND', 'invalid_id', DocexNotFoundError, 'task_id', 't-9'],
      [422, 'TASK_NOT_DONE', 'validation', DocexValidationError, 'task_id', 't-1'],
      [422, 'TASK_NO_DOCUMENT', 'fetch_failed', DocexValidationError, 'task_id', 't-2'],
      [404, 'DOCUMENT_NOT_FOUND', 'invalid_id', DocexNotFoundError, 'document_id', 10],
      [404, 'DOCUMENT_NO_FILE', 'fetch_failed', DocexNotFoundError, 'document_id', 11],
      [403, 'BATCH_PERMISSION_DENIED', 'permission', DocexPermissionError, 'document_id', 12],
      [500, 'BATCH_FILE_FETCH_FAILED', 'fetch_failed', DocexServerError, 'document_id', 13],
      [403, 'DOCUMENT_PERMISSION_DENIED', 'permission', DocexPermissionError, 'document_id', '14'],
    ];

  test.each(codes)('%i %s', async (status, code, type, Class, idType, id) => {
    const body = { error_code: code, error_type: type, message: `${code} happened`, id_type: idType, id };
    nock(BASE).post('/v1/fetch_files_batch/').reply(status, body);
    const error = (await caught(noRetry().fetchFilesBatch({ document_ids: [10, 11] }))) as DocexApiError;
    expect(error).toBeInstanceOf(Class);
    expectNamed(error, 'fetch_files_batch');
    expect(error.status).toBe(status);
    expect(error.code).toBe(code);
    expect(error.batchError).toEqual(body);
    expect(error.serverMessage).toBe(`${code} happened`);
    const where = idType ? ` (${idType} ${id})` : '';
    expect(error.message).toBe(`fetch_files_batch: HTTP ${status} ${code}${where}: ${code} happened`);
  });

  test('a 403 batch error with auth-ish words stays a permission error', async () => {
    nock(BASE).post('/v1/fetch_files_batch/').reply(403, {
      error_code: 'BATCH_PERMISSION_DENIED',
      error_type: 'permission',
      message: 'API key of company A cannot read this document',
      id_type: 'document_id',
      id: 5,
    });
    const error = await caught(noRetry().fetchFilesBatch({ document_ids: [5] }));
    expect(error).toBeInstanceOf(DocexPermissionError);
  });

  test("the same body wrapped in FastAPI's {detail: ...} is understood", async () => {
    const inner = {
      error_code: 'TASK_NOT_DONE',
      error_type: 'validation',
      message: 'not yet',
      id_type: 'task_id',
      id: 't-1',
    };
    nock(BASE).post('/v1/fetch_files_batch/').reply(422, { detail: inner });
    const error = (await caught(noRetry().fetchFilesBatch({ task_ids: ['t-1'] }))) as DocexApiError;
    expect(error).toBeInstanceOf(DocexValidationError);
    expect(error.code).toBe('TASK_NOT_DONE');
    expect(error.message).toBe('fetch_files_batch: HTTP 422 TASK_NOT_DONE (task_id t-1): not yet');
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');
  test.each([
    [{ 'retry-after': '7' }, 7000],
    [{ 'retry-after': '1.5' }, 1500],
    [{ 'retry-after': '0' }, 0],
    [{ 'retry-after': 'Tue, 01 Jan 2030 00:00:30 GMT' }, 30_000],
    [{ 'retry-after': 'Mon, 31 Dec 2029 23:00:00 GMT' }, 0],
    [{ 'retry-after-ms': '250' }, 250],
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    [{ 'retry-after-ms': 'soon', 'retry-after': '9' }, 9000],
    [{ 'retry-after': 'whenever' }, undefined],
    [{ 'retry-after': '-3' }, undefined],
    [{}, undefined],
  ])('%j → %s ms', (headers, expected) => {
    expect(retryAfterMs(headers, now)).toBe(expected);
  });

  test('a 429 carries retryAfterMs to the caller', async () => {
    nock(BASE).get('/v1/fetch_all_folders/').reply(429, '', { 'retry-after-ms': '1234' });
    const error = (await caught(noRetry().fetchAllFolders())) as DocexRateLimitError;
    expect(error).toBeInstanceOf(DocexRateLimitError);
    expect(error.retryAfterMs).toBe(1234);
    expect(error.retryable).toBe(true);
  });
});

describe('connection failures and timeouts', () => {
  test('connection refused', async () => {
    const client = fakeTimeClient({ baseUrl: await closedPortUrl(), retry: { maxRetries: 2 } });
    const error = (await caught(client.fetchFolder({ folder_id: 1 }))) as DocexConnectionError;
    expect(error).toBeInstanceOf(DocexConnectionError);
    expect(error).not.toBeInstanceOf(DocexTimeoutError);
    expect(error.code).toBe('ECONNREFUSED');
    expect(error.retryable).toBe(true);
    expect(error).toBeInstanceOf(DocexConnectionRefusedError);
    expect(error.message).toMatch(
      /^fetch_folder: connection refused by 127\.0\.0\.1:\d+ \(ECONNREFUSED\): nothing listens there; check the service URL/,
    );
    expect(client.sleep.calls).toHaveLength(2);
    expectNamed(error, 'fetch_folder');
  });

  test('connection reset before an answer', async () => {
    let seen = 0;
    const s = await serve((req) => {
      seen++;
      req.socket.destroy();
    });
    const client = fakeTimeClient({ baseUrl: s.url, retry: { maxRetries: 1 } });
    const error = (await caught(client.fetchFolder({ folder_id: 1 }))) as DocexConnectionError;
    expect(error).toBeInstanceOf(DocexConnectionError);
    expect(error.code).toBe('ECONNRESET');
    expect(seen).toBe(2);
    expectNamed(error, 'fetch_folder');
  });

  test('connection reset in the middle of an upload body', async () => {
    let seen = 0;
    const s = await serve((req) => {
      seen++;
      req.once('data', () => req.socket.destroy());
    });
    const client = fakeTimeClient({ baseUrl: s.url });
    const big = new Uint8Array(4 * 1024 * 1024);
    const error = (await caught(
      client.uploadFile({ files: [{ data: big, fileName: 'big.pdf' }] }),
    )) as DocexError;
    expect(error).toBeInstanceOf(DocexConnectionError);
    expect(seen).toBe(1); // not retried: the server may have the file
    expect(client.sleep.calls).toEqual([]);
    expectNamed(error, 'upload_file');
  });

  test('connection reset in the middle of a JSON answer', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"folders": [');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const client = fakeTimeClient({ baseUrl: s.url, retry: { maxRetries: 0 } });
    const error = await caught(client.fetchAllFolders());
    expect(error).toBeInstanceOf(DocexConnectionError);
    expectNamed(error, 'fetch_all_folders');
  });

  test('connection reset in the middle of a download surfaces while reading, as a DocexError', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': '100000' });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const client = fakeTimeClient({ baseUrl: s.url });
    const file = await client.fetchFile({ document_id: 1 });
    const error = await caught(readAll(file.body));
    expect(error).toBeInstanceOf(DocexConnectionError);
    expectNamed(error, 'fetch_file');
  });

  test('no answer within timeoutMs: a timeout error, retried for idempotent operations only', async () => {
    let seen = 0;
    const s = await serve((req) => {
      seen++;
      req.resume();
    });
    const client = fakeTimeClient({ baseUrl: s.url, timeoutMs: 150, retry: { maxRetries: 2 } });
    const error = (await caught(client.fetchFolder({ folder_id: 1 }))) as DocexTimeoutError;
    expect(error).toBeInstanceOf(DocexTimeoutError);
    expect(error.code).toBe('ETIMEDOUT');
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/^fetch_folder: timed out/);
    expect(seen).toBe(3);
    expectNamed(error, 'fetch_folder');

    seen = 0;
    const upload = await caught(
      client.uploadFile({ files: [{ data: new Uint8Array(10), fileName: 'a.pdf' }] }, { timeoutMs: 100 }),
    );
    expect(upload).toBeInstanceOf(DocexTimeoutError);
    expect(seen).toBe(1);
  });
});

describe('aborts', () => {
  test('aborted before sending: nothing is sent', async () => {
    const controller = new AbortController();
    controller.abort(new Error('user gave up'));
    nock.disableNetConnect();
    try {
      const error = await caught(noRetry().fetchFolder({ folder_id: 1 }, { signal: controller.signal }));
      expect(error).toBeInstanceOf(DocexAbortError);
      expect((error as Error).cause).toBe(controller.signal.reason);
      expectNamed(error, 'fetch_folder');
    } finally {
      nock.enableNetConnect();
    }
  });

  test('aborted while waiting in the queue: never sent', async () => {
    const paths: string[] = [];
    let release: () => void = () => {};
    const s = await serve((req, res) => {
      paths.push(req.url!);
      release = () => res.end(JSON.stringify({ id: 1 }));
    });
    const client = nodeClient({ baseUrl: s.url, concurrency: 1 });
    const first = client.fetchFolder({ folder_id: 1 });
    while (paths.length === 0) await new Promise((r) => setTimeout(r, 5));
    const controller = new AbortController();
    const second = client.fetchFolder({ folder_id: 2 }, { signal: controller.signal });
    await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const error = await caught(second);
    expect(error).toBeInstanceOf(DocexAbortError);
    expectNamed(error, 'fetch_folder');
    release();
    await expect(first).resolves.toMatchObject({ id: 1 });
    expect(paths).toEqual(['/v1/fetch_folder/?folder_id=1']);
    expect(client.transport.queue.size + client.transport.queue.pending).toBe(0);
  });

  test('aborted during the request', async () => {
    let arrived: () => void = () => {};
    const requestArrived = new Promise<void>((r) => (arrived = r));
    let socketClosed: Promise<void> = new Promise(() => {});
    const s = await serve((req) => {
      socketClosed = new Promise((r) => req.socket.once('close', () => r()));
      arrived();
    });
    const client = nodeClient({ baseUrl: s.url });
    const controller = new AbortController();
    const call = client.fetchFolder({ folder_id: 1 }, { signal: controller.signal });
    // Aborted once the server holds the request (not after a guessed time, which a loaded machine
    // may not have spent sending it).
    await requestArrived;
    controller.abort();
    const error = await caught(call);
    expect(error).toBeInstanceOf(DocexAbortError);
    expectNamed(error, 'fetch_folder');
    // The server sees the close in its own time: the test's timeout bounds the wait.
    await socketClosed;
  });

  test('aborted while a download is being read', async () => {
    const s = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/zip' });
      res.write(Buffer.alloc(1000));
    });
    const client = nodeClient({ baseUrl: s.url });
    const controller = new AbortController();
    const file = await client.fetchFilesBatch({ document_ids: [1] }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 30);
    const error = await caught(readAll(file.body));
    expect(error).toBeInstanceOf(DocexAbortError);
    expectNamed(error, 'fetch_files_batch');
  });

  test('aborted during the backoff sleep of a retry', async () => {
    const controller = new AbortController();
    const sleep = recordingSleep(() => controller.abort());
    nock(BASE).get('/v1/fetch_all_folders/').reply(503, '');
    const client = fakeTimeClient({ sleep });
    const error = await caught(client.fetchAllFolders(undefined, { signal: controller.signal }));
    expect(error).toBeInstanceOf(DocexAbortError);
    expect(sleep.calls).toHaveLength(1);
    expectNamed(error, 'fetch_all_folders');
  });

  test("aborted during waitForTask's sleep, with the real timer", async () => {
    nock(BASE).get('/v1/fetch_tasks_results/').query({ task_id: 't-1' }).reply(200, {
      status: 'IN PROGRESS',
      status_message: 'working',
    });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 100);
    const error = await caught(
      noRetry().waitForTask('t-1', { intervalMs: 60_000, signal: controller.signal }),
    );
    expect(error).toBeInstanceOf(DocexAbortError);
    expect(Date.now() - started).toBeLessThan(10_000); // did not sit out the minute
    expectNamed(error, 'fetch_tasks_results');
  });
});

describe('answers of the wrong shape', () => {
  test.each([
    ['fetch_all_folders', {}, { folders: [{ id: 1 }, { id: 'x' }] }, 'folders[1].id'],
    [
      'fetch_all_folders',
      {},
      { folders: [{ id: 1, templates: [{ id: 2 }] }] },
      'folders[0].templates[0].name',
    ],
    ['fetch_template', { template_id: 2 }, { id: 2, folder_id: 1 }, 'name'],
    ['fetch_tasks_results', { task_id: 't' }, { status: 5, status_message: '' }, 'status'],
    ['fetch_tasks_results', { task_id: 't' }, { status: 'DONE', child_task_ids: 'a,b' }, 'child_task_ids'],
    ['rerun_documents', { doc_ids: [1] }, { rerun: 'many', not_rerun: 0 }, 'rerun'],
    ['fetch_documents', {}, [1, 'two'], '[1]'],
    ['fetch_document_data', { document_id: 1 }, 'not json', ''],
    ['upload_file', { files: [{ data: new Uint8Array(1), fileName: 'a.pdf' }] }, { ok: true }, ''],
    ['fetch_raw_text', { document_id: 1 }, { pages: 3 }, ''],
  ] as const)('%s answering %j → %s', async (name, input, answer, path) => {
    nock(BASE)
      .intercept(() => true, name === 'upload_file' || name === 'rerun_documents' ? 'POST' : 'GET')
      .query(true)
      .reply(200, answer as string);
    const error = (await caught(
      (noRetry().call as (n: string, i: unknown) => Promise<unknown>)(name, input),
    )) as DocexResponseShapeError;
    expect(error).toBeInstanceOf(DocexResponseShapeError);
    expect(error.path).toBe(path);
    expect(error.message).toContain(`${name}: unexpected answer from the server at ${path || '(root)'}`);
    expect(error.body).toEqual(answer);
    expect(error.retryable).toBe(false);
    expectNamed(error, name);
  });
});

describe('input refused before anything is sent', () => {
  test.each([
    ['fetch_folder', {}, 'missing required parameter "folder_id"'],
    ['fetch_folder', { folder_id: 1.5 }, 'parameter "folder_id" must be an integer (got 1.5)'],
    ['fetch_folder', { folder_id: 1, folderId: 2 }, 'unknown parameter "folderId" (expected folder_id)'],
    ['fetch_file', {}, 'give exactly one of document_id, task_id'],
    ['fetch_file', { document_id: 1, task_id: 't' }, 'give exactly one of document_id, task_id'],
    ['fetch_raw_text', { document_id: 1, task_id: 't' }, 'give exactly one of document_id, task_id'],
    [
      'fetch_files_batch',
      { document_ids: [], task_ids: null },
      'give at least one of document_ids, task_ids',
    ],
    ['rerun_documents', { doc_ids: [] }, 'must have 1 to 500 items, got 0'],
    [
      'rerun_documents',
      { doc_ids: Array.from({ length: 501 }, (_, i) => i) },
      'must have 1 to 500 items, got 501 (rerunAll() sends any number of ids in chunks)',
    ],
    [
      'create_field',
      { template_id: 1, name: 'n', type: 'General fields' },
      'missing required parameter "format"',
    ],
    [
      'create_field',
      { template_id: 1, name: 'n', type: 'Header fields', format: 'text' },
      `parameter "type" must be one of 'General fields', 'Line fields'`,
    ],
    ['create_template', { folder_id: 1, name: 'n', number_locale: 'FR' }, `must be one of 'EU', 'US'`],
    ['fetch_documents', { start_date: '2024-02-30' }, 'must be a date YYYY-MM-DD'],
    ['fetch_documents', { updated_since: 'yesterday' }, 'must be an ISO 8601 date or date-time'],
    ['fetch_documents', { updated_since: new Date('nope') }, '(got an invalid Date)'],
    ['fetch_documents', { updated_since: '2024-01-01T10:00:00+25:00' }, 'must be an ISO 8601'],
    ['upload_file', { files: [] }, 'parameter "files" must be at least one file'],
    ['upload_file', { files: [{ fileName: 'a.pdf' }] }, 'must be a file'],
    ['upload_csv', { agent_id: 1, file: [{ path: 'a.csv' }, { path: 'b.csv' }] }, 'exactly one file'],
    [
      'check_api_key',
      { signal: 1 },
      'unknown parameter "signal" (expected none; call options such as signal go in the second argument)',
    ],
    ['no_such_operation', {}, 'no such operation'],
    ['toString', {}, 'no such operation'],
  ])('%s %j', async (name, input, message) => {
    nock.disableNetConnect();
    try {
      const error = await caught(
        (noRetry().call as (n: string, i: unknown) => Promise<unknown>)(name, input),
      );
      expect(error).toBeInstanceOf(DocexInputError);
      expect(error.message).toContain(message);
      expectNamed(error, name);
    } finally {
      nock.enableNetConnect();
    }
  });

  test('a file path that cannot be read is an input error, not retried', async () => {
    const client = fakeTimeClient();
    nock.disableNetConnect();
    try {
      const error = await caught(client.uploadFile({ files: [{ path: '/nonexistent/dir/invoice.pdf' }] }));
      expect(error).toBeInstanceOf(DocexInputError);
      expect(error.message).toBe('upload_file: cannot read file "/nonexistent/dir/invoice.pdf" (ENOENT)');
      expect(client.sleep.calls).toEqual([]);
      const dir = await caught(client.uploadFile({ files: [{ path: '/tmp' }] }));
      expect(dir.message).toBe('upload_file: "/tmp" is not a file');
    } finally {
      nock.enableNetConnect();
    }
  });
});

describe('the API key never shows', () => {
  const echoes: Array<[string, number, unknown, Record<string, string>]> = [
    ['401 echoing the key', 401, { detail: `Invalid API key ${KEY}` }, {}],
    ['403 echoing the header', 403, { detail: `Bearer ${KEY} refused` }, {}],
    [
      '422 echoing input',
      422,
      { detail: [{ loc: ['header', 'authorization'], msg: 'bad', type: 'x', input: `Bearer ${KEY}` }] },
      {},
    ],
    ['500 text with the key', 500, `Traceback: key=${KEY}`, { 'x-debug': KEY }],
    [
      'batch error with the key as id',
      404,
      {
        error_code: 'DOCUMENT_NOT_FOUND',
        error_type: 'invalid_id',
        message: KEY,
        id_type: 'document_id',
        id: KEY,
      },
      {},
    ],
    ['429 with the key', 429, { [KEY]: KEY }, { 'retry-after': '1000000' }],
  ];

  test.each(echoes)('%s', async (_title, status, body, headers) => {
    nock(BASE)
      .post('/v1/fetch_files_batch/')
      .reply(status, body as string, headers);
    const lines: string[] = [];
    const logger = captureLogger(lines);
    const client = fakeTimeClient({ logger, retry: { maxRetries: 1 } });
    const error = await caught(client.fetchFilesBatch({ document_ids: [1] }));
    expect(error).toBeInstanceOf(DocexApiError);
    expect(everythingOf(error)).not.toContain(KEY);
    expect(lines.join('\n')).not.toContain(KEY);
    expect(everythingOf(error)).toContain('[REDACTED]');
  });

  test('a response-shape error whose body holds the key', async () => {
    nock(BASE).get('/v1/fetch_folder/').query(true).reply(200, { id: 'x', token: KEY });
    const error = await caught(nodeClient().fetchFolder({ folder_id: 1 }));
    expect(error).toBeInstanceOf(DocexResponseShapeError);
    expect(everythingOf(error)).not.toContain(KEY);
  });

  test('connection, timeout, abort and download errors', async () => {
    const errors: unknown[] = [];
    errors.push(
      await caught(nodeClient({ baseUrl: await closedPortUrl(), retry: { maxRetries: 0 } }).checkApiKey()),
    );
    const hang = await serve((req) => req.resume());
    errors.push(
      await caught(nodeClient({ baseUrl: hang.url, timeoutMs: 50, retry: { maxRetries: 0 } }).checkApiKey()),
    );
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    errors.push(
      await caught(nodeClient({ baseUrl: hang.url }).checkApiKey(undefined, { signal: controller.signal })),
    );
    const cut = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '5000' });
      res.write('x');
      setTimeout(() => res.socket?.destroy(), 10);
    });
    const file = await nodeClient({ baseUrl: cut.url }).fetchFile({ task_id: 't' });
    errors.push(await caught(readAll(file.body)));
    expect(errors.map((e) => e?.constructor.name)).toEqual([
      'DocexConnectionRefusedError',
      'DocexTimeoutError',
      'DocexAbortError',
      'DocexConnectionError',
    ]);
    for (const e of errors) expect(everythingOf(e)).not.toContain(KEY);
  });
});

function captureLogger(lines: string[]): Logger {
  const log = (level: string) => (obj: object, msg?: string) =>
    lines.push(JSON.stringify({ level, msg, ...obj }));
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}
