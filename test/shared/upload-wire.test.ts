/**
 * The bytes an upload puts on the wire. The transport reads files from disk in chunks through a
 * small pool of reused buffers, in the thread pool or on the main thread (syncFileReads), and writes
 * them between the multipart framing: whatever the chunking, the request body must be byte for byte
 * the multipart encoding of the same parts held in memory (core/multipart.ts), with a matching
 * Content-Length. A chunk sent twice, skipped, out of order, cut at the wrong length or taken from a
 * stale pool buffer, and any framing byte out of place, fails the comparison.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { multipartToBytes, planMultipart, type FileInput, type MultipartPart } from '@docex/shared';
import { NodeTransport } from '@docex/shared/node';
import { KEY, localServer, pattern, type LocalServer } from '../support/client.ts';

const MiB = 1024 * 1024;

/** Files around the chunk size (1 MiB): one byte, one chunk exactly, chunks and a remainder (an empty one is never sent, below). */
const FILES: Array<[string, number]> = [
  ['one-byte.pdf', 1],
  ['one-chunk.pdf', MiB],
  ['chunks-and-a-rest.pdf', 3 * MiB + 12_345],
  ['just-under.pdf', 2 * MiB - 1],
];

let dir: string;
let server: LocalServer;
const received: Array<{ body: Buffer; contentType: string; contentLength: string | undefined }> = [];
const contents = new Map<string, Buffer>();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docex-wire-'));
  for (const [i, [name, size]] of FILES.entries()) {
    const data = pattern(size, 0x9e3779b9 + i);
    contents.set(name, data);
    await writeFile(join(dir, name), data);
  }
  server = await localServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        body: Buffer.concat(chunks),
        contentType: String(req.headers['content-type']),
        contentLength: req.headers['content-length'],
      });
      res.setHeader('content-type', 'application/json');
      res.end('{"task_ids":["wire"]}');
    });
  });
});
afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe.each([
  ['in the thread pool', false],
  ['on the main thread', true],
])('files read %s', (_, syncFileReads) => {
  test('the request body is byte for byte the multipart encoding of the parts', async () => {
    const transport = new NodeTransport({ baseUrl: server.url, apiKey: KEY, syncFileReads });
    const parts = (file: (name: string) => FileInput): MultipartPart[] => [
      { name: 'metadata', value: 'before the files' },
      ...FILES.map(([name]) => ({
        name: 'files',
        file: file(name),
        fileName: name,
        contentType: 'application/pdf',
      })),
      { name: 'folder_id', value: '7' },
    ];
    received.length = 0;
    const response = await transport.send({
      operation: 'upload_file',
      method: 'POST',
      path: '/v1/upload_file/',
      query: [],
      headers: {},
      body: { type: 'multipart', parts: parts((name) => ({ path: join(dir, name) })) },
      responseType: 'json',
    });
    expect(response.status).toBe(200);
    expect(received).toHaveLength(1);
    const [{ body, contentType, contentLength }] = received as [(typeof received)[0]];
    const boundary = /boundary=(\S+)$/.exec(contentType)![1]!;
    const expected = Buffer.from(
      multipartToBytes(
        planMultipart(
          parts((name) => ({ data: contents.get(name)!, fileName: name })),
          boundary,
        ),
      ),
    );
    expect(body.length).toBe(expected.length);
    expect(Number(contentLength)).toBe(expected.length);
    // Buffer.equals, not toEqual: a 7 MB diff would drown the report.
    expect(body.equals(expected)).toBe(true);
  });
});

test('an empty file, from a path or in memory, is refused before a byte is sent, naming it', async () => {
  const transport = new NodeTransport({ baseUrl: server.url, apiKey: KEY });
  const empty = join(dir, 'empty.pdf');
  await writeFile(empty, '');
  received.length = 0;
  const upload = (file: FileInput) =>
    transport.send({
      operation: 'upload_file',
      method: 'POST',
      path: '/v1/upload_file/',
      query: [],
      headers: {},
      body: {
        type: 'multipart',
        parts: [
          {
            name: 'files',
            file: { path: join(dir, 'one-byte.pdf') },
            fileName: 'one-byte.pdf',
            contentType: 'application/pdf',
          },
          { name: 'files', file, fileName: 'empty.pdf', contentType: 'application/pdf' },
        ],
      },
      responseType: 'json',
    });
  await expect(upload({ path: empty })).rejects.toThrow(
    `upload_file: "${empty}" is empty (0 bytes): nothing was sent; give a file with content`,
  );
  await expect(upload({ data: new Uint8Array(0), fileName: 'scan.pdf' })).rejects.toThrow(
    'upload_file: "scan.pdf" is empty (0 bytes): nothing was sent; give a file with content',
  );
  expect(received).toEqual([]);
});
