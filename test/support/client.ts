/** Shared by the client tests: a distinctive key, clients wired to nock or to a local server, a fake sleep. */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DocexClient, type ClientOptions } from '@docex/shared';
import { createNodeClient, NodeTransport, type NodeClientOptions } from '@docex/shared/node';

/** Distinctive, so that a leak anywhere shows up in a plain substring search. */
export const KEY = 'dx_live_SECRET_K3y_7f3a9c2e41b8d6';

/**
 * Bytes that differ everywhere (xorshift32), from one MiB to the next and within each: a byte
 * repeated, skipped or out of order, or a chunk sent twice, shows.
 */
export function pattern(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
export const BASE = 'http://docex.test';

export function nodeClient(options: Partial<NodeClientOptions> = {}) {
  return createNodeClient({ baseUrl: BASE, apiKey: KEY, ...options });
}

export interface RecordingSleep {
  (ms: number, signal?: AbortSignal): Promise<void>;
  calls: number[];
}

/** Records the delays asked for and returns at once (or rejects when the signal fired). */
export function recordingSleep(onSleep?: (ms: number) => void): RecordingSleep {
  const calls: number[] = [];
  const sleep = (async (ms: number, signal?: AbortSignal) => {
    calls.push(ms);
    onSleep?.(ms);
    if (signal?.aborted) throw signal.reason;
  }) as RecordingSleep;
  sleep.calls = calls;
  return sleep;
}

/** The real got transport with an injected sleep (delays are recorded, not waited). */
export function fakeTimeClient(
  options: Partial<ClientOptions> & { baseUrl?: string; concurrency?: number } = {},
): DocexClient & { sleep: RecordingSleep } {
  const sleep = (options.sleep as RecordingSleep | undefined) ?? recordingSleep();
  const transport = new NodeTransport({
    baseUrl: options.baseUrl ?? BASE,
    apiKey: KEY,
    concurrency: options.concurrency,
  });
  const client = new DocexClient({
    random: () => 0.5,
    redact: (s) => s.split(KEY).join('[REDACTED]'),
    ...options,
    transport: options.transport ?? transport,
    sleep,
  });
  return Object.assign(client, { sleep });
}

export interface LocalServer {
  url: string;
  server: Server;
  close(): Promise<void>;
}

export async function localServer(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
): Promise<LocalServer> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on. */
export async function closedPortUrl(): Promise<string> {
  const s = await localServer(() => {});
  await s.close();
  return s.url;
}

/** Everything an error exposes, in one string, to search for the key. */
export function everythingOf(error: unknown): string {
  const seen = new Set<unknown>();
  const parts: string[] = [];
  let e: unknown = error;
  while (e && !seen.has(e)) {
    seen.add(e);
    if (e instanceof Error) parts.push(e.message, String(e.stack));
    try {
      parts.push(JSON.stringify(e));
    } catch {
      parts.push('[unserialisable]');
    }
    parts.push(String(e));
    e = (e as { cause?: unknown }).cause;
  }
  return parts.join('\n');
}

export async function caught(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

export const bytes = (s: string) => new TextEncoder().encode(s);
