/**
 * The connection layer of the Node transport against local servers:
 * - keep-alive races: servers that close connections after N requests or after a short idle time,
 *   announced (Connection: close, Keep-Alive: timeout=) and unannounced; writes are never lost and
 *   never sent twice, reads are repeated;
 * - redirects: followed only for reads within the same origin, never with the credential elsewhere;
 *   on a write a permanent error naming the status and the location;
 * - buffered answers are capped (maxResponseBytes) with an error naming the operation and the size.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import {
  DocexRedirectError,
  DocexResponseTooLargeError,
  DocexTimeoutError,
  formatRequestTrace,
  readAll,
  type DocexClient,
  type RequestTrace,
} from '@docex/shared';
import {
  bytes,
  caught,
  everythingOf,
  fakeTimeClient,
  KEY,
  localServer,
  nodeClient,
  unansweredConnectUrl,
  type LocalServer,
} from '../support/client.ts';

const servers: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ClosingServerOptions {
  /** The connection is done after this many answers. */
  maxRequests?: number;
  /** The connection is done after this idle time (ms). */
  idleMs?: number;
  /** Say so (Connection: close on the last answer; Keep-Alive: timeout= on every answer). */
  announced: boolean;
}

/**
 * A server that ends keep-alive connections like nginx (keepalive_requests / keepalive_timeout) or a
 * proxy. Unannounced, a request that arrives on a connection that is done is not processed: its
 * socket is reset, as when the server's close crosses the client's request on the wire.
 */
async function closingServer(options: ClosingServerOptions) {
  const processed: string[] = [];
  const resets: string[] = [];
  const served = new WeakMap<Socket, { count: number; idleSince: number }>();
  const s = await localServer((req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const state = served.get(socket) ?? { count: 0, idleSince: performance.now() };
    served.set(socket, state);
    const operation = req.url!.split('?')[0]!.split('/')[2]!;
    const done =
      (options.maxRequests !== undefined && state.count >= options.maxRequests) ||
      (options.idleMs !== undefined &&
        state.count > 0 &&
        performance.now() - state.idleSince > options.idleMs);
    if (done) {
      resets.push(operation);
      socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => {
      processed.push(operation);
      state.count++;
      if (options.announced && state.count === options.maxRequests) res.setHeader('connection', 'close');
      if (options.announced && options.idleMs !== undefined)
        res.setHeader('keep-alive', `timeout=${Math.max(1, Math.floor(options.idleMs / 1000))}`);
      res.setHeader('content-type', 'application/json');
      res.on('finish', () => (state.idleSince = performance.now()));
      res.end(
        operation === 'upload_file'
          ? JSON.stringify({ task_id: `t-${processed.length}` })
          : operation === 'rerun_documents'
            ? JSON.stringify({ rerun: 1, not_rerun: 0 })
            : JSON.stringify({ id: processed.length, name: 'n' }),
      );
    });
  });
  s.server.keepAliveTimeout = 60_000;
  servers.push(s);
  return { url: s.url, processed, resets };
}

/** Rounds of writes and reads, with a pause after each round. */
async function workload(client: DocexClient, rounds: number, pauseMs: number) {
  const writes: string[] = [];
  for (let round = 0; round < rounds; round++) {
    // A write first, on the connection that sat idle during the pause, then after a read.
    await client.createFolder({ name: `f-${round}` });
    writes.push('create_folder');
    await client.fetchFolder({ folder_id: 1 });
    await client.fetchFolder({ folder_id: 2 });
    await client.uploadFile({ files: [{ data: bytes('%PDF-1.4'), fileName: 'a.pdf' }] });
    writes.push('upload_file');
    await client.rerunDocuments({ doc_ids: [1] });
    writes.push('rerun_documents');
    await client.call('update_folder', { folder_id: 1, name: 'x' });
    await pause(pauseMs);
  }
  return writes;
}

describe('keep-alive races: writes are never lost to a connection the server closed', () => {
  const cases: Array<[string, ClosingServerOptions, number]> = [
    ['after 2 requests, announced (Connection: close)', { maxRequests: 2, announced: true }, 0],
    ['after 2 requests, unannounced', { maxRequests: 2, announced: false }, 0],
    ['after 150 ms idle, unannounced', { idleMs: 150, announced: false }, 200],
    ['after 1 s idle, announced (Keep-Alive: timeout=1)', { idleMs: 1000, announced: true }, 1100],
  ];
  test.each(cases)('%s', async (_name, options, pauseMs) => {
    const server = await closingServer(options);
    const client = nodeClient({
      baseUrl: server.url,
      retry: { initialDelayMs: 5, maxDelayMs: 20 },
      keepAliveIdleMs: 60_000, // so that only the server's behaviour decides
    });
    const writes = await workload(client, 3, pauseMs);
    // Every write processed exactly once; none of them hit a closed connection.
    for (const op of ['create_folder', 'upload_file', 'rerun_documents'])
      expect(server.processed.filter((p) => p === op)).toHaveLength(writes.filter((w) => w === op).length);
    expect(server.resets.filter((r) => writes.includes(r))).toEqual([]);
    if (!options.announced) expect(server.resets.length).toBeGreaterThan(0); // reads did hit the race, and were repeated
  });

  test('idle pooled connections are closed after keepAliveIdleMs, before a server would', async () => {
    const server = await closingServer({ idleMs: 300, announced: false });
    const client = nodeClient({ baseUrl: server.url, keepAliveIdleMs: 100, retry: { maxRetries: 0 } });
    for (let i = 0; i < 3; i++) {
      await client.fetchFolder({ folder_id: 1 });
      await pause(400);
    }
    expect(server.resets).toEqual([]);
    expect(server.processed).toHaveLength(3);
  });
});

/**
 * Uses no nock: nock hands requests a socket of its own that looks connected at once.
 */
describe('connecting', () => {
  test('no connection within timeoutMs: a timeout that says so; an upload is sent again, since it never left', async () => {
    const silent = await unansweredConnectUrl();
    try {
      const client = fakeTimeClient({ baseUrl: silent.url, timeoutMs: 200, retry: { maxRetries: 1 } });
      const error = (await caught(client.fetchFolder({ folder_id: 1 }))) as DocexTimeoutError;
      expect(error).toBeInstanceOf(DocexTimeoutError);
      expect(error.code).toBe('ETIMEDOUT');
      expect(error.message).toBe("fetch_folder: timed out: Timeout awaiting 'connect' for 200ms");
      expect(error.retryable).toBe(true);
      expect(client.sleep.calls).toHaveLength(1);

      // Nothing was written: the upload is tried again (an upload that timed out waiting for its
      // answer is not: errors.test.ts).
      const upload = await caught(
        client.uploadFile({ files: [{ data: new Uint8Array(10), fileName: 'a.pdf' }] }),
      );
      expect(upload).toBeInstanceOf(DocexTimeoutError);
      expect(upload.message).toBe("upload_file: timed out: Timeout awaiting 'connect' for 200ms");
      expect(client.sleep.calls).toHaveLength(2);
    } finally {
      await silent.close();
    }
  });
});

describe('the trace of a download (--debug)', () => {
  /** A download of 100,000 bytes: sent whole, cut by the server after 1,000, or 1,000 then held. */
  async function traced(
    server: 'whole' | 'cut' | 'held',
    read: (body: AsyncIterable<Uint8Array>) => Promise<unknown>,
  ) {
    const s = await localServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': '100000' });
      if (server === 'whole') return void res.end(Buffer.alloc(100_000));
      res.write(Buffer.alloc(1000), () => server === 'cut' && res.socket?.destroy());
    });
    servers.push(s);
    const traces: RequestTrace[] = [];
    const done = new Promise<void>((resolve) => {
      const client = nodeClient({
        baseUrl: s.url,
        retry: { maxRetries: 0 },
        trace: (t) => {
          traces.push(t);
          resolve();
        },
      });
      void client.fetchFile({ document_id: 7 }).then((file) => read(file.body).catch(() => undefined));
    });
    await done;
    expect(traces).toHaveLength(1);
    return formatRequestTrace(traces[0]!);
  }

  test('read to its end: the status alone', async () => {
    expect(await traced('whole', readAll)).toMatch(
      /^http: GET \/v1\/fetch_file\/\?document_id=7 200 \d+ ms sent 0 B received 100000 B direct$/,
    );
  });

  test('cut by the server after the answer: the status, then how the body ended', async () => {
    expect(await traced('cut', readAll)).toMatch(
      /^http: GET \/v1\/fetch_file\/\?document_id=7 200, body cut short \(ECONNRESET\) \d+ ms sent 0 B received 1000 B direct$/,
    );
  });

  test('left by its reader after the first part: said so', async () => {
    const firstPart = async (body: AsyncIterable<Uint8Array>) => {
      for await (const _ of body) break;
    };
    expect(await traced('held', firstPart)).toMatch(/ 200, body cut short \(left unread\) /);
  });
});

describe('redirects', () => {
  async function redirecting(status: number, location: (other: string) => string) {
    const other = { requests: [] as Array<{ url: string; authorization?: string }> };
    const elsewhere = await localServer((req, res) => {
      other.requests.push({ url: req.url!, authorization: req.headers.authorization });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: 99, name: 'elsewhere' }));
    });
    servers.push(elsewhere);
    const seen: string[] = [];
    const s = await localServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      if (req.url!.startsWith('/moved/')) {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ id: 7, name: 'moved' }));
        return;
      }
      res.writeHead(status, { location: location(elsewhere.url) });
      res.end();
    });
    servers.push(s);
    return { url: s.url, seen, other };
  }

  test('a read redirected within the same origin is followed', async () => {
    const server = await redirecting(302, () => '/moved/fetch_folder/?folder_id=1');
    const client = nodeClient({ baseUrl: server.url });
    await expect(client.fetchFolder({ folder_id: 1 })).resolves.toMatchObject({ id: 7, name: 'moved' });
    expect(server.seen).toEqual([
      'GET /v1/fetch_folder/?folder_id=1',
      'GET /moved/fetch_folder/?folder_id=1',
    ]);
  });

  test('a read redirected to another origin is not followed: the credential never goes there', async () => {
    const server = await redirecting(302, (other) => `${other}/v1/fetch_folder/?folder_id=1`);
    const client = nodeClient({ baseUrl: server.url });
    const error = await caught(client.fetchFolder({ folder_id: 1 }));
    expect(error).toBeInstanceOf(DocexRedirectError);
    const redirect = error as DocexRedirectError;
    expect(redirect.status).toBe(302);
    expect(redirect.kind).toBe('permanent');
    expect(redirect.location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1\/fetch_folder\//);
    expect(redirect.message).toContain(`fetch_folder: HTTP 302 Found: redirect to ${redirect.location}`);
    expect(server.other.requests).toEqual([]);
    expect(server.seen).toHaveLength(1); // a permanent error: not retried
    expect(everythingOf(error)).not.toContain(KEY);
  });

  test.each([307, 308, 302, 303])(
    'an upload answered %i is a permanent error naming status and location, sent once',
    async (status) => {
      const server = await redirecting(status, () => '/moved/upload_file/');
      const client = nodeClient({ baseUrl: server.url });
      const error = await caught(
        client.uploadFile({ files: [{ data: bytes('%PDF-1.4'), fileName: 'a.pdf' }] }),
      );
      expect(error).toBeInstanceOf(DocexRedirectError);
      expect(error.message).toMatch(
        new RegExp(`^upload_file: HTTP ${status} .*redirect to /moved/upload_file/ not followed`),
      );
      expect((error as DocexRedirectError).retryable).toBe(false);
      expect(server.seen).toEqual(['POST /v1/upload_file/']);
    },
  );
});

describe('maxResponseBytes', () => {
  async function bigAnswer(size: number, announced: boolean) {
    const s = await localServer((req, res) => {
      req.resume();
      const body = JSON.stringify({ id: 1, name: 'x'.repeat(size) });
      if (req.url!.includes('fetch_file')) {
        res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': String(size) });
        res.end(Buffer.alloc(size, 1));
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/json',
        ...(announced ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
      });
      // Sent in pieces so that an unannounced answer is refused while it is still coming.
      for (let i = 0; i < body.length; i += 1024) res.write(body.slice(i, i + 1024));
      res.end();
    });
    servers.push(s);
    return s.url;
  }

  test.each([true, false])(
    'a buffered answer above the cap fails with a typed error naming operation and size (Content-Length sent: %s)',
    async (announced) => {
      const url = await bigAnswer(20_000, announced);
      const client = nodeClient({ baseUrl: url, maxResponseBytes: 10_000 });
      const error = await caught(client.fetchFolder({ folder_id: 1 }));
      expect(error).toBeInstanceOf(DocexResponseTooLargeError);
      const tooLarge = error as DocexResponseTooLargeError;
      expect(tooLarge.limit).toBe(10_000);
      expect(tooLarge.size).toBeGreaterThan(10_000);
      if (announced) expect(tooLarge.size).toBe(20_000 + JSON.stringify({ id: 1, name: '' }).length);
      expect(tooLarge.message).toMatch(
        /^fetch_folder: answer of \d+ bytes .*exceeds the limit of 10000 bytes/,
      );
      expect(tooLarge.kind).toBe('permanent');
      // the client is still usable: the connection was dropped, the slot freed
      await expect(nodeClient({ baseUrl: url }).fetchFolder({ folder_id: 1 })).resolves.toMatchObject({
        id: 1,
      });
    },
  );

  test('downloads are streamed, not capped', async () => {
    const url = await bigAnswer(50_000, true);
    const client = nodeClient({ baseUrl: url, maxResponseBytes: 10_000 });
    const file = await client.fetchFile({ document_id: 1 });
    expect((await readAll(file.body)).byteLength).toBe(50_000);
  });
});
