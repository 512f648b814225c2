/**
 * An answer's body as the transport hands it on: a download as a guarded stream, a JSON answer
 * read within its size limit and parsed a slice at a time (sliced-json.ts), the event loop turning
 * between pieces of a large one.
 */
import type { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  DocexAbortError,
  DocexConnectionError,
  DocexResponseTooLargeError,
  DocexTimeoutError,
} from '../core/errors.ts';
import { collectingPacer } from './collect.ts';
import type { ExchangeCounts } from './exchange.ts';
import { parseJsonInSlices, SLICE_CHARS } from './sliced-json.ts';
import type { TransportRequest, TransportResponse } from '../core/transport.ts';
import { toTransportError } from './wire.ts';

/**
 * The download as the reader sees it: a failure while reading becomes a DocexError naming the
 * operation, and a reader that stops early releases the connection and the queue slot.
 */
export async function* guardedBody(
  stream: Readable,
  request: TransportRequest,
  counts: ExchangeCounts,
): AsyncGenerator<Uint8Array> {
  const pace = collectingPacer();
  try {
    // Not destroyed by the iteration when the reader leaves (Node would destroy it with an
    // AbortError, which the trace would take for a failure): the finally below releases it.
    for await (const chunk of stream.iterator({ destroyOnReturn: false })) {
      counts.received += (chunk as Uint8Array).byteLength;
      pace((chunk as Uint8Array).byteLength);
      yield chunk as Uint8Array;
    }
  } catch (error) {
    const e = toTransportError(error, request.signal);
    if (e.kind === 'abort')
      throw new DocexAbortError(request.operation, 'aborted while downloading', {
        cause: request.signal?.reason,
      });
    const Class = e.kind === 'timeout' ? DocexTimeoutError : DocexConnectionError;
    throw new Class(request.operation, `download interrupted: ${e.message}`, { code: e.code });
  } finally {
    stream.destroy();
  }
}

/**
 * The whole answer's bytes, refused beyond `limit` (announced or read) so memory stays bounded.
 * Only collected here: decoding and parsing come after, a slice at a time for a large answer.
 *
 * A large answer is read a MiB per turn of the event loop: libuv reads a socket up to 32 times in a
 * row while data keeps coming (up to 32 MiB with large-reads.ts), and a 16 MiB answer from a fast
 * server was read and parsed by HTTP in one turn, hundreds of ms on a loaded machine, the daemon's
 * /healthz unanswered meanwhile. Pausing the stream makes the HTTP client stop reading its socket
 * (its own back-pressure); the next turn resumes it.
 */
export async function readBody(
  stream: Readable,
  operation: string,
  limit: number,
  headers: TransportResponse['headers'],
  counts: ExchangeCounts,
  progressed: () => void,
): Promise<Buffer> {
  const announced = Number(headers['content-length']);
  const tooLarge = (size: number) => {
    stream.destroy();
    return new DocexResponseTooLargeError(operation, size, limit);
  };
  if (announced > limit) throw tooLarge(announced);
  // Events rather than async iteration: this runs for every JSON answer.
  const chunks = await new Promise<Buffer[]>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let nextTurnAt = TURN_BYTES;
    stream.on('data', (chunk: Buffer | string) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      total += bytes.byteLength;
      counts.received = total;
      if (total > limit) return reject(tooLarge(total));
      chunks.push(bytes);
      progressed();
      if (total >= nextTurnAt) {
        nextTurnAt = total + TURN_BYTES;
        stream.pause();
        setImmediate(() => stream.resume());
      }
    });
    stream.once('end', () => resolve(chunks));
    stream.once('error', reject);
  });
  return joined(chunks);
}

/** Bytes of a large answer read, or copied into one buffer, between two turns of the event loop. */
const TURN_BYTES = 1024 * 1024;

/**
 * The chunks as one buffer, copied a MiB per turn of the event loop: Buffer.concat of 16 MiB took
 * ~100 ms of CPU on a loaded machine. The buffer is allocated once, not zeroed.
 */
async function joined(chunks: Buffer[]): Promise<Buffer> {
  const total = chunks.reduce((n, chunk) => n + chunk.byteLength, 0);
  if (total <= TURN_BYTES) return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
  const all = Buffer.allocUnsafe(total);
  let at = 0;
  let copied = 0;
  for (const chunk of chunks) {
    chunk.copy(all, at);
    at += chunk.byteLength;
    copied += chunk.byteLength;
    if (copied >= TURN_BYTES) {
      copied = 0;
      await nextTurn();
    }
  }
  return all;
}

/**
 * JSON when it parses, the text otherwise ('' for an empty body). An answer larger than a slice is
 * parsed a slice at a time from its bytes (sliced-json.ts): decoded and parsed at once, 16 MiB of
 * line items held the event loop for seconds.
 */
export async function parseBody(bytes: Buffer): Promise<unknown> {
  if (bytes.byteLength > SLICE_CHARS) {
    try {
      return await parseJsonInSlices(bytes);
    } catch {
      // Not JSON: the text, as for a small answer.
    }
  }
  const text = bytes.toString('utf8');
  if (text.trim() === '') return '';
  if (bytes.byteLength > SLICE_CHARS) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
