/**
 * What the core needs from the outside world. The daemon plugs in got + p-queue
 * (shared/src/node/transport.ts); the n8n nodes plug in httpRequestWithAuthentication.
 * A transport adds the base URL and the credential; the core never sees the API key.
 */
import type { HttpMethod, OperationName } from './operations.ts';

/**
 * A file to upload. `path` and `data` can be sent again on a retry; a `stream` cannot. A path's
 * `size` is what the caller found when it looked at the file (it lets the file share an upload).
 */
export type FileInput =
  | { path: string; fileName?: string; contentType?: string; size?: number }
  | { data: Uint8Array; fileName: string; contentType?: string }
  | { stream: AsyncIterable<Uint8Array>; fileName: string; contentType?: string; size?: number };

export type MultipartPart =
  { name: string; value: string } | { name: string; file: FileInput; fileName: string; contentType: string };

export type RequestBody = { type: 'json'; value: unknown } | { type: 'multipart'; parts: MultipartPart[] };

export interface TransportRequest {
  operation: OperationName;
  method: HttpMethod;
  /** Path with path parameters filled in, e.g. /v1/fetch_folder/ */
  path: string;
  query: Array<[string, string]>;
  headers: Record<string, string>;
  body?: RequestBody;
  /** 'binary': a 2xx body is handed back as a stream; error bodies are always read as JSON or text. */
  responseType: 'json' | 'binary';
  /** Sending it twice cannot change the outcome (OPERATIONS[name].idempotent). */
  idempotent?: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Among requests waiting for one of the transport's slots, higher goes first (default 0). */
  priority?: number;
}

export interface TransportResponse {
  status: number;
  /** Lower-case header names. */
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, text, or '' for JSON responses and errors; the byte stream for 2xx binary responses. */
  body: unknown;
}

export interface Transport {
  send(request: TransportRequest): Promise<TransportResponse>;
}

/**
 * Thrown by transports for failures without an HTTP answer. `requestSent: false` means the server
 * cannot have seen the request (connection refused, DNS), which makes even an unsafe retry safe.
 */
export class TransportError extends Error {
  readonly kind: 'connection' | 'timeout' | 'abort';
  readonly code: string | undefined;
  readonly requestSent: boolean;
  /** What failed, when the transport could tell (DNS, proxy, certificate...): see NetworkFailure. */
  readonly failure: NetworkFailure | undefined;
  constructor(
    kind: 'connection' | 'timeout' | 'abort',
    message: string,
    options: { code?: string; requestSent: boolean; cause?: unknown; failure?: NetworkFailure },
  ) {
    super(message, { cause: options.cause });
    this.name = 'TransportError';
    this.kind = kind;
    this.code = options.code;
    this.requestSent = options.requestSent;
    this.failure = options.failure;
  }
}

/** Why a certificate was refused. */
export type TlsFailureReason = 'unknown-issuer' | 'name-mismatch' | 'expired' | 'not-yet-valid' | 'other';

/**
 * A failure to reach the service, told apart so that the message can say what to do. Proxy URLs in
 * here are already redacted (redactProxyUrl); none of these can have reached the service.
 */
export type NetworkFailure =
  | { type: 'dns'; host: string }
  | { type: 'refused'; address: string }
  | { type: 'proxy-unreachable'; proxy: string; detail: string }
  /** 407 (or 401, which tinyproxy sends for a wrong password): credentials missing or refused. */
  | { type: 'proxy-auth'; proxy: string; credentialsSent: boolean; status: number; statusText: string }
  /** The proxy answered CONNECT with another status (its ACL, or it could not reach the service). */
  | { type: 'proxy-refused'; proxy: string; target: string; status: number; statusText: string }
  | {
      type: 'tls';
      reason: TlsFailureReason;
      /** The host name the certificate was checked against. */
      host: string;
      /** The OpenSSL / Node code (UNABLE_TO_VERIFY_LEAF_SIGNATURE, ERR_TLS_CERT_ALTNAME_INVALID...). */
      code: string;
      subject?: string;
      issuer?: string;
      /** The names the certificate holds (its subjectAltName). */
      names?: string;
      validFrom?: string;
      validTo?: string;
    };

/** Codes of errors raised before a request can have reached the server. */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** pino-compatible. */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** One request as a support trace shows it (DOCEX_DEBUG=http, --debug). Nothing secret is in here. */
export interface RequestTrace {
  method: string;
  /** Path and query, never the host's credentials (the key travels in a header, never shown). */
  path: string;
  /** The answer's status, or undefined when none came. */
  status: number | undefined;
  /**
   * The error code when the request failed (ECONNRESET, ETIMEDOUT, EPROXYAUTH...); with a status,
   * how a download's body was cut short after that answer (its code, or 'left unread').
   */
  error: string | undefined;
  ms: number;
  sentBytes: number;
  receivedBytes: number;
  /** The proxy, credentials redacted; undefined for a direct connection. */
  proxy: string | undefined;
}

/**
 * `http: GET /v1/fetch_all_folders/ 200 12 ms sent 0 B received 341 B direct`; a download cut after
 * its answer: `http: GET /v1/fetch_file/?document_id=7 200, body cut short (ECONNRESET) ...`.
 */
export function formatRequestTrace(t: RequestTrace): string {
  const outcome =
    t.status === undefined
      ? `failed (${t.error ?? 'no answer'})`
      : t.error === undefined
        ? String(t.status)
        : `${t.status}, body cut short (${t.error})`;
  return `http: ${t.method} ${t.path} ${outcome} ${t.ms} ms sent ${t.sentBytes} B received ${t.receivedBytes} B ${
    t.proxy ? `via proxy ${t.proxy}` : 'direct'
  }`;
}
