/**
 * Plain-HTTP connections read into one reused buffer (shared/src/node/large-reads.ts). What must hold
 * whatever the read size: every byte of every answer arrives, in order, though the buffer the bytes
 * were read into is overwritten by the next read; headers cut anywhere by a read still parse;
 * chunked and Content-Length bodies, keep-alive reuse and a reader that pauses all work. A tiny
 * buffer (97 bytes) cuts the answers at many places; the transport's own 1 MiB one is checked on a
 * download of several MiB saved with saveBinary.
 */
import { createHash } from 'node:crypto';
import { get, type IncomingMessage } from 'node:http';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { LargeReadHttpAgent, saveBinary } from '@docex/shared/node';
import { localServer, nodeClient, pattern, type LocalServer } from '../support/client.ts';

const MiB = 1024 * 1024;

const BODIES = {
  small: pattern(300_001, 1),
  large: pattern(5 * MiB + 7, 2),
};
const LONG_HEADER = 'x'.repeat(3000);

let server: LocalServer;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docex-reads-'));
  server = await localServer((req, res) => {
    req.resume();
    const url = new URL(req.url!, 'http://x');
    // fetch_file?document_id=1 (Content-Length) or 2 (chunked): the large body, as the transport asks.
    const document = url.searchParams.get('document_id');
    if (document) url.search = `?framing=${document === '2' ? 'chunked' : 'content-length'}&size=large`;
    const body = url.searchParams.get('size') === 'large' ? BODIES.large : BODIES.small;
    res.setHeader('x-long', LONG_HEADER);
    res.setHeader('content-type', 'application/pdf');
    if (url.searchParams.get('framing') === 'chunked') {
      // Chunks of odd sizes, so the chunk framing falls anywhere in the reads.
      res.writeHead(200, { 'transfer-encoding': 'chunked' });
      for (let at = 0; at < body.length; at += 40_009) res.write(body.subarray(at, at + 40_009));
      res.end();
    } else {
      res.writeHead(200, { 'content-length': String(body.length) });
      res.end(body);
    }
  });
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

/** GET through the agent; the body as read, the largest 'data' chunk of the socket, the socket. */
async function fetchThrough(
  agent: LargeReadHttpAgent,
  path: string,
  slowReader = false,
): Promise<{ response: IncomingMessage; body: Buffer; largestRead: number; socket: unknown }> {
  return new Promise((resolve, reject) => {
    let largestRead = 0;
    const request = get(`${server.url}${path}`, { agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (slowReader) {
          // Stop reading for a turn of the event loop: the socket pauses, later reads land in the
          // same buffer while the chunks before are still held here.
          response.pause();
          setImmediate(() => response.resume());
        }
      });
      response.once('end', () =>
        resolve({ response, body: Buffer.concat(chunks), largestRead, socket: request.socket }),
      );
      response.once('error', reject);
    });
    request.once('socket', (socket) =>
      socket.on('data', (chunk: Buffer) => (largestRead = Math.max(largestRead, chunk.length))),
    );
    request.once('error', reject);
  });
}

describe('LargeReadHttpAgent with a 97-byte buffer', () => {
  test.each([
    ['content-length', 'small', false],
    ['chunked', 'small', false],
    ['content-length', 'small', true],
    ['chunked', 'large', true],
  ] as const)('%s body (%s), slow reader %s: every byte, headers intact', async (framing, size, slow) => {
    const agent = new LargeReadHttpAgent({ keepAlive: false }, 97);
    try {
      const { response, body, largestRead } = await fetchThrough(
        agent,
        `/file?framing=${framing}&size=${size}`,
        slow,
      );
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-long']).toBe(LONG_HEADER);
      expect(response.headers['content-type']).toBe('application/pdf');
      expect(body.equals(BODIES[size])).toBe(true);
      // The reads went through the agent's buffer.
      expect(largestRead).toBeGreaterThan(0);
      expect(largestRead).toBeLessThanOrEqual(97);
    } finally {
      agent.destroy();
    }
  });

  test('a kept-alive connection serves the next request intact', async () => {
    const agent = new LargeReadHttpAgent({ keepAlive: true, maxSockets: 1 }, 97);
    try {
      const first = await fetchThrough(agent, '/file?framing=chunked&size=small');
      const second = await fetchThrough(agent, '/file?framing=content-length&size=small');
      expect(second.socket).toBe(first.socket);
      expect(first.body.equals(BODIES.small)).toBe(true);
      expect(second.body.equals(BODIES.small)).toBe(true);
    } finally {
      agent.destroy();
    }
  });
});

describe('the transport over plain HTTP', () => {
  test.each([
    ['content-length', 1],
    ['chunked', 2],
  ])(
    'a %s download of 5 MiB saved with saveBinary is the body sent, byte for byte',
    async (framing, document_id) => {
      const client = nodeClient({ baseUrl: server.url });
      const target = join(dir, `${framing}.pdf`);
      const file = await client.fetchFile({ document_id });
      expect(await saveBinary(file, target)).toBe(BODIES.large.length);
      const hash = (b: Buffer) => createHash('sha256').update(b).digest('hex');
      expect(hash(await readFile(target))).toBe(hash(BODIES.large));
    },
  );
});
