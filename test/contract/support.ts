/**
 * Helpers of the contract suite: clients that record which operations answered 2xx, raw requests
 * for what the client refuses to send, ZIP reading, error assertions, and the cleanup registry.
 */
import yauzl from 'yauzl';
import { expect } from 'vitest';
import {
  DocexApiError,
  DocexNotFoundError,
  retryAfterMs,
  type DocexClient,
  type TransportRequest,
} from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import type { NodeTransport } from '@docex/shared/node';

export interface Target {
  baseUrl: string;
  apiKey: string;
}

/**
 * Operations that answered 2xx at least once, by name; instruction calls sent in the path-segment
 * form are also recorded as `<name>#path` (and in the query form as `<name>#query`).
 */
export const exercised = new Set<string>();

function record(request: TransportRequest) {
  exercised.add(request.operation);
  if (/_instruction$/.test(request.operation) && request.operation !== 'create_instruction') {
    exercised.add(`${request.operation}#${/\/\d+$/.test(request.path) ? 'path' : 'query'}`);
  }
}

/** createNodeClient, with its transport wrapped so every 2xx answer is recorded in `exercised`. */
export function trackedClient(baseUrl: string, apiKey: string): DocexClient {
  const client = createNodeClient({
    baseUrl,
    apiKey,
    timeoutMs: 120_000,
    retry: { maxRetries: 2, initialDelayMs: 200 },
  });
  const transport: NodeTransport = client.transport;
  const send = transport.send.bind(transport);
  transport.send = async (request) => {
    const response = await send(request);
    if (response.status >= 200 && response.status < 300) record(request);
    return response;
  };
  return client;
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: unknown;
}

/** Methods a repeated request cannot do twice (the raw requests of the suite are all of these or POSTs). */
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
/** Failures before the server can have seen the request: safe to repeat for every method. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export interface RawOptions {
  query?: Record<string, string>;
  body?: unknown;
  apiKey?: string | null;
  /** Further attempts after a 429 or a reset (default 4). */
  retries?: number;
  /** A Retry-After above this is not waited out: the 429 is returned (default 60 s). */
  maxWaitMs?: number;
  sleep?: (ms: number) => Promise<void>;
}

const errorCode = (error: unknown): string | undefined => {
  for (let e = error as { code?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code === 'string') return e.code;
  }
  return undefined;
};

/**
 * A request sent with fetch, bypassing the client (for input the client refuses to send). Like the
 * client, it honours 429 + Retry-After (seconds or HTTP date; 1 s when absent) for every method, and
 * repeats a reset or dropped connection for idempotent methods (and a refused one for all), so one
 * 429 or one closed keep-alive connection of a live deployment does not fail the next assertion.
 */
export async function raw(
  target: Target,
  method: string,
  path: string,
  options: RawOptions = {},
): Promise<RawAnswer> {
  const url = new URL(target.baseUrl.replace(/\/+$/, '') + path);
  for (const [k, v] of Object.entries(options.query ?? {})) url.searchParams.append(k, v);
  const key = options.apiKey === undefined ? target.apiKey : options.apiKey;
  const retries = options.retries ?? 4;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  for (let attempt = 0; ; attempt++) {
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
          ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
    } catch (error) {
      const code = errorCode(error);
      const repeatable = IDEMPOTENT_METHODS.has(method.toUpperCase()) || (code && NOT_SENT.has(code));
      if (!repeatable || attempt >= retries) throw error;
      await sleep(100 * 2 ** attempt);
      continue;
    }
    const text = await response.text();
    const headers = Object.fromEntries(response.headers);
    if (response.status === 429 && attempt < retries) {
      const wait = retryAfterMs(headers, Date.now()) ?? 1000;
      if (wait <= (options.maxWaitMs ?? 60_000)) {
        await sleep(wait);
        continue;
      }
    }
    let json: unknown = undefined;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: response.status, headers, text, json };
  }
}

/** The entries of a ZIP archive, read from its central directory, with their contents. */
export function zipEntries(bytes: Uint8Array): Promise<Array<{ name: string; data: Buffer }>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(Buffer.from(bytes), { lazyEntries: true }, (error, zip) => {
      if (error || !zip) return reject(error ?? new Error('not a ZIP archive'));
      const entries: Array<{ name: string; data: Buffer }> = [];
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (streamError, stream) => {
          if (streamError || !stream) return reject(streamError ?? new Error('unreadable entry'));
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('error', reject);
          stream.on('end', () => {
            entries.push({ name: entry.fileName, data: Buffer.concat(chunks) });
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(entries));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

/** The error a promise rejects with (fails the test when it resolves). */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('expected the call to fail, it succeeded'),
    (error: unknown) => error,
  );
}

/** Awaits a DocexApiError with one of the statuses (and the batch error_code, when given). */
export async function expectApiError(
  promise: Promise<unknown>,
  statuses: number | number[],
  code?: string,
): Promise<DocexApiError> {
  const error = await rejection(promise);
  const allowed = Array.isArray(statuses) ? statuses : [statuses];
  expect(error, `expected HTTP ${allowed.join('/')}, got ${String(error)}`).toBeInstanceOf(DocexApiError);
  const apiError = error as DocexApiError;
  expect(allowed, apiError.message).toContain(apiError.status);
  if (code) expect(apiError.code, apiError.message).toBe(code);
  return apiError;
}

/** A 4xx answer to a raw request (the document gives no status for these refusals). */
export function expectClientError(answer: RawAnswer) {
  expect(answer.status, answer.text).toBeGreaterThanOrEqual(400);
  expect(answer.status, answer.text).toBeLessThan(500);
}

/** Ids of what the suite created and has not deleted yet; afterAll deletes what is left. */
export class Created {
  readonly folders = new Set<number>();
  readonly templates = new Set<number>();
  readonly fields = new Set<number>();
  readonly instructions = new Set<number>();
  readonly documents = new Set<number>();

  /**
   * Deletes everything left, children first: documents (with their files), instructions, fields,
   * templates (override: their documents too), folders. A 404 counts as deleted. Returns what could
   * not be deleted.
   */
  async deleteAll(client: DocexClient): Promise<string[]> {
    const failures: string[] = [];
    const attempt = async (what: string, set: Set<number>, id: number, del: () => Promise<unknown>) => {
      try {
        await del();
        set.delete(id);
      } catch (error) {
        if (error instanceof DocexNotFoundError) set.delete(id);
        else failures.push(`${what} ${id}: ${error instanceof Error ? error.message : String(error)}`);
      }
    };
    for (const id of [...this.documents])
      await attempt('document', this.documents, id, () =>
        client.deleteDoc({ doc_id: id, delete_file: true }),
      );
    for (const id of [...this.instructions])
      await attempt('instruction', this.instructions, id, () =>
        client.deleteInstruction({ instruction_id: id }),
      );
    for (const id of [...this.fields])
      await attempt('field', this.fields, id, () => client.deleteField({ field_id: id }));
    for (const id of [...this.templates])
      await attempt('template', this.templates, id, () =>
        client.deleteTemplate({ template_id: id, override: true }),
      );
    for (const id of [...this.folders])
      await attempt('folder', this.folders, id, () => client.deleteFolder({ folder_id: id, override: true }));
    return failures;
  }
}

/** UTC calendar day (YYYY-MM-DD) of a time, shifted by whole days. */
export const utcDay = (ms: number, days = 0) => new Date(ms + days * 86_400_000).toISOString().slice(0, 10);

/** The same instant written as local time at a UTC offset of `hours` (e.g. 2 → "…T14:00:00+02:00"). */
export function withOffset(ms: number, hours: number): string {
  const wall = new Date(ms + hours * 3_600_000).toISOString().slice(0, 19);
  const sign = hours < 0 ? '-' : '+';
  return `${wall}${sign}${String(Math.abs(hours)).padStart(2, '0')}:00`;
}
