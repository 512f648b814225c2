/** The client for Node programs (daemon, scripts, tests): got + p-queue transport and real timers. */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { DocexClient, type BinaryResult, type ClientOptions } from '../core/client.ts';
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

export interface NodeClientOptions extends NodeTransportOptions {
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  logger?: Logger;
  instructionIdIn?: 'query' | 'path';
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
    redact: (text) => {
      const out = text.split(key).join('[REDACTED]');
      return proxySecret ? out.split(proxySecret).join('[REDACTED]') : out;
    },
  };
  return Object.assign(new DocexClient(clientOptions), { transport });
}

/** Streams a download to `path` atomically (temp file + rename); returns the bytes written. */
export async function saveBinary(result: BinaryResult, path: string): Promise<number> {
  const temp = `${path}.${randomBytes(6).toString('hex')}.part`;
  let bytes = 0;
  const counted = Readable.from(
    (async function* () {
      for await (const chunk of result.body) {
        bytes += chunk.byteLength;
        yield chunk;
      }
    })(),
  );
  try {
    await pipeline(counted, createWriteStream(temp, { flags: 'wx' }));
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return bytes;
}
