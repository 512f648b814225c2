/**
 * "Documents changed since a cursor", once for everyone who needs it: the n8n trigger, Document >
 * Get Many and the daemon's pull. Pure: the client and the clock come in.
 *
 * - The cursor is the time at which the last successful run *started*. A run asks for documents
 *   updated since `cursor - overlapMs`: the overlap covers clock skew between this machine and the
 *   service, and documents whose update was stamped before the previous run but committed after it.
 * - Each document of the window is fingerprinted (a hash of its data, which carries its update time
 *   when the service sends one). It is reported unless the same fingerprint was already seen in the
 *   previous window, so the overlap does not repeat documents, while a document changed again inside
 *   the overlap (new data) is reported again.
 * - Data is read with bounded concurrency; a document deleted between the listing and the read (404)
 *   is left out.
 * - The caller stores `next` only once it has handled every reported document: a failed run is
 *   repeated from the same cursor.
 * - The first run starts at `startTime` when given (everything changed since then is reported);
 *   otherwise an overlap before now, and with `baselineFirstRun` what sits there is only recorded
 *   as seen, not reported.
 */
import type { DocexClient } from './client.ts';
import { DocexNotFoundError } from './errors.ts';
import type { DocumentData } from './schemas.ts';

/** A caller's stored state: plain JSON. */
export interface ChangeCursor {
  /** ISO time at which the last successful run started. */
  cursor?: string;
  /** Document ID → fingerprint, for every document of the last run's window. */
  seen?: Record<string, string>;
}

export interface DocumentFilters {
  folderId?: number;
  templateId?: number;
}

export interface ChangesOptions extends DocumentFilters {
  /** The clock at the start of this run (becomes the next cursor). */
  now: Date;
  overlapMs: number;
  /** First run: report what changed since this time instead of starting an overlap before now (sent as given). */
  startTime?: string | Date;
  /** First run without startTime: record what is there as seen, report nothing. */
  baselineFirstRun?: boolean;
  /** Documents whose data is read at the same time (default 4). */
  concurrency?: number;
  signal?: AbortSignal;
  /** Told after each document's data was read (or found deleted): read so far, listed in all. */
  onProgress?: (progress: { done: number; total: number }) => void;
}

export interface Changes {
  /** Changed documents, by ascending ID. */
  documents: DocumentData[];
  /** The state to store once the documents were handled. */
  next: Required<ChangeCursor>;
  /** The updated_since that was asked for. */
  since: string | Date;
  /** IDs the listing returned (after de-duplication). */
  listed: number;
  /** Listed, but deleted before their data could be read. */
  vanished: number;
}

export const DEFAULT_DATA_CONCURRENCY = 4;

export async function changesSince(
  client: DocexClient,
  state: ChangeCursor,
  options: ChangesOptions,
): Promise<Changes> {
  const now = options.now;
  const first = !state.cursor;
  const since = state.cursor
    ? new Date(Date.parse(state.cursor) - options.overlapMs)
    : (options.startTime ?? new Date(now.getTime() - options.overlapMs));
  const ids = await listDocuments(client, { ...options, since });
  const data = await documentsData(client, ids, options);
  const previous = state.seen ?? {};
  const seen: Record<string, string> = {};
  const documents: DocumentData[] = [];
  const baseline = first && options.startTime === undefined && options.baselineFirstRun === true;
  for (const d of data) {
    const print = fingerprint(d);
    seen[d.document_id] = print;
    if (!baseline && previous[d.document_id] !== print) documents.push(d);
  }
  return {
    documents,
    next: { cursor: now.toISOString(), seen },
    since,
    listed: ids.length,
    vanished: ids.length - data.length,
  };
}

/** fetch_documents with the filters, de-duplicated, by ascending ID. */
export async function listDocuments(
  client: DocexClient,
  options: DocumentFilters & { since?: string | Date; signal?: AbortSignal },
): Promise<number[]> {
  const ids = await client.fetchDocuments(
    {
      folder_id: options.folderId,
      template_id: options.templateId,
      ...(options.since !== undefined ? { updated_since: options.since } : {}),
    },
    { signal: options.signal },
  );
  return [...new Set(ids)].sort((a, b) => a - b);
}

/** The data of each document, in the order given, read `concurrency` at a time; deleted ones left out. */
export async function documentsData(
  client: DocexClient,
  ids: readonly number[],
  options: Pick<ChangesOptions, 'concurrency' | 'signal' | 'onProgress'> = {},
): Promise<DocumentData[]> {
  let done = 0;
  const data = await mapLimit(ids, options.concurrency ?? DEFAULT_DATA_CONCURRENCY, async (document_id) => {
    const d = await unlessMissing(client.fetchDocumentData({ document_id }, { signal: options.signal }));
    options.onProgress?.({ done: ++done, total: ids.length });
    return d;
  });
  return data.filter((d): d is DocumentData => d !== undefined);
}

/** The answer, or undefined when the thing asked for no longer exists (404). */
export async function unlessMissing<T>(promise: Promise<T>): Promise<T | undefined> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) return outcome.value;
  if (outcome.error instanceof DocexNotFoundError) return undefined;
  throw outcome.error;
}

/**
 * Bounded concurrency without timers: at most `limit` calls of `fn` in flight, results in input
 * order. After a failure no new call starts; the ones in flight finish; the first failure is thrown.
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const index = next++;
      let ok = false;
      try {
        results[index] = await fn(items[index]!, index);
        ok = true;
      } finally {
        if (!ok) failed = true;
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(Math.floor(limit) || 1, items.length)) }, worker);
  const settled = await Promise.allSettled(workers);
  const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejected) throw rejected.reason;
  return results;
}

/** FNV-1a over the data's JSON with sorted keys (the order the service sends keys in does not matter). */
export function fingerprint(data: unknown): string {
  const text = stableJson(data);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return `${text.length.toString(36)}.${(h >>> 0).toString(36)}`;
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}
