/**
 * Large JSON answers through the Node transport: read, decoded and parsed with the event loop
 * turning all along (a daemon's /healthz answers meanwhile), parsed as JSON.parse parses them,
 * plain or compressed; and a compressed answer whose decoding takes longer than the stall timeout
 * is read whole, not cut as a failed connection.
 */
import { pbkdf2 } from 'node:crypto';
import { promisify } from 'node:util';
import { isDeepStrictEqual } from 'node:util';
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, test } from 'vitest';
import { DocexResponseTooLargeError } from '@docex/shared';
import { caught, localServer, nodeClient } from '../support/client.ts';

const MiB = 1024 * 1024;

/** A document's data with `lines` line items, as the API document shapes them. */
function documentData(lines: number): string {
  const column = (value: (i: number) => string) =>
    `[${Array.from({ length: lines }, (_, i) => `{"value":${value(i)},"confidence":0.93}`).join(',')}]`;
  return `{"document_id":7,"template_id":3,"General_fields":{"Total":{"value":"10,00","confidence":0.9}},"Line_fields":{"Description":${column((i) => `"Widget ${i}, blue"`)},"Amount":${column((i) => String((i % 997) + 0.5))}}}`;
}

/** How many turns the event loop makes while `work` runs. */
async function turnsDuring<T>(work: Promise<T>): Promise<{ value: T; turns: number }> {
  let turns = 0;
  let running = true;
  const turn = () => {
    turns++;
    if (running) setImmediate(turn);
  };
  setImmediate(turn);
  try {
    return { value: await work, turns };
  } finally {
    running = false;
  }
}

describe.each([
  ['plain', (b: Buffer) => b, undefined],
  ['gzip', (b: Buffer) => gzipSync(b, { level: constants.Z_BEST_SPEED }), 'gzip'],
  ['deflate', (b: Buffer) => deflateSync(b, { level: constants.Z_BEST_SPEED }), 'deflate'],
  ['br', (b: Buffer) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 1 } }), 'br'],
])('a 15 MiB answer, %s', (_, compress, encoding) => {
  test(
    'is parsed as JSON.parse parses it, the event loop turning all along',
    { timeout: 120_000 },
    async () => {
      const text = documentData(200_000);
      expect(text.length).toBeGreaterThan(14 * MiB);
      const body = compress(Buffer.from(text));
      const server = await localServer((req, res) => {
        req.resume();
        res.writeHead(200, {
          'content-type': 'application/json',
          ...(encoding ? { 'content-encoding': encoding } : {}),
        });
        res.end(body);
      });
      try {
        const client = nodeClient({ baseUrl: server.url, retry: { maxRetries: 0 } });
        const { value, turns } = await turnsDuring(client.fetchDocumentData({ document_id: 7 }));
        expect(isDeepStrictEqual(value, JSON.parse(text))).toBe(true);
        // Parsed 64 KiB at a time (and read a MiB a turn): hundreds of turns. Read and parsed at
        // once, the plain answer took 11 turns, its JSON.parse one turn of seconds on a loaded
        // machine. (Decoding a compressed answer takes hundreds of turns by itself: for those, what
        // counts here is the value; the parse is the plain one's.)
        expect(turns).toBeGreaterThan(text.length / (64 * 1024) / 2);
      } finally {
        await server.close();
      }
    },
  );
});

test('an answer over the limit is still refused as it arrives, compressed or not', async () => {
  const text = documentData(20_000);
  const server = await localServer((req, res) => {
    req.resume();
    const gzip = req.url!.includes('document_id=2');
    res.writeHead(200, {
      'content-type': 'application/json',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    });
    res.end(gzip ? gzipSync(text) : text);
  });
  try {
    const client = nodeClient({ baseUrl: server.url, retry: { maxRetries: 0 }, maxResponseBytes: MiB });
    for (const document_id of [1, 2]) {
      const error = await caught(client.fetchDocumentData({ document_id }));
      expect(error).toBeInstanceOf(DocexResponseTooLargeError);
      expect((error as DocexResponseTooLargeError).limit).toBe(MiB);
    }
  } finally {
    await server.close();
  }
});

test(
  'a compressed answer decoded for longer than the stall timeout is read whole',
  { timeout: 120_000 },
  async () => {
    // 4 MiB of line items in ~130 KB of gzip: all of it read off the socket at once, then decoded in
    // ~250 steps of Node's thread pool, which this test keeps busy (each step waits ~10 ms behind
    // other work): decoding takes seconds, the socket idle all along, while the stall timeout is 500 ms.
    const text = documentData(55_000);
    const body = gzipSync(text, { level: constants.Z_BEST_SPEED });
    const server = await localServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(body);
    });
    let busy = true;
    const hash = promisify(pbkdf2);
    const keepPoolBusy = async () => {
      while (busy) await hash('password', 'salt', 20_000, 32, 'sha256');
    };
    const pool = Array.from({ length: 4 }, keepPoolBusy);
    try {
      const client = nodeClient({ baseUrl: server.url, retry: { maxRetries: 0 }, timeoutMs: 500 });
      const started = performance.now();
      const data = await client.fetchDocumentData({ document_id: 7 });
      const ms = performance.now() - started;
      expect(isDeepStrictEqual(data, JSON.parse(text))).toBe(true);
      // It took longer than the timeout: the timeout had every chance to cut it.
      expect(ms).toBeGreaterThan(500);
    } finally {
      busy = false;
      await Promise.all(pool);
      await server.close();
    }
  },
);
