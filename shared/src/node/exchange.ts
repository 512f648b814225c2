/**
 * One HTTP request and its answer through got, the agent given: got gives the timeouts (connecting;
 * any stall of the socket), the abort signal and the decoded answers (gzip, deflate, br); this file
 * adds the body bytes counted each way for the trace, and the stall timer restarted while a
 * compressed answer is decoded. got's own retries, redirects and HTTP errors are off: the core
 * decides retries (core/retry.ts), the transport follows same-origin redirects of reads itself.
 *
 * got is imported on the first request, not with this module: a command that sends nothing (a
 * --help, a usage mistake, a config check) never loads it (docs/cli.md, "Start-up").
 */
import type { Agents, Got, Method, PlainResponse, Request as GotRequest } from 'got';

export type { GotRequest };

/** The two got instances of a transport: their agents, headers and fixed options built once. */
export interface GotClients {
  /** Idempotent requests: keep-alive connections. */
  pooled: Got;
  /** Everything else: a fresh connection each. */
  fresh: Got;
  /** Instances with a timeout built in, by kind and timeout: got merges each option of a request anew. */
  withTimeout: Map<string, Got>;
}

let loading: Promise<typeof import('got')> | undefined;

/**
 * got's instances for a transport, got loaded on first use. Built once: got merges these defaults
 * into each request far more cheaply than it normalises full options.
 */
export async function gotClients(agents: { pooled: Agents; fresh: Agents }, headers: Record<string, string>) {
  const { default: got } = await (loading ??= import('got'));
  const pooled = got.extend({
    headers,
    // The core owns retries (core/retry.ts): got would repeat an upload it cannot know was lost.
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: false,
    decompress: true,
    // A body cut short is the connection's failure (ECONNRESET, "The server aborted pending
    // request"), as Node reports it, not got's count of the bytes that came.
    strictContentLength: false,
    agent: agents.pooled,
  });
  const fresh = pooled.extend({ agent: agents.fresh });
  return { pooled, fresh, withTimeout: new Map() } satisfies GotClients;
}

/** The instance for a request: pooled or fresh, with its timeout (none when undefined). */
export function gotFor(clients: GotClients, idempotent: boolean, ms: number | undefined): Got {
  const base = idempotent ? clients.pooled : clients.fresh;
  if (!ms) return base;
  const key = `${idempotent ? 'p' : 'f'}${ms}`;
  let instance = clients.withTimeout.get(key);
  // Not a total-time limit (a 1 GB upload may take long): connecting, and any stall of the socket,
  // which includes the wait for the answer once the request is sent.
  if (!instance)
    clients.withTimeout.set(key, (instance = base.extend({ timeout: { connect: ms, socket: ms } })));
  return instance;
}

export interface ExchangeOptions {
  method: string;
  /** Only headers beyond the instance's defaults (got merges every one it is given). */
  headers?: Record<string, string>;
  /** A body sent whole; without it a POST's body is written into the returned request and ended. */
  body?: Buffer;
  signal?: AbortSignal;
  /** The timeout built into `client` (restarted by `progressed`). */
  timeoutMs?: number;
}

/** Bytes of body sent and received so far (not headers): what the trace reports. */
export interface ExchangeCounts {
  sent: number;
  received: number;
}

/** A timeout while the socket was still connecting: nothing was sent (got's TimeoutError, event 'connect'). */
export const isConnectTimeout = (error: unknown): boolean =>
  (error as { name?: string; event?: string } | undefined)?.name === 'TimeoutError' &&
  (error as { event?: string }).event === 'connect';

/**
 * Starts the request; the caller writes the body into `request` (when no `body` was given for a
 * POST), awaits `answer` and reads the decoded answer from `request`. `request` always has an error
 * listener: an error after the answer (a writer that stopped) never goes unhandled; it reaches the
 * caller through `answer` or through the body it reads.
 */
export function startExchange(
  client: Got,
  url: string,
  options: ExchangeOptions,
): {
  request: GotRequest;
  answer: Promise<PlainResponse>;
  counts: ExchangeCounts;
  /**
   * A decoded piece of the answer reached its reader: the stall timer starts again. Decoding counts
   * as progress: a compressed answer sits in the socket while this side decodes it (its reader
   * pauses the socket), which on a busy machine outlasted the timeout and cut a healthy answer as a
   * connection failure ("aborted"), fetched again and again.
   */
  progressed(): void;
} {
  const counts: ExchangeCounts = { sent: 0, received: 0 };
  const request = client.stream(url, {
    method: options.method as Method,
    ...(options.headers && { headers: options.headers }),
    ...(options.body && { body: options.body }),
    ...(options.signal && { signal: options.signal }),
  });
  const answer = new Promise<PlainResponse>((resolve, reject) => {
    request.once('response', resolve);
    request.on('error', reject);
  });
  const ms = options.timeoutMs;
  const progressed = () => {
    const socket = request.socket;
    if (ms && socket && !socket.destroyed) socket.setTimeout(ms);
  };
  return { request, answer, counts, progressed };
}
