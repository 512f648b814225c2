/**
 * The trigger's poll: at-least-once delivery of every document created or changed, built on
 * fetch_documents(updated_since) and kept apart from n8n so it can be reasoned about and tested.
 *
 * - The cursor is the time (n8n's clock) at which the last successful poll *started*. A poll asks for
 *   documents updated since `cursor - margin`: the margin covers clock skew between n8n and the
 *   service, and documents whose update was stamped before the previous poll but committed after it.
 * - Each document of the window is fingerprinted (a hash of its data, which carries its update time
 *   when the service sends one). It is emitted unless the same fingerprint was already seen in the
 *   previous window, so the overlap does not repeat documents, while a document changed again
 *   inside the overlap (new data) is emitted again.
 * - Nothing is written to the state until the whole poll succeeded: a failed poll is repeated
 *   from the same cursor by the next one.
 * - First activation without a start time begins "now": what already sits in the margin window is
 *   recorded as seen, nothing is emitted. With a start time, everything changed since then comes.
 */
import type { DocexClient, DocumentData } from '../../shared/src/core/index.ts';
import { mapLimit, unlessMissing } from '../Docex/actions/pool.ts';

/** Default margin subtracted from the cursor (clock skew, late commits). */
export const DEFAULT_MARGIN_MS = 2 * 60_000;
/** Documents whose data is fetched at the same time. */
const DATA_CONCURRENCY = 4;

/** Kept in the node's static data (`this.getWorkflowStaticData('node')`): plain JSON. */
export interface TriggerState {
  /** ISO time at which the last successful poll started. */
  cursor?: string;
  /** Document ID → fingerprint, for every document of the last poll's window. */
  seen?: Record<string, string>;
}

export interface PollOptions {
  folderId?: number;
  templateId?: number;
  /** Emit `{ document_id }` only (the data is still read, to fingerprint it). */
  idsOnly: boolean;
  /** First activation: emit what changed since this time instead of starting from now. */
  startTime?: string;
  marginMs?: number;
  /** n8n's clock at the start of this poll. */
  now: Date;
}

export type Emitted = { document_id: number } | DocumentData;

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

/** The data of each document (in the order given); documents deleted meanwhile are left out. */
async function dataOf(client: DocexClient, ids: number[]): Promise<DocumentData[]> {
  const data = await mapLimit(ids, DATA_CONCURRENCY, async (document_id) =>
    // Deleted since it was listed: no longer one of the documents.
    unlessMissing(client.fetchDocumentData({ document_id })),
  );
  return data.filter((d): d is DocumentData => d !== undefined);
}

const filters = (o: Pick<PollOptions, 'folderId' | 'templateId'>) => ({
  folder_id: o.folderId,
  template_id: o.templateId,
});

/** One poll. Returns what to emit (null: nothing) and updates `state` only when it succeeded. */
export async function pollChanges(
  client: DocexClient,
  state: TriggerState,
  options: PollOptions,
): Promise<Emitted[] | null> {
  const margin = options.marginMs ?? DEFAULT_MARGIN_MS;
  const now = options.now;
  const first = !state.cursor;
  if (first && !options.startTime) {
    const ids = await client.fetchDocuments({
      updated_since: new Date(now.getTime() - margin),
      ...filters(options),
    });
    const seen: Record<string, string> = {};
    for (const d of await dataOf(client, [...new Set(ids)])) seen[d.document_id] = fingerprint(d);
    state.cursor = now.toISOString();
    state.seen = seen;
    return null;
  }
  // A start time is taken as given; later polls reach back by the margin.
  const since = first ? options.startTime! : new Date(Date.parse(state.cursor!) - margin);
  const ids = [...new Set(await client.fetchDocuments({ updated_since: since, ...filters(options) }))].sort(
    (a, b) => a - b,
  );
  const previous = state.seen ?? {};
  const seen: Record<string, string> = {};
  const out: Emitted[] = [];
  for (const data of await dataOf(client, ids)) {
    const print = fingerprint(data);
    seen[data.document_id] = print;
    if (previous[data.document_id] !== print)
      out.push(options.idsOnly ? { document_id: data.document_id } : data);
  }
  state.cursor = now.toISOString();
  state.seen = seen;
  return out.length > 0 ? out : null;
}

/** Manual runs ("Fetch Test Event"): the most recent documents, newest first; the state is not touched. */
export async function recentDocuments(
  client: DocexClient,
  options: Omit<PollOptions, 'now' | 'marginMs'> & { limit: number },
): Promise<Emitted[]> {
  const ids = await client.fetchDocuments({
    ...filters(options),
    ...(options.startTime ? { updated_since: options.startTime } : {}),
  });
  const recent = [...new Set(ids)].sort((a, b) => b - a).slice(0, Math.max(1, options.limit));
  if (options.idsOnly) return recent.map((document_id) => ({ document_id }));
  return await dataOf(client, recent);
}
