/**
 * One HTTP request and its answer on Node's own http/https client, the agent given. What got did
 * for the transport, kept to what it used: timeouts (connecting; any stall of the socket), an abort
 * signal, answers decoded (gzip, deflate, br), the bytes counted each way for the trace.
 *
 * Why not got: a small request through got cost ~2x the CPU of the request itself (its options are
 * normalised, merged and validated, its hooks and progress events run, for every request). In the
 * daemon's ingest that was ~4 ms of ~12 ms of CPU per file (docs/performance.md, "Throughput, measured").
 */
import { request as httpRequest, type Agent, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

export interface ExchangeOptions {
  method: string;
  /** Origin parts, as http.request takes them (hostname without IPv6 brackets). */
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number;
  /** Path and query, already encoded. */
  path: string;
  headers: Record<string, string>;
  agent: Agent;
  signal?: AbortSignal;
  /** Bound on connecting and on any stall of the socket once connected; none when undefined. */
  timeoutMs?: number;
}

/** Bytes of body sent and received so far (not headers): what the trace reports. */
export interface ExchangeCounts {
  sent: number;
  received: number;
}

/** A timeout, named like got's so messages and codes stay what users and tests know. */
export class ExchangeTimeoutError extends Error {
  readonly code = 'ETIMEDOUT';
  /** What it waited on: 'connect' (the socket never connected, so nothing was sent) or 'socket' (a stall). */
  readonly event: 'connect' | 'socket';
  constructor(event: 'connect' | 'socket', ms: number) {
    super(`Timeout awaiting '${event}' for ${ms}ms`);
    this.name = 'TimeoutError';
    this.event = event;
  }
}

/**
 * Starts the request; the caller writes the body into `request` (or ends it) and awaits `answer`.
 * `request` always has an error listener: an error after the answer (a writer that stopped) never
 * goes unhandled; it reaches the caller through `answer` or through the body stream.
 */
export function startExchange(options: ExchangeOptions): {
  request: ClientRequest;
  answer: Promise<IncomingMessage>;
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
  const send = options.protocol === 'https:' ? httpsRequest : httpRequest;
  const request = send({
    method: options.method,
    protocol: options.protocol,
    hostname: options.hostname,
    port: options.port,
    path: options.path,
    headers: options.headers,
    agent: options.agent,
    signal: options.signal,
  });
  const ms = options.timeoutMs;
  if (ms) {
    request.setTimeout(ms, () => request.destroy(new ExchangeTimeoutError('socket', ms)));
    request.once('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(() => request.destroy(new ExchangeTimeoutError('connect', ms)), ms);
      const clear = () => clearTimeout(timer);
      socket.once('connect', clear);
      socket.once('close', clear);
      request.once('close', clear);
    });
  }
  const answer = new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve);
    request.on('error', reject);
  });
  const progressed = () => {
    if (ms && request.socket && !request.socket.destroyed) request.socket.setTimeout(ms);
  };
  return { request, answer, counts, progressed };
}

const DECODERS: Record<string, () => NodeJS.ReadWriteStream & Readable> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/**
 * The answer's body as a stream, decoded when the server compressed it (the reader counts what it
 * reads). Destroying the returned stream before the end destroys the response and its connection;
 * a failure of the response (a reset) surfaces on the returned stream. Nothing here reads: a body
 * handed to a caller that reads it later loses no byte.
 */
export function bodyOf(response: IncomingMessage): Readable {
  const encoding = String(response.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder = encoding ? DECODERS[encoding]?.() : undefined;
  if (!decoder) return response;
  response.on('error', (error) => decoder.destroy(error));
  decoder.once('close', () => {
    if (!response.complete) response.destroy();
  });
  response.pipe(decoder);
  return decoder;
}
