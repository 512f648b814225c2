/**
 * The Node transport: got for HTTP (exchange.ts), one p-queue per client for throttling. Uploads
 * stream from disk (or from the caller's stream) and downloads stream to the caller; nothing is
 * held in memory whole.
 * A queue slot is held until the response body is fully read, so `concurrency` bounds what the
 * server really sees in flight.
 *
 * This file is the queue and the agents around one exchange; the exchange's parts are files of
 * their own: the request on the wire and its errors (wire.ts), the upload's multipart body
 * (upload-body.ts), the answer's body (answer-body.ts), the proxy and CA trust (trust.ts).
 */
import type { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import type { Agents } from 'got';
import PQueue from 'p-queue';
import { DocexError } from '../core/errors.ts';
import { makeBoundary, multipartLength, planMultipart, type MultipartPlan } from '../core/multipart.ts';
import { gotClients, gotFor, startExchange, type GotClients } from './exchange.ts';
import { LargeReadHttpAgent } from './large-reads.ts';
import { SendRateLimiter } from '../core/rate-limit.ts';
import { proxyFromEnv, type ProxyEnv } from '../core/proxy.ts';
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
  type FileInput,
  type NetworkFailure,
  type RequestTrace,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '../core/transport.ts';
import { watchWire, traceRequest, type BodyEnd, BODY_LEFT, toTransportError } from './wire.ts';
import { guardedBody, readBody, parseBody } from './answer-body.ts';
import { fileSizes, stopWriter, startWriter } from './upload-body.ts';
import { checkedProxyUrl, trustedCertificates } from './trust.ts';

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
