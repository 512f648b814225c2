/**
 * The shared client's Transport inside n8n: every request goes through
 * `this.helpers.httpRequestWithAuthentication.call(this, 'docexApi', ...)`, so n8n adds the Bearer
 * header from the credential (its generic `authenticate`), applies its proxy and SSRF settings and
 * cancels the request when the execution is stopped. The core builds the request (query, JSON body,
 * multipart parts) and reads the answer; this file only moves bytes.
 */
import {
  sleep,
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
  TransportError,
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

export function n8nTransport(ctx: DocexContext, baseUrl: string): Transport {
  return {
    async send(request) {
      const options = toHttpRequestOptions(baseUrl, request);
      let response: FullResponse;
      try {
        response = (await ctx.helpers.httpRequestWithAuthentication.call(
          ctx,
          CREDENTIAL_TYPE,
          options,
        )) as FullResponse;
      } catch (error) {
        throw failureOf(error);
      }
      const status = response.statusCode;
      const headers = lowerCaseHeaders(response.headers);
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

/** The shared client over n8n's HTTP helper, with n8n's `sleep` and the API key kept out of messages. */
export async function docexClient(ctx: DocexContext): Promise<DocexClient> {
  const credentials = await ctx.getCredentials<DocexCredentials>(CREDENTIAL_TYPE);
  const apiKey = String(credentials.apiKey ?? '');
  return new DocexClient({
    transport: n8nTransport(ctx, String(credentials.baseUrl ?? '')),
    sleep: async (ms) => await sleep(ms),
    // n8n's own "Retry On Fail" covers the rest; these retries are the safe ones (429, refused connections,
    // idempotent reads after a 5xx), with waits short enough for a workflow step.
    retry: { maxRetries: 3, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 },
    redact: redactApiKey(apiKey),
  });
}
