/**
 * The shared client's Transport inside n8n: every request goes through
 * `this.helpers.httpRequestWithAuthentication.call(this, 'docexApi', ...)`, so n8n adds the Bearer
 * header from the credential (its generic `authenticate`), applies its proxy and SSRF settings and
 * cancels the request when the execution is stopped. The core builds the request (query, JSON body,
 * multipart parts) and reads the answer; this file moves bytes, and paces them: every execution of
 * this n8n process that uses one credential takes its send slots from one schedule (SEND_SLOTS), at
 * the credential's "Requests per Second", and pauses with the others after a 429 (issue #43).
 */
import {
  sleep,
  type IAdditionalCredentialOptions,
  type IDataObject,
  type IExecuteFunctions,
  type IHttpRequestMethods,
  type IHttpRequestOptions,
  type ILoadOptionsFunctions,
  type IPollFunctions,
} from 'n8n-workflow';
import {
  DocexClient,
  makeBoundary,
  multipartToBytes,
  NOT_SENT_CODES,
  planMultipart,
  retryAfterMs,
  SendSlots,
  TransportError,
  waitForSendSlot,
  type Sleep,
  type SlotRate,
  type Transport,
  type TransportRequest,
  type TransportResponse,
} from '@docex/shared';

import { redactApiKey } from '../../../credentials/DocexApi.credentials.ts';

export const CREDENTIAL_TYPE = 'docexApi';

export type DocexContext = IExecuteFunctions | IPollFunctions | ILoadOptionsFunctions;

export interface DocexCredentials {
  baseUrl: string;
  apiKey: string;
  /** Absent in credentials saved before the setting existed: DEFAULT_REQUESTS_PER_SECOND. */
  requestsPerSecond?: number | string | null;
}

/**
 * The credential's default rate. The API document states no rate limit ("not shown"); 10 requests a
 * second is what docex-sync defaults to as well (docs/decisions.md, "n8n: one send schedule per credential").
 */
export const DEFAULT_REQUESTS_PER_SECOND = 10;

/**
 * How long one call keeps retrying 429s (past its 3 retries) before its error reaches the workflow:
 * a 429 says "later", and an execution of a burst may have to wait for dozens of others.
 */
export const RATE_LIMIT_BUDGET_MS = 5 * 60_000;

/** A Retry-After longer than this is not waited out (the error goes to the workflow at once). */
const MAX_RETRY_AFTER_MS = 60_000;

/**
 * The send schedule of this n8n process: module state, so that every execution that uses one
 * credential shares it (docs/decisions.md says why module state is allowed here). Keyed by base URL
 * and a digest of the API key, never the key; at most 256 credentials are remembered.
 */
const SEND_SLOTS = new SendSlots({ maxKeys: 256 });

/** How a transport paces its requests: whose slots it takes, at what rate, on which clock. */
export interface Pacing {
  slots: SendSlots;
  key: string;
  rate: SlotRate;
  /** A steady clock in ms. */
  now: () => number;
  sleep: Sleep;
  /**
   * The credential as this execution read it: handed to n8n's helper with every request, so that
   * the helper does not read and decrypt it from n8n's database again between the request's turn
   * and its sending (which, in a burst, made a request's time on the wire late and uneven).
   */
  credentials?: IAdditionalCredentialOptions;
}

interface FullResponse {
  statusCode: number;
  headers?: IDataObject;
  body: unknown;
}

const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ECONNABORTED', 'ESOCKETTIMEDOUT']);

const lowerCaseHeaders = (headers: IDataObject | undefined): TransportResponse['headers'] =>
  Object.fromEntries(
    Object.entries(headers ?? {}).map(([k, v]) => [
      k.toLowerCase(),
      Array.isArray(v) ? v.map(String) : v === undefined || v === null ? undefined : String(v),
    ]),
  );

const toBuffer = (body: unknown): Buffer => {
  if (Buffer.isBuffer(body)) return body;
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  return Buffer.from(body === undefined || body === null ? '' : JSON.stringify(body), 'utf8');
};

/** JSON when it parses, else the text ('' for an empty body): what the core's error mapping expects. */
const parseText = (text: string): unknown => {
  if (text.trim() === '') return '';
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
};

/** The n8n request for one core request. Exported for the tests. */
export function toHttpRequestOptions(baseUrl: string, request: TransportRequest): IHttpRequestOptions {
  const query = new URLSearchParams(request.query).toString();
  const headers: IDataObject = { ...request.headers };
  const options: IHttpRequestOptions = {
    method: request.method as IHttpRequestMethods,
    // Built here, not with `qs`: the core's encoding keeps `+` of a time offset as %2B.
    url: `${baseUrl.replace(/\/+$/, '')}${request.path}${query ? `?${query}` : ''}`,
    headers,
    returnFullResponse: true,
    ignoreHttpStatusErrors: true,
    // A redirect comes back to the core as a 3xx (DocexRedirectError): the credential never follows
    // it to another origin, and a write is never re-sent somewhere else (docs/decisions.md).
    disableFollowRedirect: true,
  };
  if (request.responseType === 'binary') {
    // Files and ZIP archives come back as bytes; an error answer (JSON) is parsed from them below.
    options.encoding = 'arraybuffer';
    options.json = false;
  } else {
    options.json = true;
  }
  if (request.body?.type === 'json') {
    // Sent as a string: n8n drops an empty object body ({}), which create_folder may legitimately send.
    options.body = JSON.stringify(request.body.value);
    headers['content-type'] = 'application/json';
  } else if (request.body?.type === 'multipart') {
    const plan = planMultipart(request.body.parts, makeBoundary(Math.random));
    options.body = Buffer.from(multipartToBytes(plan));
    headers['content-type'] = plan.contentType;
  } else if (request.method !== 'GET') {
    headers['content-length'] = '0';
  }
  if (request.timeoutMs !== undefined) options.timeout = request.timeoutMs;
  return options;
}

/** n8n wraps a failed request in a NodeApiError whose `cause` is the HTTP library's error. */
function failureOf(error: unknown): TransportError {
  const e = error as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const rawCode =
    typeof e.cause?.code === 'string' ? e.cause.code : typeof e.code === 'string' ? e.code : undefined;
  const message =
    typeof e.cause?.message === 'string' && e.cause.message
      ? e.cause.message
      : typeof e.message === 'string'
        ? e.message
        : 'request failed';
  const aborted = rawCode === 'ERR_CANCELED' || /aborted|canceled/i.test(message);
  const kind = aborted ? 'abort' : rawCode && TIMEOUT_CODES.has(rawCode) ? 'timeout' : 'connection';
  return new TransportError(kind, message, {
    code: rawCode,
    requestSent: !(rawCode && NOT_SENT_CODES.has(rawCode)),
    cause: error,
  });
}

export function n8nTransport(ctx: DocexContext, baseUrl: string, pacing?: Pacing): Transport {
  return {
    async send(request) {
      const options = toHttpRequestOptions(baseUrl, request);
      // The credential's turn: spaced at its rate, after any 429 pause, and never more requests
      // counting than its rate allows (each counts until a second after its answer).
      const slot = pacing
        ? await waitForSendSlot(pacing.slots, pacing.key, pacing.rate, {
            now: pacing.now,
            sleep: pacing.sleep,
            signal: request.signal,
            operation: request.operation,
          })
        : undefined;
      let response: FullResponse;
      try {
        response = (await ctx.helpers.httpRequestWithAuthentication.call(
          ctx,
          CREDENTIAL_TYPE,
          options,
          pacing?.credentials,
        )) as FullResponse;
      } catch (error) {
        if (slot) pacing!.slots.answered(slot, pacing!.now());
        throw failureOf(error);
      }
      const status = response.statusCode;
      const headers = lowerCaseHeaders(response.headers);
      if (slot) {
        pacing!.slots.answered(slot, pacing!.now(), status);
        if (status === 429) {
          // Every execution of this credential pauses, not only this one; a wait too long to sit
          // out is this call's error (the core's maxRetryAfterMs) and does not freeze the others.
          const wait = retryAfterMs(headers, Date.now());
          pacing!.slots.refused(
            pacing!.key,
            pacing!.now(),
            wait !== undefined && wait <= MAX_RETRY_AFTER_MS ? wait : undefined,
          );
        }
      }
      if (request.responseType === 'binary') {
        const bytes = toBuffer(response.body);
        if (status >= 200 && status < 300) return { status, headers, body: bytes };
        return { status, headers, body: parseText(bytes.toString('utf8')) };
      }
      const body = response.body;
      if (typeof body === 'string') return { status, headers, body: parseText(body) };
      if (Buffer.isBuffer(body) || body instanceof ArrayBuffer)
        return { status, headers, body: parseText(toBuffer(body).toString('utf8')) };
      return { status, headers, body: body ?? '' };
    },
  };
}

/** The credential's "Requests per Second" (its default when absent); a wrong value says what to set. */
export function requestsPerSecondOf(credentials: Pick<DocexCredentials, 'requestsPerSecond'>): number {
  const raw = credentials.requestsPerSecond;
  if (raw === undefined || raw === null || raw === '') return DEFAULT_REQUESTS_PER_SECOND;
  const rate = Number(raw);
  if (Number.isFinite(rate) && rate > 0) return rate;
  throw new Error(
    `The credential's Requests per Second must be a number above 0 (got ${JSON.stringify(raw)}): ` +
      `set it to the rate your Document Extraction Service allows (default ${DEFAULT_REQUESTS_PER_SECOND})`,
  );
}

/** The schedule's key for a credential: its base URL and a SHA-256 digest of its API key, never the key. */
export async function sendSlotKey(baseUrl: string, apiKey: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(apiKey));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${baseUrl.replace(/\/+$/, '')} ${hex}`;
}

/** The clock a client paces and retries on: a steady one, and n8n's sleep (no timers of our own). */
export interface ClientClock {
  now: () => number;
  sleep: Sleep;
}

const N8N_CLOCK: ClientClock = { now: () => performance.now(), sleep: async (ms) => await sleep(ms) };

/**
 * The shared client over n8n's HTTP helper, with n8n's `sleep`, the API key kept out of messages,
 * and the process's send schedule for this credential. Tests pass their own clock and schedule.
 */
export async function docexClient(
  ctx: DocexContext,
  clock: ClientClock = N8N_CLOCK,
  slots: SendSlots = SEND_SLOTS,
): Promise<DocexClient> {
  const data = await ctx.getCredentials(CREDENTIAL_TYPE);
  const credentials = data as Partial<DocexCredentials>;
  const apiKey = String(credentials.apiKey ?? '');
  const baseUrl = String(credentials.baseUrl ?? '');
  const saved = ctx.getNode().credentials?.[CREDENTIAL_TYPE];
  const pacing: Pacing = {
    slots,
    key: await sendSlotKey(baseUrl, apiKey),
    rate: { perSecond: requestsPerSecondOf(credentials) },
    ...clock,
    credentials:
      typeof saved?.id === 'string'
        ? {
            credentialsDecrypted: {
              id: saved.id,
              name: saved.name,
              type: CREDENTIAL_TYPE,
              data,
            },
          }
        : undefined,
  };
  return new DocexClient({
    transport: n8nTransport(ctx, baseUrl, pacing),
    sleep: clock.sleep,
    // Durations (the retry budget, cool-downs, task waits) on the steady clock.
    elapsed: clock.now,
    // n8n's own "Retry On Fail" covers the rest; these retries are the safe ones (429, refused
    // connections, idempotent reads after a 5xx), with waits short enough for a workflow step. A 429
    // goes on past the 3 retries for RATE_LIMIT_BUDGET_MS: in a burst it only means "your turn later".
    retry: {
      maxRetries: 3,
      maxDelayMs: 10_000,
      maxRetryAfterMs: MAX_RETRY_AFTER_MS,
      rateLimitBudgetMs: RATE_LIMIT_BUDGET_MS,
    },
    redact: redactApiKey(apiKey),
  });
}
