/**
 * Streaming: a 1 GB upload from a path and downloads of hundreds of MB saved with saveBinary, against
 * a local server in this process, with the process's RSS sampled throughout. Nothing may be
 * buffered whole: the RSS may grow by a few tens of MB at most.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { open, readdir, readFile, rm, stat, mkdtemp, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { DocexAbortError, DocexConnectionError, DocexServerError, DocexTimeoutError } from '@docex/shared';
import { saveBinary } from '@docex/shared/node';
import { caught, localServer, nodeClient } from '../support/client.ts';

const MB = 1024 * 1024;
const GB = 1024 * MB;
const RSS_LIMIT = 60 * MB;
const UPLOAD_SIZE = GB;
const MARKERS = new Map([
  [0, 0x25],
  [123_456_789, 0x41],
  [512 * MB, 0x42],
  [UPLOAD_SIZE - 1, 0x43],
]);
const SIZES = { fetch_file: 400 * MB + 12_345, fetch_files_batch: 300 * MB };

interface Received {
  total: number;
  head: string;
  tail: string;
  markers: Array<[number, number]>;
  contentLength: string | null;
  transferEncoding: string | null;
}

let child: ChildProcess;
let baseUrl: string;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docex-stream-'));
  // The server runs in its own process: its buffers must not count in what this process measures.
  child = fork(
    fileURLToPath(new URL('./stream-server.ts', import.meta.url)),
    [JSON.stringify({ markers: [...MARKERS.keys()], sizes: SIZES })],
    { execArgv: [] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve(m as number));
    child.once('error', reject);
  });
  baseUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  child?.kill();
  await rm(dir, { recursive: true, force: true });
});

/** Samples RSS every 20 ms (and at each `sample()`) until stopped; reports the growth over the start. */
function rssSampler() {
  const start = process.memoryUsage.rss();
  let peak = start;
  const sample = () => {
    peak = Math.max(peak, process.memoryUsage.rss());
  };
  const timer = setInterval(sample, 20);
  return {
    sample,
    stop() {
      clearInterval(timer);
      sample();
      return peak - start;
    },
  };
}

/**
 * The download as read, with an RSS sample at every chunk, and no help: every socket read allocates
 * a fresh 64 KB buffer (Node's http client offers no way to reuse them), which V8 on its own
 * collects only once 64 MB of them have piled up (its external-memory step), so the first large
 * download in a process showed about +65 MB of garbage whatever its size. The transport now starts
 * a young-generation collection every few MB read (shared/src/node/collect.ts); this measures that.
 */
async function* sampled(body: AsyncIterable<Uint8Array>, sample: () => void): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    sample();
    yield chunk;
  }
}

/** V8's gc(), exposed for this test file only: a clean start before each measurement. */
const gc = (() => {
  v8.setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

describe('upload', () => {
  test(
    'a 1 GB file from a path streams out: RSS grows < 60 MB, the server gets exactly the file',
    { timeout: 120_000 },
    async () => {
      // A sparse file with a few marked bytes, so order and position are checked without hashing 1 GB.
      const path = join(dir, 'big.pdf');
      const fh = await open(path, 'w');
      await fh.truncate(UPLOAD_SIZE);
      for (const [offset, byte] of MARKERS) await fh.write(Buffer.from([byte]), 0, 1, offset);
      await fh.close();
      try {
        const client = nodeClient({ baseUrl });
        const sampler = rssSampler();
        const started = performance.now();
        const result = await client.uploadFile({ files: [{ path }], metadata: 'one gigabyte' });
        const seconds = (performance.now() - started) / 1000;
        const growth = sampler.stop();
        console.log(
          `1 GB upload: ${seconds.toFixed(1)} s, ${(UPLOAD_SIZE / MB / seconds).toFixed(0)} MB/s, RSS +${(growth / MB).toFixed(1)} MB`,
        );
        const got = (result.raw as { received: Received }).received;

        expect(result.task_ids).toEqual(['big']);
        expect(growth).toBeLessThan(RSS_LIMIT);
        expect(got.head).toContain('Content-Disposition: form-data; name="files"; filename="big.pdf"');
        expect(got.head).toContain('Content-Type: application/pdf');
        const boundary = /^--(\S+)\r\n/.exec(got.head)![1]!;
        const trailer = `\r\n--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\none gigabyte\r\n--${boundary}--\r\n`;
        expect(got.tail.endsWith(trailer)).toBe(true);
        expect(got.total - got.head.length - trailer.length).toBe(UPLOAD_SIZE);
        expect(Number(got.contentLength)).toBe(got.total);
        expect(new Map(got.markers)).toEqual(MARKERS);
      } finally {
        await rm(path, { force: true });
      }
    },
  );

  test(
    'a generated 200 MB one-shot stream goes out chunked, without being collected',
    { timeout: 60_000 },
    async () => {
      const size = 200 * MB;
      const chunk = Buffer.alloc(MB, 7);
      const stream = Readable.from(
        (function* () {
          for (let i = 0; i < size / MB; i++) yield chunk;
        })(),
      );
      const sampler = rssSampler();
      const result = await nodeClient({ baseUrl }).uploadFile({ files: [{ stream, fileName: 'gen.bin' }] });
      const growth = sampler.stop();
      const got = (result.raw as { received: Received }).received;
      expect(got.transferEncoding).toBe('chunked');
      expect(growth).toBeLessThan(RSS_LIMIT);
      const boundary = /^--(\S+)\r\n/.exec(got.head)![1]!;
      expect(got.total - got.head.length - `\r\n--${boundary}--\r\n`.length).toBe(size);
    },
  );
});

describe('download', () => {
  test.each([
    ['fetch_file', SIZES.fetch_file, 'application/pdf', 'scan.pdf'],
    ['fetch_files_batch', SIZES.fetch_files_batch, 'application/zip', 'files.zip'],
  ] as const)(
    '%s: %i bytes saved to disk with saveBinary, live memory grows < 60 MB',
    { timeout: 60_000 },
    async (op, size, type, name) => {
      const client = nodeClient({ baseUrl });
      gc();
      const sampler = rssSampler();
      const started = performance.now();
      const file =
        op === 'fetch_file'
          ? await client.fetchFile({ document_id: 1 })
          : await client.fetchFilesBatch({ document_ids: [1, 2] });
      expect(file).toMatchObject({ fileName: name, contentType: type, size });
      const target = join(dir, file.fileName!);
      const written = await saveBinary({ ...file, body: sampled(file.body, sampler.sample) }, target);
      const seconds = (performance.now() - started) / 1000;
      const growth = sampler.stop();
      console.log(
        `${op} ${(size / MB).toFixed(0)} MB: ${seconds.toFixed(1)} s, RSS +${(growth / MB).toFixed(1)} MB`,
      );
      expect(written).toBe(size);
      expect((await stat(target)).size).toBe(size);
      expect(growth).toBeLessThan(RSS_LIMIT);
      // the last bytes are the pattern's, in order
      const fh = await open(target, 'r');
      const end = Buffer.alloc(16);
      await fh.read(end, 0, 16, size - 16);
      await fh.close();
      const expected = Buffer.from(Array.from({ length: 16 }, (_, k) => ((size - 16 + k) % MB) % 251));
      expect(end).toEqual(expected);
      await rm(target);
    },
  );

  test('saveBinary writes atomically: an interrupted download leaves no file and no temp file', async () => {
    const server = await localServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-length': String(10 * MB) });
      res.write(Buffer.alloc(MB));
      setTimeout(() => res.socket?.destroy(), 20);
    });
    try {
      const file = await nodeClient({ baseUrl: server.url }).fetchFile({ document_id: 1 });
      const target = join(dir, 'partial.pdf');
      await expect(saveBinary(file, target)).rejects.toThrow(/^fetch_file: download interrupted/);
      expect((await readdir(dir)).filter((f) => f.startsWith('partial'))).toEqual([]);
    } finally {
      await server.close();
    }
  });

  test('saveBinary replaces an existing file only once the download is complete', async () => {
    const server = await localServer((req, res) => {
      req.resume();
      res.end('new content');
    });
    try {
      const target = join(dir, 'existing.txt');
      await writeFile(target, 'old');
      const file = await nodeClient({ baseUrl: server.url }).fetchFile({ document_id: 1 });
      expect(await saveBinary(file, target)).toBe(11);
      expect(await readFile(target, 'utf8')).toBe('new content');
    } finally {
      await server.close();
    }
  });
});

// The transport asks for compressed answers (accept-encoding) and decodes them (exchange.ts).
describe.each([
  ['gzip', gzipSync],
  ['deflate', deflateSync],
  ['br', brotliCompressSync],
])('an answer compressed with %s', (encoding, compress) => {
  test('is read decoded: a download, and a JSON error body', async () => {
    const content = Buffer.from('%PDF-1.4 '.repeat(5000));
    const accepted: string[] = [];
    const server = await localServer((req, res) => {
      req.resume();
      accepted.push(String(req.headers['accept-encoding']));
      const notFound = req.url!.includes('fetch_folder');
      res.writeHead(notFound ? 404 : 200, {
        'content-encoding': encoding,
        'content-type': notFound ? 'application/json' : 'application/pdf',
      });
      res.end(compress(notFound ? JSON.stringify({ detail: 'Folder 7 not found' }) : content));
    });
    try {
      const client = nodeClient({ baseUrl: server.url, retry: { maxRetries: 0 } });
      const target = join(dir, `compressed-${encoding}.pdf`);
      expect(await saveBinary(await client.fetchFile({ document_id: 1 }), target)).toBe(content.length);
      expect(await readFile(target)).toEqual(content);
      const error = await caught(client.fetchFolder({ folder_id: 7 }));
      expect((error as Error).message).toContain('Folder 7 not found');
      expect(accepted).toEqual(['gzip, deflate, br', 'gzip, deflate, br']);
    } finally {
      await server.close();
    }
  });
});

// The CLI reads upload files on the main thread (syncFileReads); everything else in the thread pool.
describe.runIf(existsSync('/proc/self/fd')).each([
  ['in the thread pool', false],
  ['on the main thread', true],
])('an upload that stops half-way closes its file, files read %s', (_, syncFileReads) => {
  const handlesOn = (path: string) =>
    readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`) === path;
      } catch {
        return false;
      }
    }).length;

  test.each([
    ['aborted', DocexAbortError],
    ['reset by the server', DocexConnectionError],
    ['timed out', DocexTimeoutError],
  ] as const)('%s', { timeout: 20_000 }, async (how, ErrorClass) => {
    const path = join(dir, `half-${how.replace(/ /g, '-')}.pdf`);
    await writeFile(path, Buffer.alloc(32 * MB, 1));
    const server = await localServer((req) => {
      req.once('data', () => {
        if (how === 'reset by the server') req.socket.destroy();
        else req.pause(); // stop reading: the client's writes back up
      });
    });
    try {
      const controller = new AbortController();
      const client = nodeClient({ baseUrl: server.url, timeoutMs: 300, syncFileReads });
      const upload = client.uploadFile({ files: [{ path }] }, { signal: controller.signal });
      if (how === 'aborted') setTimeout(() => controller.abort(), 100);
      const error = await caught(upload);
      expect(error).toBeInstanceOf(ErrorClass);
      // Not eventually: by the time the caller hears of the failure, the file is closed.
      expect(handlesOn(path)).toBe(0);
    } finally {
      await server.close();
      await rm(path, { force: true });
    }
  });

  // The writer reads the next chunk while the socket takes the one before: a read that fails (here: a
  // file cut short under it) must still fail the upload, with the file closed and nothing unhandled.
  test('the file shrinks while it is sent', { timeout: 20_000 }, async () => {
    const path = join(dir, 'half-shrinks.pdf');
    await writeFile(path, Buffer.alloc(32 * MB, 1));
    let cut: Promise<void> | undefined;
    const server = await localServer((req) => {
      req.once('data', () => {
        req.pause();
        cut = truncate(path, MB).then(() => void req.resume());
      });
    });
    try {
      const client = nodeClient({ baseUrl: server.url, syncFileReads });
      const error = await caught(client.uploadFile({ files: [{ path }] }));
      expect(error).toBeInstanceOf(DocexConnectionError);
      expect((error as Error).message).toMatch(/shrank while it was being uploaded/);
      // truncate() holds a handle of its own until its promise settles, which may be after the failure.
      await cut;
      expect(handlesOn(path)).toBe(0);
    } finally {
      await server.close();
      await rm(path, { force: true });
    }
  });

  // A server (or a proxy in front of it) may answer before it has read the body and then read no
  // more. The writer used to wait for a drain that never came, its file left open until the garbage
  // collector closed it ("Closing file descriptor on garbage collection", seen in the soak).
  const ERROR_BODY = '{"detail":"Internal error before the upload was read"}';
  const halfAnswered = async (answer: (req: IncomingMessage, res: ServerResponse) => void) => {
    const path = join(dir, 'half-answered.pdf');
    await writeFile(path, Buffer.alloc(32 * MB, 1));
    const server = await localServer((req, res) => {
      req.once('data', () => {
        req.pause(); // consumed, so Node does not drain the rest for us: the client's writes back up
        answer(req, res);
      });
    });
    try {
      const client = nodeClient({ baseUrl: server.url, retry: { maxRetries: 0 }, syncFileReads });
      const error = await caught(client.uploadFile({ files: [{ path }] }));
      return { error, handles: handlesOn(path) };
    } finally {
      await server.close();
      await rm(path, { force: true });
    }
  };

  test('answered before the body was read, the connection left open', { timeout: 20_000 }, async () => {
    // The answer goes out on the socket as it is: nothing ends or closes the connection, so the
    // client's writes stay backed up and only the answer can end the upload.
    const { error, handles } = await halfAnswered((req) =>
      req.socket.write(
        `HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: ${ERROR_BODY.length}\r\n\r\n${ERROR_BODY}`,
      ),
    );
    expect(error).toBeInstanceOf(DocexServerError);
    expect((error as Error).message).toContain('Internal error before the upload was read');
    expect(handles).toBe(0);
  });

  // Node's server closes a connection whose request it did not read with a reset: whether the
  // client reads the answer before its next write fails (EPIPE) is a race of the two machines, as
  // for curl ("Send failure: Broken pipe"). Either way the upload ends, failed, with its file closed.
  test('answered before the body was read, then the connection reset', { timeout: 20_000 }, async () => {
    const { error, handles } = await halfAnswered((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(ERROR_BODY);
    });
    if (error instanceof DocexConnectionError) expect((error as Error).message).toMatch(/EPIPE|ECONNRESET/);
    else expect(error).toBeInstanceOf(DocexServerError);
    expect(handles).toBe(0);
  });
});
