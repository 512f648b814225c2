/**
 * An upload's multipart body, written into the request as it goes (from disk or the caller's
 * data), its files' sizes checked first (an empty or unreadable file is the caller's mistake), and
 * the writer stopped when the answer comes before the whole body was read.
 */
import { open, stat } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import { readSync } from 'node:fs';
import { DocexInputError } from '../core/errors.ts';
import type { MultipartPlan } from '../core/multipart.ts';
import type { ExchangeCounts } from './exchange.ts';
import type { FileInput } from '../core/transport.ts';

/**
 * An empty file is refused before anything is sent, as docex-sync fails one before uploading it:
 * the service can extract nothing from it, and would spend a request and a task saying so
 * (docs/decisions.md, "Empty files").
 */
const emptyFile = (operation: string, name: string) =>
  new DocexInputError(operation, `"${name}" is empty (0 bytes): nothing was sent; give a file with content`);

/** The size of a file to upload; a path that is not a readable file, or an empty one, is the caller's mistake. */
export async function uploadableSize(path: string, operation: string): Promise<number> {
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw new DocexInputError(operation, `cannot read file "${path}" (${error.code ?? error.message})`);
  });
  if (!info.isFile()) throw new DocexInputError(operation, `"${path}" is not a file`);
  if (info.size === 0) throw emptyFile(operation, path);
  return info.size;
}

/** Sizes of the files to upload (uploadableSize for a path). */
export async function fileSizes(
  plan: MultipartPlan,
  operation: string,
): Promise<(file: FileInput) => number | undefined> {
  const sizes = new Map<FileInput, number | undefined>();
  for (const segment of plan.segments) {
    if (segment instanceof Uint8Array) continue;
    const file = segment.file;
    if ('path' in file) {
      sizes.set(file, await uploadableSize(file.path, operation));
    } else {
      if ('data' in file && file.data.byteLength === 0) throw emptyFile(operation, file.fileName);
      sizes.set(file, 'data' in file ? file.data.byteLength : file.size);
    }
  }
  return (file) => sizes.get(file);
}

/**
 * The answer is in (or the request failed): the writer has nothing more to do. A server may answer
 * before it has read the whole body (an error in front of the upload, a 5xx of a proxy); then
 * nobody reads the rest, the writer would wait forever for a drain, and the request stream with the
 * writer's open file would be left to the garbage collector (Node closes the file then, with a
 * warning that will become an error). So a request whose writer is still going is destroyed.
 */
export async function stopWriter(req: Duplex, writer: MultipartWriter): Promise<void> {
  if (!writer.done) req.destroy();
  await writer.finished;
}

export interface MultipartWriter {
  done: boolean;
  finished: Promise<void>;
}

export function startWriter(
  req: Duplex,
  plan: MultipartPlan,
  sizeOf: (file: FileInput) => number | undefined,
  syncFileReads: boolean,
  counts: ExchangeCounts,
): MultipartWriter {
  const writer: MultipartWriter = { done: false, finished: Promise.resolve() };
  writer.finished = writeMultipart(req, plan, sizeOf, syncFileReads, counts).finally(() => {
    writer.done = true;
  });
  return writer;
}

/**
 * 1 MiB per read and socket write: against 256 KB, a quarter of the reads, of the thread-pool round
 * trips and of the stream calls per byte, ~35% less CPU for a 1 GiB upload; the peak RSS measured
 * lower, not higher (docs/client.md, "Memory").
 */
const CHUNK_BYTES = 1024 * 1024;
const POOL_CHUNKS = 4;

/**
 * Writes a multipart body into the request stream. File bytes are read into a pool of 4 buffers of
 * 1 MiB that are reused once the socket has taken them (the write callback), so a 1 GB upload
 * allocates 4 MB instead of 1 GB of short-lived buffers that V8 would only reclaim in 64 MB steps.
 * Back-pressure is honoured; when the request dies, the writer stops and closes its file.
 */
async function writeMultipart(
  stream: Duplex,
  plan: MultipartPlan,
  sizeOf: (file: FileInput) => number | undefined,
  syncFileReads: boolean,
  counts: ExchangeCounts,
): Promise<void> {
  let closed = false;
  // A reset can surface as 'error' before (or, under load, long before) 'close': either one stops the writer.
  const closedSignal = new Promise<void>((resolve) => {
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  }).then(() => {
    closed = true;
    wake?.();
  });
  // Buffers no larger than the largest file: a 2 KB file is read into 2 KB, not into 1 MiB (a new
  // 1 MiB per small upload kept V8 collecting its old generation every ~200 ms in the ingest bench).
  let largest = 0;
  for (const segment of plan.segments)
    if (!(segment instanceof Uint8Array) && 'path' in segment.file)
      largest = Math.max(largest, sizeOf(segment.file) ?? 0);
  const chunkBytes = Math.min(CHUNK_BYTES, Math.max(largest, 1));
  const pool: Buffer[] = [];
  let allocated = 0;
  let wake: (() => void) | undefined;
  const release = (buffer: Buffer) => {
    pool.push(buffer);
    wake?.();
  };
  const take = async (): Promise<Buffer | undefined> => {
    while (pool.length === 0 && allocated >= POOL_CHUNKS && !closed) {
      await Promise.race([new Promise<void>((resolve) => (wake = resolve)), closedSignal]);
    }
    if (closed) return undefined;
    if (pool.length > 0) return pool.pop();
    allocated++;
    return Buffer.allocUnsafe(chunkBytes);
  };
  /** false once the request is gone. */
  const write = async (chunk: Uint8Array, done?: () => void): Promise<boolean> => {
    if (closed || stream.destroyed) return false;
    counts.sent += chunk.byteLength;
    if (!stream.write(chunk, () => done?.())) {
      await Promise.race([new Promise<void>((resolve) => stream.once('drain', resolve)), closedSignal]);
    }
    return !closed && !stream.destroyed;
  };

  try {
    for (const segment of plan.segments) {
      if (segment instanceof Uint8Array) {
        if (!(await write(segment))) return;
      } else if ('data' in segment.file) {
        if (!(await write(segment.file.data))) return;
      } else if ('stream' in segment.file) {
        for await (const chunk of segment.file.stream) if (!(await write(chunk))) return;
      } else {
        const size = sizeOf(segment.file) ?? 0;
        if (closed || stream.destroyed) return;
        const handle = await open(segment.file.path, 'r');
        // The next chunk is read while the socket drains the one before: reading and sending overlap
        // instead of taking turns (a profile showed the upload idle most of the time between the two).
        // Never rejects: a failed read waits in `error` (a rejection would go unhandled during the drain).
        const readAt = async (position: number) => {
          try {
            const buffer = await take();
            if (!buffer) return undefined;
            const length = Math.min(chunkBytes, size - position);
            const bytesRead = syncFileReads
              ? readSync(handle.fd, buffer, 0, length, position)
              : (await handle.read(buffer, 0, length, position)).bytesRead;
            return { buffer, bytesRead };
          } catch (error) {
            return { error };
          }
        };
        let ahead: ReturnType<typeof readAt> | undefined;
        try {
          let position = 0;
          if (position < size) ahead = readAt(position);
          while (ahead) {
            const chunk = await ahead;
            ahead = undefined;
            if (!chunk) return;
            if ('error' in chunk) throw chunk.error;
            if (chunk.bytesRead === 0)
              throw new Error(`${segment.file.path} shrank while it was being uploaded`);
            position += chunk.bytesRead;
            if (position < size) ahead = readAt(position);
            const { buffer } = chunk;
            if (!(await write(buffer.subarray(0, chunk.bytesRead), () => release(buffer)))) return;
          }
        } finally {
          // A read still under way is waited for before the file closes.
          await ahead;
          await handle.close();
        }
      }
    }
    if (!closed && !stream.destroyed) stream.end();
  } catch (error) {
    stream.destroy(error as Error);
  }
}
