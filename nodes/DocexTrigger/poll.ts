/**
 * The trigger's poll: at-least-once delivery of every document created or changed, built on the
 * core's changesSince (cursor, overlap, fingerprints, deleted documents skipped; see
 * shared/src/core/changes.ts). First activation without a start time begins "now": what already
 * sits in the margin window is recorded as seen, nothing is emitted.
 */
import {
  changesSince,
  documentsData,
  listDocuments,
  type ChangeCursor,
  type DocexClient,
  type DocumentData,
} from '@docex/shared';

export { fingerprint } from '@docex/shared';

/** Default margin subtracted from the cursor (clock skew, late commits). */
export const DEFAULT_MARGIN_MS = 2 * 60_000;

/** Kept in the node's static data (`this.getWorkflowStaticData('node')`): plain JSON. */
export type TriggerState = ChangeCursor;

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

/** One poll. Returns what to emit (null: nothing) and updates `state` only when it succeeded. */
export async function pollChanges(
  client: DocexClient,
  state: TriggerState,
  options: PollOptions,
): Promise<Emitted[] | null> {
  const changes = await changesSince(client, state, {
    ...options,
    overlapMs: options.marginMs ?? DEFAULT_MARGIN_MS,
    baselineFirstRun: true,
  });
  Object.assign(state, changes.next);
  const out = changes.documents.map((d) => (options.idsOnly ? { document_id: d.document_id } : d));
  return out.length > 0 ? out : null;
}

/** Manual runs ("Fetch Test Event"): the most recent documents, newest first; the state is not touched. */
export async function recentDocuments(
  client: DocexClient,
  options: Omit<PollOptions, 'now' | 'marginMs'> & { limit: number },
): Promise<Emitted[]> {
  const ids = await listDocuments(client, { ...options, since: options.startTime });
  const recent = ids.reverse().slice(0, Math.max(1, options.limit));
  if (options.idsOnly) return recent.map((document_id) => ({ document_id }));
  return await documentsData(client, recent);
}
