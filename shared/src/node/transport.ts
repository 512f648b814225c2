/**
 * The Node transport: got for HTTP (exchange.ts), one p-queue per client for throttling. Uploads
 * stream from disk (or from the caller's stream) and downloads stream to the caller; nothing is
 * held in memory whole.
 * A queue slot is held until the response body is fully read, so `concurrency` bounds what the
 * server really sees in flight.
 */
import { open, stat } from 'node:fs/promises';
import type { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex, Readable } from 'node:stream';
import { setImmediate as nextTurn, setTimeout as delay } from 'node:timers/promises';
import * as tls from 'node:tls';
import { readFileSync, readSync } from 'node:fs';
import type { Agents } from 'got';
import PQueue from 'p-queue';
import {
  DocexAbortError,
  DocexConnectionError,
  DocexError,
  DocexInputError,
  DocexResponseTooLargeError,
  DocexTimeoutError,
} from '../core/errors.ts';
import { makeBoundary, multipartLength, planMultipart, type MultipartPlan } from '../core/multipart.ts';
import { collectingPacer } from './collect.ts';
import {
  gotClients,
  gotFor,
  isConnectTimeout,
  startExchange,
  type ExchangeCounts,
  type GotClients,
  type GotRequest,
} from './exchange.ts';
import { LargeReadHttpAgent } from './large-reads.ts';
import { parseJsonInSlices, SLICE_CHARS } from './sliced-json.ts';
import { SendRateLimiter, type SendTicket } from '../core/rate-limit.ts';
import { parseProxyUrl, proxyFromEnv, type ProxyEnv } from '../core/proxy.ts';
import {
  HttpsTunnelAgent,
  HttpTunnelAgent,
  peekCertificate,
  ProxyTunnelError,
  proxyRoute,
  tlsFailure,
  tlsReason,
  type ProxyRoute,
} from './tunnel.ts';
import {
  TransportError,
  NOT_SENT_CODES,
  type FileInput,
  type NetworkFailure,
  type RequestTrace,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '../core/transport.ts';

export interface ThrottleOptions {
  /** Requests in flight at once (default 4). */
  concurrency?: number;
  /**
   * At most `intervalCap` requests arrive at the server in any `intervalMs` window (default: no
   * limit): spaced evenly, counted when each is put on the wire (see core/rate-limit.ts).
   */
  intervalCap?: number;
  intervalMs?: number;
  /**
   * Safety margin added to the window (default DEFAULT_RATE_MARGIN_MS, 50 ms): it must cover the
   * path's jitter, so raise it for a distant one (docs/decisions.md, "Throttling and timeouts").
   */
  rateMarginMs?: number;
}

export interface NodeTransportOptions extends ThrottleOptions {
  baseUrl: string;
  apiKey: string;
  userAgent?: string;
  /** A JSON or text answer larger than this fails with DocexResponseTooLargeError (default 64 MiB). */
  maxResponseBytes?: number;
  /**
   * Pooled connections (used by idempotent requests only) are closed after this idle time (default
   * 1 s), below the keep-alive timeouts of common servers (gunicorn 2 s, Node and uvicorn 5 s).
   */
  keepAliveIdleMs?: number;
  /**
   * The HTTP proxy: `http://[user:password@]host:port`; `false` for none whatever the environment;
   * unset to follow HTTPS_PROXY / HTTP_PROXY / NO_PROXY (upper or lower case) from `env`.
   */
  proxy?: string | false;
  /** Where the proxy variables are read (default process.env). */
  env?: ProxyEnv;
  /** Bound on reaching the proxy, its answer to CONNECT and the TLS handshake inside (default 30 s). */
  proxySetupTimeoutMs?: number;
  /**
   * CA certificates (PEM text) trusted in addition to Node's own store, which keeps holding the
   * public roots and NODE_EXTRA_CA_CERTS.
   */
  ca?: string | string[];
  /** Files of PEM certificates (one or several each) trusted in addition, read once here. */
  caFile?: string | string[];
  /** Called once per request when it is done (a support trace: DOCEX_DEBUG=http, --debug). */
  trace?: (request: RequestTrace) => void;
  /**
   * Read the files of uploads on the main thread (`readSync`, 1 MiB at a time) instead of in Node's
   * thread pool (default false). Less CPU per byte (no hand-over to a pool thread and back for each
   * read, and the bytes are still in this core's cache when the socket copies them), but each read
   * blocks the event loop: for a program that does nothing else meanwhile, such as the docex CLI.
   */
  syncFileReads?: boolean;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

export class NodeTransport implements Transport {
  readonly queue: PQueue;
  readonly limiter: SendRateLimiter | undefined;
  private readonly baseUrl: string;
  private readonly origin: string;
  private readonly target: URL;
  /** The base URL's parts (the host without IPv6 brackets, the path without its trailing slash). */
  private readonly hostname: string;
  private readonly port: number;
  private readonly basePath: string;
  /** Sent with every request unless the request names them itself. */
  private readonly defaultHeaders: Record<string, string>;
  /** got's instances, made (and got loaded) on the first request: see exchange.ts. */
  private clients: Promise<GotClients> | undefined;
  /** The proxy every request goes through, or undefined for direct connections. */
  private readonly route: ProxyRoute | undefined;
  private readonly trace: ((request: RequestTrace) => void) | undefined;
  private readonly maxResponseBytes: number;
  private readonly syncFileReads: boolean;
  /** Idempotent requests: keep-alive connections (a reset is retried by the client). */
  private readonly pooled: Agent;
  /**
   * Everything else (uploads, creates, reruns): a fresh connection each, which the server cannot have
   * closed while it sat in a pool, so a write is never lost to a keep-alive race.
   */
  private readonly fresh: Agent;

  constructor(options: NodeTransportOptions) {
    if (!/^https?:\/\//i.test(options.baseUrl))
      throw new TypeError(`baseUrl must start with http:// or https:// (got "${options.baseUrl}")`);
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.origin = new URL(this.baseUrl).origin;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.syncFileReads = options.syncFileReads ?? false;
    const idle = options.keepAliveIdleMs ?? 1000;
    this.target = new URL(this.baseUrl);
    this.hostname = this.target.hostname.replace(/^\[|\]$/g, '');
    this.port = Number(this.target.port || (this.target.protocol === 'https:' ? 443 : 80));
    this.basePath = this.target.pathname.replace(/\/+$/, '');
    this.trace = options.trace;
    const proxy =
      options.proxy === false
        ? undefined
        : (options.proxy ?? proxyFromEnv(this.target, options.env ?? process.env));
    this.route = proxy
      ? proxyRoute(checkedProxyUrl(proxy), options.proxySetupTimeoutMs ?? 30_000)
      : undefined;
    const ca = trustedCertificates(options.ca, options.caFile);
    const https = this.target.protocol === 'https:';
    const agent = (keepAlive: boolean): Agent => {
      const common = keepAlive ? { keepAlive, timeout: idle, ...ca } : { keepAlive, ...ca };
      if (this.route)
        return https ? new HttpsTunnelAgent(this.route, common) : new HttpTunnelAgent(this.route, common);
      // Plain HTTP reads 1 MiB per system call into a reused buffer (large-reads.ts).
      return https ? new HttpsAgent(common) : new LargeReadHttpAgent(common);
    };
    this.pooled = agent(true);
    this.fresh = agent(false);
    this.defaultHeaders = {
      accept: 'application/json',
      'accept-encoding': 'gzip, deflate, br',
      authorization: `Bearer ${options.apiKey}`,
      'user-agent': options.userAgent ?? 'docex-client',
    };
    this.queue = new PQueue({ concurrency: options.concurrency ?? 4 });
    this.limiter = options.intervalCap
      ? new SendRateLimiter({
          limit: options.intervalCap,
          windowMs: options.intervalMs ?? 1000,
          marginMs: options.rateMarginMs,
          now: () => performance.now(),
          sleep: (ms, signal) => delay(ms, undefined, { signal }),
        })
      : undefined;
  }

  send(request: TransportRequest): Promise<TransportResponse> {
    return new Promise<TransportResponse>((resolve, reject) => {
      let running: Promise<void> | undefined;
      this.queue
        .add(
          () =>
            (running = (async () => {
              const { response, finished } = await this.perform(request);
              resolve(response);
              await finished;
            })()),
          { signal: request.signal, priority: request.priority ?? 0 },
        )
        .catch(async (error: unknown) => {
          // An abort rejects add() at once, even while the request runs. The request stops on the
          // same signal; the caller hears of it once it has (an upload's file closed).
          await running?.catch(() => {});
          // DocexErrors (a file that cannot be read, an answer too large) go to the client as they are.
          reject(error instanceof DocexError ? error : await this.explain(error, request.signal));
        });
    });
  }

  /** The proxy requests go through, credentials redacted; undefined when they go direct. */
  get proxy(): string | undefined {
    return this.route?.shown;
  }

  /**
   * The transport error for a failed request, with what failed told apart where it can be: the
   * proxy (unreachable, 407, refused tunnel), DNS, a refused connection, a refused certificate (then
   * the certificate is read again by a handshake that sends nothing, to name its issuer and subject).
   */
  private async explain(error: unknown, signal: AbortSignal | undefined): Promise<TransportError> {
    const plain = toTransportError(error, signal);
    if (plain.kind === 'abort') return plain;
    const tunnel = [error, (error as { cause?: unknown } | undefined)?.cause].find(
      (e): e is ProxyTunnelError => e instanceof ProxyTunnelError,
    );
    const notSent = (failure: NetworkFailure) =>
      new TransportError('connection', plain.message, { code: plain.code, requestSent: false, failure });
    if (tunnel) return notSent(tunnel.failure);
    const { hostname: host, port } = this;
    const reason = this.target.protocol === 'https:' ? tlsReason(plain.code) : undefined;
    if (reason) {
      const cert = await peekCertificate(host, port, this.route, 5000);
      return notSent(tlsFailure(reason, plain.code!, host, cert));
    }
    if (this.route) return plain;
    if (plain.code === 'ENOTFOUND' || plain.code === 'EAI_AGAIN') return notSent({ type: 'dns', host });
    if (plain.code === 'ECONNREFUSED')
      return notSent({ type: 'refused', address: `${this.target.hostname}:${port}` });
    return plain;
  }

  private async perform(
    request: TransportRequest,
  ): Promise<{ response: TransportResponse; finished: Promise<BodyEnd> }> {
    const query = request.query.length > 0 ? `?${new URLSearchParams(request.query).toString()}` : '';
    let path = this.basePath + request.path + query;
    // Only headers beyond the instance's defaults go with the request: got merges each one.
    const headers: Record<string, string> = {};
    for (const name in request.headers) headers[name.toLowerCase()] = request.headers[name]!;
    let body: Buffer | undefined;
    let multipart: { plan: MultipartPlan; sizeOf: (file: FileInput) => number | undefined } | undefined;
    if (request.body?.type === 'json') {
      body = Buffer.from(JSON.stringify(request.body.value));
      headers['content-type'] = 'application/json';
    } else if (request.body?.type === 'multipart') {
      const plan = planMultipart(request.body.parts, makeBoundary(Math.random));
      const sizeOf = await fileSizes(plan, request.operation);
      headers['content-type'] = plan.contentType;
      const length = multipartLength(plan, sizeOf);
      if (length !== undefined) headers['content-length'] = String(length);
      multipart = { plan, sizeOf };
    } else if (request.method !== 'GET') {
      // A got stream only sends a POST/PUT/DELETE once its body ends: without one it would wait forever.
      body = Buffer.alloc(0);
    }
    const extraHeaders = Object.keys(headers).length > 0 ? headers : undefined;
    const clients = await (this.clients ??= gotClients(
      { pooled: this.agents(this.pooled), fresh: this.agents(this.fresh) },
      this.defaultHeaders,
    ));
    const idempotent = request.idempotent === true;
    const client = gotFor(clients, idempotent, request.timeoutMs);

    for (let hops = 0; ; hops++) {
      // The rate limit is taken here, after the files were opened and sized, right before sending.
      const ticket = await this.limiter?.acquire(request.signal, request.operation);
      const exchange = startExchange(client, this.origin + path, {
        method: request.method,
        headers: extraHeaders,
        body,
        signal: request.signal,
        timeoutMs: request.timeoutMs,
      });
      const { request: req, counts } = exchange;
      const traced = this.trace
        ? traceRequest(request.method, path, this.route?.shown, counts, this.trace)
        : undefined;
      // Only what needs it pays for following the request onto its socket: the rate limit, and writes
      // (a read is repeated after a reset anyway).
      const wire = ticket || !request.idempotent ? watchWire(req, ticket) : undefined;
      // The multipart body is written into the request as it goes (see writeMultipart).
      const writer = multipart
        ? startWriter(req, multipart.plan, multipart.sizeOf, this.syncFileReads, counts)
        : undefined;
      // got ends a GET, and a request whose body it was given, itself.
      if (!writer) counts.sent = body?.byteLength ?? 0;
      let result: { response: TransportResponse; finished: Promise<BodyEnd> };
      try {
        result = await this.answer(exchange, request);
      } catch (error) {
        traced?.failed(error);
        // The request died (reset, timeout, abort) maybe while the writer was opening a file: the
        // caller hears of it only once the writer has stopped and closed its file.
        if (writer) await stopWriter(req, writer);
        throw wire ? wire.failed(error) : error;
      }
      if (writer) await stopWriter(req, writer);
      traced?.answered(result);
      ticket?.sent();
      const next = this.redirectTarget(request, result.response, path);
      if (!next || hops >= MAX_REDIRECTS) return result;
      path = next.pathname + next.search;
    }
  }

  /** The agent under the key got takes it for the base URL's protocol. */
  private agents(agent: Agent): Agents {
    return this.target.protocol === 'https:' ? { https: agent as HttpsAgent } : { http: agent };
  }

  /** Same-origin redirects of reads are followed; anything else goes back as a 3xx answer (an error). */
  private redirectTarget(
    request: TransportRequest,
    response: TransportResponse,
    fromPath: string,
  ): URL | undefined {
    if (request.method !== 'GET' || !REDIRECT_STATUSES.has(response.status)) return undefined;
    const location = response.headers.location;
    if (typeof location !== 'string') return undefined;
    const base = this.origin + fromPath;
    const target = URL.canParse(location, base) ? new URL(location, base) : undefined;
    return target?.origin === this.origin ? target : undefined;
  }

  /**
   * The answer: a JSON or text body read whole (bounded by maxResponseBytes), or a 2xx binary body
   * handed over as a stream. Timeouts (connecting; any stall, including the wait for the answer)
   * are the exchange's: not a total-time limit, since a 1 GB upload may take long.
   */
  private async answer(
    exchange: ReturnType<typeof startExchange>,
    request: TransportRequest,
  ): Promise<{ response: TransportResponse; finished: Promise<BodyEnd> }> {
    const { answer, counts, progressed } = exchange;
    const response = await answer;
    const headersOut = response.headers as TransportResponse['headers'];
    const status = response.statusCode;
    // The answer as got decodes it: read from the request stream itself.
    const stream = exchange.request;
    if (status >= 200 && status < 300 && request.responseType === 'binary') {
      // How the body ended, for the trace: read to its end (undefined), failed (its code), or left.
      // The reader hears of a failure through iteration; this listener only notes it.
      let failure: string | undefined;
      stream.on('error', (error: NodeJS.ErrnoException) => (failure ??= error.code ?? error.name));
      const finished = new Promise<BodyEnd>((done) =>
        stream.once('close', () => done(failure ?? (stream.readableEnded ? undefined : BODY_LEFT))),
      );
      return {
        response: { status, headers: headersOut, body: guardedBody(stream, request, counts) },
        finished,
      };
    }
    // Each piece read is progress (see progressed): for a compressed answer that is a decoded
    // piece, while its socket sits idle (got's headers no longer say the answer was compressed).
    const bytes = await readBody(
      stream,
      request.operation,
      this.maxResponseBytes,
      headersOut,
      counts,
      progressed,
    );
    return {
      response: { status, headers: headersOut, body: await parseBody(bytes) },
      finished: Promise.resolve(undefined),
    };
  }
}

/**
 * Follows one request onto the wire: marks its rate-limit ticket sent when its socket is connected
 * (or handed over from the pool), and, when it fails, tells whether any byte of it can have been
 * written: a request whose socket took no byte from it provably never reached the server.
 */
function watchWire(stream: GotRequest, ticket: SendTicket | undefined) {
  let socket: Socket | undefined;
  let bytesBefore = 0;
  stream.once('request', (req: { once(event: 'socket', cb: (s: Socket) => void): void }) => {
    req.once('socket', (s: Socket) => {
      socket = s;
      bytesBefore = s.bytesWritten;
      if (!s.connecting) ticket?.sent();
      else s.once('encrypted' in s ? 'secureConnect' : 'connect', () => ticket?.sent());
    });
  });
  return {
    failed(error: unknown): unknown {
      // bytesWritten counts what the socket has taken, sent or still buffered: unchanged means nothing left.
      const written = socket !== undefined && socket.bytesWritten > bytesBefore;
      if (written) ticket?.sent();
      else {
        ticket?.cancel();
        if (error && typeof error === 'object') provenUnsent.add(error);
      }
      return error;
    },
  };
}

/**
 * Follows one request to its end for the trace: status or error, time, body bytes each way. A
 * JSON answer ends when it was read; a download when its stream closes (read, failed or left).
 */
function traceRequest(
  method: string,
  path: string,
  proxy: string | undefined,
  counts: ExchangeCounts,
  trace: (request: RequestTrace) => void,
) {
  const started = performance.now();
  const report = (status: number | undefined, error: string | undefined) =>
    trace({
      method,
      path,
      status,
      error,
      ms: Math.round(performance.now() - started),
      sentBytes: counts.sent,
      receivedBytes: counts.received,
      proxy,
    });
  return {
    failed(error: unknown) {
      const e = error as { code?: string; name?: string } | undefined;
      report(undefined, e?.code ?? e?.name);
    },
    answered({ response, finished }: { response: TransportResponse; finished: Promise<BodyEnd> }) {
      void finished.then((end) => report(response.status, end));
    },
  };
}

/**
 * How an answer's body ended: undefined when read to its end; else the code of the failure that cut
 * it (ECONNRESET, ETIMEDOUT...) or BODY_LEFT when the reader stopped before the end.
 */
type BodyEnd = string | undefined;
const BODY_LEFT = 'left unread';

/** Errors of requests of which not one byte was written (see watchWire). */
const provenUnsent = new WeakSet<object>();

/**
 * The download as the reader sees it: a failure while reading becomes a DocexError naming the
 * operation, and a reader that stops early releases the connection and the queue slot.
 */
async function* guardedBody(
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
async function readBody(
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
async function parseBody(bytes: Buffer): Promise<unknown> {
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
async function fileSizes(
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
async function stopWriter(req: Duplex, writer: MultipartWriter): Promise<void> {
  if (!writer.done) req.destroy();
  await writer.finished;
}

interface MultipartWriter {
  done: boolean;
  finished: Promise<void>;
}

function startWriter(
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

/** The transport's error for whatever a request failed with (the key is never in its message). */
function toTransportError(error: unknown, signal: AbortSignal | undefined): TransportError {
  if (error instanceof TransportError) return error;
  const e = error as { name?: string; code?: string; message?: string };
  const message = (e.message ?? String(error)).replace(/Bearer\s+\S+/gi, 'Bearer [REDACTED]');
  if (signal?.aborted || e.name === 'AbortError' || e.code === 'ERR_ABORTED') {
    return new TransportError('abort', 'aborted', { code: e.code, requestSent: true });
  }
  // A failure before the socket took a byte (watchWire), or a timeout while still connecting (the
  // bytes it took were only buffered), never reached the server: even an upload may be sent again.
  const unsent = provenUnsent.has(error as object);
  if (e.name === 'TimeoutError' || e.code === 'ETIMEDOUT') {
    const connecting = isConnectTimeout(error);
    return new TransportError('timeout', message, { code: e.code, requestSent: !(unsent || connecting) });
  }
  return new TransportError('connection', message, {
    code: e.code,
    requestSent: !(unsent || (e.code && NOT_SENT_CODES.has(e.code))),
  });
}

/** The proxy URL, or a TypeError that says what is wrong with it (never showing its password). */
function checkedProxyUrl(value: string): URL {
  const parsed = parseProxyUrl(value);
  if ('problem' in parsed) throw new TypeError(`proxy: ${parsed.problem}`);
  return parsed.url;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The `ca` option for the agents, or nothing when no extra CA is given. Node's `ca` replaces its
 * store, so the store in use (public roots, NODE_EXTRA_CA_CERTS, the system's with --use-system-ca)
 * is passed along with the extra certificates.
 */
function trustedCertificates(
  ca: string | string[] | undefined,
  caFile: string | string[] | undefined,
): { ca?: string[] } {
  const extra: string[] = [];
  for (const text of [ca ?? []].flat()) {
    const found = text.match(PEM_CERTIFICATE);
    if (!found) throw new TypeError('ca: no PEM certificate (-----BEGIN CERTIFICATE-----) in the text given');
    extra.push(...found);
  }
  for (const file of [caFile ?? []].flat()) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new TypeError(
        `CA file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}): give the path of a PEM file holding the CA certificate(s)`,
      );
    }
    const found = text.match(PEM_CERTIFICATE);
    if (!found) throw new TypeError(`CA file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    extra.push(...found);
  }
  if (extra.length === 0) return {};
  return { ca: [...defaultCertificates(), ...extra] };
}

/** Node's store as it is in use (Node >= 22.15 tells it; before, the roots plus NODE_EXTRA_CA_CERTS). */
function defaultCertificates(): string[] {
  if (typeof tls.getCACertificates === 'function') return tls.getCACertificates('default');
  const extraFile = process.env.NODE_EXTRA_CA_CERTS;
  let extra: string[] = [];
  try {
    extra = extraFile ? (readFileSync(extraFile, 'utf8').match(PEM_CERTIFICATE) ?? []) : [];
  } catch {
    // Node warns about an unreadable NODE_EXTRA_CA_CERTS itself at start.
  }
  return [...tls.rootCertificates, ...extra];
}
