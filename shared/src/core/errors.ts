/**
 * One error hierarchy for every failure. Every message starts with the operation name; messages are
 * built from the server's answer only, passed through the client's `redact`, never from headers.
 */
import { BatchFileError, ValidationDetail } from './schemas.ts';
import type { NetworkFailure, TransportResponse } from './transport.ts';

/**
 * What a failure means for whoever handles it, decided once where the error is made:
 * - `transient`: may work later (429, 5xx, 408, network, timeout); already retried where that was safe;
 * - `permanent`: this request fails the same way again (bad input, 4xx, an unusable answer, a redirect);
 * - `auth`: the credential is refused; every request of the run will fail, so stop the run;
 * - `aborted`: the caller's signal stopped it.
 */
export type ErrorKind = 'transient' | 'permanent' | 'auth' | 'aborted';

export interface DocexErrorOptions {
  kind?: ErrorKind;
  cause?: unknown;
}

export class DocexError extends Error {
  readonly operation: string;
  readonly kind: ErrorKind;
  constructor(operation: string, message: string, options: DocexErrorOptions = {}) {
    super(`${operation}: ${message}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.operation = operation;
    this.kind = options.kind ?? 'permanent';
  }
  /** Worth trying again later (kind `transient`); already retried inside the client where safe. */
  get retryable(): boolean {
    return this.kind === 'transient';
  }
}

/** The call's input was refused before anything was sent. */
export class DocexInputError extends DocexError {}

/** Everything an HTTP error answer carries, already redacted. */
export interface ApiErrorInit {
  operation: string;
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  /** The server's own words (detail, message or text). */
  serverMessage: string;
  batchError?: BatchFileError;
  retryAfterMs?: number;
}

/** transient for 408, 429 and 5xx; auth for 401 (and the credential 403s, see DocexAuthenticationError). */
export const kindOfStatus = (status: number): ErrorKind =>
  status === 408 || status === 429 || status >= 500 ? 'transient' : status === 401 ? 'auth' : 'permanent';

export class DocexApiError extends DocexError {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: unknown;
  readonly serverMessage: string;
  /** error_code of a BatchFileErrorResponse body, when the server sent one. */
  readonly code: string | undefined;
  readonly batchError: BatchFileError | undefined;
  /** Set on 429 (and on 503 and others when the server sent Retry-After / retry-after-ms). */
  readonly retryAfterMs: number | undefined;
  constructor(init: ApiErrorInit, kind: ErrorKind = kindOfStatus(init.status)) {
    const { batchError, serverMessage, status } = init;
    const what = batchError
      ? `${batchError.error_code}${batchError.id_type ? ` (${batchError.id_type} ${String(batchError.id)})` : ''}`
      : reason(status);
    super(init.operation, `HTTP ${status} ${what}${serverMessage ? `: ${serverMessage}` : ''}`, { kind });
    this.status = status;
    this.headers = init.headers;
    this.body = init.body;
    this.serverMessage = serverMessage;
    this.code = batchError?.error_code;
    this.batchError = batchError;
    this.retryAfterMs = init.retryAfterMs;
  }
}
export class DocexBadRequestError extends DocexApiError {}
/** 401, or a 403 whose message says the credential is missing or invalid. */
export class DocexAuthenticationError extends DocexApiError {
  constructor(init: ApiErrorInit) {
    super(init, 'auth');
  }
}
export class DocexPermissionError extends DocexApiError {}
export class DocexNotFoundError extends DocexApiError {}
export class DocexConflictError extends DocexApiError {}
export class DocexPayloadTooLargeError extends DocexApiError {}
export class DocexValidationError extends DocexApiError {
  /** The 422 `detail` entries, each readable as `loc: msg` through `issues`. */
  get detail(): ValidationDetail[] {
    return validationDetails(this.body);
  }
  get issues(): string[] {
    return this.detail.map(formatDetail);
  }
}
/** 429. `retryAfterMs` (inherited) holds the server's Retry-After / retry-after-ms, when it sent one. */
export class DocexRateLimitError extends DocexApiError {}
export class DocexServerError extends DocexApiError {}
/**
 * A 3xx answer the client did not follow: it follows redirects only for reads within the same origin
 * (never with the credential to another origin, never for a write, whose body may not be sent twice).
 */
export class DocexRedirectError extends DocexApiError {
  /** The Location header as sent (redacted). */
  readonly location: string | undefined;
  constructor(init: ApiErrorInit) {
    const location = header(init.headers, 'location');
    super({
      ...init,
      serverMessage: `redirect to ${location ?? '(no Location)'} not followed (the client follows redirects only for reads within the same origin)`,
    });
    this.location = location;
  }
}

export interface ConnectionErrorOptions {
  /** The system error code (ECONNRESET, ECONNREFUSED...). */
  code?: string;
  cause?: unknown;
}

export class DocexConnectionError extends DocexError {
  readonly code: string | undefined;
  /** What failed, when the transport could tell (the subclasses below). */
  readonly failure: NetworkFailure | undefined;
  constructor(
    operation: string,
    message: string,
    options: ConnectionErrorOptions & { failure?: NetworkFailure } = {},
  ) {
    super(operation, message, { kind: 'transient', cause: options.cause });
    this.code = options.code;
    this.failure = options.failure;
  }
}
export class DocexTimeoutError extends DocexConnectionError {}
/** The service's host name does not resolve (no proxy in the way: a proxy resolves names itself). */
export class DocexDnsError extends DocexConnectionError {}
/** Nothing listens at the service's address (no proxy in the way). */
export class DocexConnectionRefusedError extends DocexConnectionError {}
/** The proxy cannot be reached, or refused to open a tunnel to the service. `proxy` is redacted. */
export class DocexProxyError extends DocexConnectionError {
  get proxy(): string {
    const f = this.failure;
    return f && 'proxy' in f ? f.proxy : '';
  }
}
/** 407 from the proxy: no credentials, or refused ones. Retrying does not help. */
export class DocexProxyAuthError extends DocexProxyError {}
/** The service's certificate was refused; `reason` says why. Retrying does not help. */
export class DocexTlsError extends DocexConnectionError {
  get reason(): string {
    return this.failure?.type === 'tls' ? this.failure.reason : 'other';
  }
}

export class DocexAbortError extends DocexError {
  constructor(operation: string, message: string, options: { cause?: unknown } = {}) {
    super(operation, message, { kind: 'aborted', cause: options.cause });
  }
}

/** A buffered answer larger than the client's `maxResponseBytes` (streamed downloads have no cap). */
export class DocexResponseTooLargeError extends DocexError {
  /** Bytes announced (Content-Length) or read before giving up. */
  readonly size: number;
  readonly limit: number;
  constructor(operation: string, size: number, limit: number) {
    super(
      operation,
      `answer of ${size} bytes or more exceeds the limit of ${limit} bytes for a buffered answer (maxResponseBytes)`,
    );
    this.size = size;
    this.limit = limit;
  }
}

/** An answer whose shape cannot be used; `path` points at the bad value. */
export class DocexResponseShapeError extends DocexError {
  readonly path: string;
  readonly body: unknown;
  constructor(operation: string, path: string, problem: string, body: unknown) {
    super(operation, `unexpected answer from the server at ${path || '(root)'}: ${problem}`);
    this.path = path;
    this.body = body;
  }
}

/** waitForTask gave up: the task was still not finished when the time ran out. */
export class DocexTaskTimeoutError extends DocexError {
  readonly taskId: string;
  readonly lastStatus: string | undefined;
  constructor(taskId: string, timeoutMs: number, lastStatus: string | undefined) {
    super(
      'fetch_tasks_results',
      `task ${taskId} not finished after ${Math.round(timeoutMs / 1000)} s (last status: ${lastStatus ?? 'none'})`,
      { kind: 'transient' },
    );
    this.taskId = taskId;
    this.lastStatus = lastStatus;
  }
}

const REASONS: Record<number, string> = {
  301: 'Moved Permanently',
  302: 'Found',
  303: 'See Other',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};
const reason = (status: number) => REASONS[status] ?? (status >= 500 ? 'Server Error' : 'Error');

export function formatDetail(d: ValidationDetail): string {
  const loc = d.loc.filter((part, i) => !(i === 0 && part === 'body' && d.loc.length > 1)).join('.');
  return loc ? `${loc}: ${d.msg}` : d.msg;
}

function validationDetails(body: unknown): ValidationDetail[] {
  const detail = body && typeof body === 'object' ? (body as { detail?: unknown }).detail : undefined;
  if (!Array.isArray(detail)) return [];
  return detail.flatMap((d) => {
    const parsed = ValidationDetail.safeParse(d);
    return parsed.success ? [parsed.data] : [];
  });
}

/** The server's message, whatever shape the error body has. */
export function serverMessageOf(body: unknown): string {
  if (typeof body === 'string') return body.trim().slice(0, 500);
  if (!body || typeof body !== 'object') return '';
  const o = body as Record<string, unknown>;
  const details = validationDetails(body);
  if (details.length > 0) return details.map(formatDetail).join('; ');
  for (const key of ['detail', 'message', 'error', 'error_description', 'title']) {
    const v = o[key];
    if (typeof v === 'string' && v) return v;
    if (v && typeof v === 'object' && typeof (v as { message?: unknown }).message === 'string')
      return (v as { message: string }).message;
  }
  return '';
}

/** Words of a 403 that mean "who are you?" (FastAPI's HTTPBearer says "Not authenticated"). */
const AUTH_WORDS =
  /not authenticated|authentication|invalid (api[ _-]?)?key|invalid (authentication )?credentials|invalid token|unauthori[sz]ed|api[ _-]?key|bearer|credential|expired/i;
/** Words of a 403 that mean "you may not": these win over AUTH_WORDS ("API key lacks permission"). */
const PERMISSION_WORDS =
  /permission|not allowed|forbidden|access denied|denied|another company|other company|not authori[sz]ed to|insufficient|scope|belong/i;

/** 403 is "who are you?" only when the server says so and says nothing about permissions. */
export function isAuthenticationMessage(message: string): boolean {
  return AUTH_WORDS.test(message) && !PERMISSION_WORDS.test(message);
}

type ApiErrorClass = new (init: ApiErrorInit) => DocexApiError;

function classFor(status: number, message: string, batchError: BatchFileError | undefined): ApiErrorClass {
  if (status === 400) return DocexBadRequestError;
  if (status === 401) return DocexAuthenticationError;
  if (status === 403)
    return !batchError && isAuthenticationMessage(message) ? DocexAuthenticationError : DocexPermissionError;
  if (status === 404) return DocexNotFoundError;
  if (status === 409) return DocexConflictError;
  if (status === 413) return DocexPayloadTooLargeError;
  if (status === 422) return DocexValidationError;
  if (status === 429) return DocexRateLimitError;
  if (status >= 300 && status < 400) return DocexRedirectError;
  if (status >= 500) return DocexServerError;
  return DocexApiError;
}

/** Every string inside a JSON-like value passed through `redact` (server answers may echo the key). */
export function redactDeep<T>(value: T, redact: (s: string) => string, depth = 0): T {
  if (typeof value === 'string') return redact(value) as T;
  if (depth > 32 || !value || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, redact, depth + 1)) as T;
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)
    return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [redact(k), redactDeep(v, redact, depth + 1)]),
  ) as T;
}

/** A BatchFileErrorResponse, sent as the body or wrapped in FastAPI's `{"detail": {...}}`. */
function batchErrorOf(body: unknown): BatchFileError | undefined {
  const direct = BatchFileError.safeParse(body);
  if (direct.success) return direct.data;
  const detail = body && typeof body === 'object' ? (body as { detail?: unknown }).detail : undefined;
  const wrapped = BatchFileError.safeParse(detail);
  return wrapped.success ? wrapped.data : undefined;
}

/** Map an HTTP error answer to the right class. Body and headers are redacted before they are kept. */
export function apiErrorFrom(
  operation: string,
  response: TransportResponse,
  redact: (s: string) => string,
  nowMs: number,
): DocexApiError {
  const safe: TransportResponse = {
    status: response.status,
    headers: redactDeep(response.headers, redact),
    body: redactDeep(response.body, redact),
  };
  const batchError = batchErrorOf(safe.body);
  const message = redact(batchError ? batchError.message : serverMessageOf(safe.body));
  const Class = classFor(safe.status, message, batchError);
  return new Class({
    operation,
    status: safe.status,
    headers: safe.headers,
    body: safe.body,
    serverMessage: message,
    batchError,
    retryAfterMs: retryAfterMs(safe.headers, nowMs),
  });
}

function header(headers: TransportResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Retry-After (seconds or HTTP date) or retry-after-ms, in milliseconds. */
export function retryAfterMs(headers: TransportResponse['headers'], nowMs: number): number | undefined {
  const ms = header(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '' && Number.isFinite(Number(ms)) && Number(ms) >= 0)
    return Number(ms);
  const value = header(headers, 'retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  if (!/[a-z]/i.test(value)) return undefined; // not a number, not an HTTP date ("-3", "1e3")
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}
