/** Shared by the client tests: a distinctive key, clients wired to nock or to a local server, a fake sleep. */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
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

/** The real Node transport with an injected sleep (delays are recorded, not waited). */
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

/**
 * A URL whose connections are never taken: a listener in a child process, stopped (SIGSTOP), with
 * its accept queue full. The kernel then drops each new SYN and the client's connect() waits, as for
 * a host behind a firewall that drops packets. Linux queues backlog + 1 connections: with a backlog
 * of 1, the two made here fill it (each waited for until it is connected).
 */
export async function unansweredConnectUrl(): Promise<{ url: string; close: () => Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:net').createServer().listen({ port: 0, host: '127.0.0.1', backlog: 1 }, function () {
        process.send(this.address().port, () => process.kill(process.pid, 'SIGSTOP'));
      });`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m) => resolve(m as number));
    child.once('error', reject);
  });
  // Stopped once the port was sent (the callback of send): connections made now are never accepted.
  await new Promise<void>((resolve) => {
    const check = () => (/^T/.test(stateOf(child.pid!)) ? resolve() : setImmediate(check));
    check();
  });
  const queued: Socket[] = [];
  for (let i = 0; i < 2; i++) {
    const socket = connect(port, '127.0.0.1');
    queued.push(socket);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
  }
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      for (const socket of queued) socket.destroy();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A process's state letter from /proc (T: stopped). */
function stateOf(pid: number): string {
  return /\) (\w)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1] ?? '';
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
