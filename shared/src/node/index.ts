/** The client for Node programs (daemon, scripts, tests): got + p-queue transport and real timers. */
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { DocexClient } from '../core/client.ts';
import type { BinaryResult, ClientOptions } from '../core/client-types.ts';
import type { SettingTerms } from '../core/hints.ts';
import type { Logger, Sleep } from '../core/transport.ts';
import type { RetryPolicy } from '../core/retry.ts';
import { proxyCredentials } from '../core/proxy.ts';
import { NodeTransport, type NodeTransportOptions } from './transport.ts';

export {
  DEFAULT_MAX_RESPONSE_BYTES,
  NodeTransport,
  type NodeTransportOptions,
  type ThrottleOptions,
} from './transport.ts';
export { uploadableSize } from './upload-body.ts';
export { LargeReadHttpAgent } from './large-reads.ts';
export { jsonInSlices, parseJsonInSlices, SLICE_CHARS, type SliceOptions } from './sliced-json.ts';

export interface NodeClientOptions extends NodeTransportOptions {
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  logger?: Logger;
  instructionIdIn?: 'query' | 'path';
  /** Where the program's user sets what its messages name (core/hints.ts; default: these options' names). */
  terms?: SettingTerms;
}

export const nodeSleep: Sleep = (ms, signal) => delay(ms, undefined, { signal });

/** pino `redact` paths: wherever a header set or a config might end up in a log line. */
export const REDACT_PATHS = [
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.*.headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  'options.headers.authorization',
  'apiKey',
  '*.apiKey',
  '*.*.apiKey',
  'api_key',
  '*.api_key',
  '*.*.api_key',
];

export function createNodeClient(options: NodeClientOptions): DocexClient & { transport: NodeTransport } {
  if (!options.apiKey) throw new TypeError('an API key is required');
  const transport = new NodeTransport(options);
  const key = options.apiKey;
  // The proxy's password never reaches a message through the transport; this is the second belt.
  const proxySecret = options.proxy ? proxyCredentials(options.proxy)?.password : undefined;
  const clientOptions: ClientOptions = {
    transport,
    sleep: nodeSleep,
    // Cool-downs and task deadlines are durations: a wall-clock step must not stretch or cut them.
    elapsed: () => performance.now(),
    logger: options.logger,
    retry: options.retry,
    timeoutMs: options.timeoutMs,
    instructionIdIn: options.instructionIdIn,
    terms: options.terms,
    redact: (text) => {
      const out = text.split(key).join('[REDACTED]');
      return proxySecret ? out.split(proxySecret).join('[REDACTED]') : out;
    },
  };
  return Object.assign(new DocexClient(clientOptions), { transport });
}

/** Chunks gathered into one write while the previous one is under way. */
const SAVE_BATCH_BYTES = 256 * 1024;

/**
 * Streams a download to `path` atomically (temp file + rename); returns the bytes written.
 *
 * The chunks (~64 KB socket reads) are gathered into writes of ~256 KiB, one write in flight while
 * the next batch is read: a write stream writes each chunk on its own and stops reading until it is
 * on disk, which left the download waiting for the thread pool between every 64 KB (and its stream
 * layers cost more CPU than the writes). 256 KiB measured faster than 128 KiB and 1 MiB (1 MiB
 * also peaked ~5 MB higher). At most ~600 KB are held.
 */
export async function saveBinary(result: BinaryResult, path: string): Promise<number> {
  const temp = `${path}.${randomBytes(6).toString('hex')}.part`;
  let bytes = 0;
  const handle = await open(temp, 'wx');
  let closed = false;
  try {
    let writing: Promise<void> = Promise.resolve();
    let failure: { error: unknown } | undefined;
    let batch: Uint8Array[] = [];
    let batchBytes = 0;
    const flush = async () => {
      await writing;
      if (failure) throw failure.error;
      const buffers = batch;
      batch = [];
      batchBytes = 0;
      // Caught here and rethrown at the next flush, so a failed write is never an unhandled rejection.
      writing = writeAll(handle, buffers).catch((error: unknown) => void (failure = { error }));
    };
    for await (const chunk of result.body) {
      bytes += chunk.byteLength;
      batch.push(chunk);
      batchBytes += chunk.byteLength;
      if (batchBytes >= SAVE_BATCH_BYTES) await flush();
    }
    await flush();
    await writing;
    if (failure) throw failure.error;
    closed = true;
    await handle.close();
    await rename(temp, path);
  } catch (error) {
    if (!closed) await handle.close().catch(() => {});
    await rm(temp, { force: true });
    throw error;
  }
  return bytes;
}

/** All of `buffers`, however many calls it takes (a write may take only part of them). */
async function writeAll(handle: FileHandle, buffers: Uint8Array[]): Promise<void> {
  let left = buffers;
  while (left.length > 0) {
    let { bytesWritten } = await handle.writev(left);
    const rest: Uint8Array[] = [];
    for (const buffer of left) {
      if (bytesWritten >= buffer.byteLength) bytesWritten -= buffer.byteLength;
      else {
        rest.push(bytesWritten > 0 ? buffer.subarray(bytesWritten) : buffer);
        bytesWritten = 0;
      }
    }
    left = rest;
  }
}
