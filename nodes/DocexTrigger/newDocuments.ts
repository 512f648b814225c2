/**
 * "New Document": the changes poll (poll.ts, at-least-once, same cursor and overlap) narrowed to
 * documents whose ID the trigger has not seen before (known.ts). A rerun or an edit of a known
 * document is not an event. Like pollChanges, the state changes only when the whole poll succeeded.
 *
 * - First activation: every document that exists now is known, so nothing old is emitted. With
 *   Start From, the documents created (from the day before, the service's dates having no time zone)
 *   and changed since then are left unknown, so they come as new.
 * - After each poll every document of the poll's window is known, emitted or not.
 */
import type { DocexClient } from '@docex/shared';
import { addIds, hasId, type IdRanges } from './known.ts';
import { pollChanges, type Emitted, type PollOptions, type TriggerState } from './poll.ts';

export interface NewDocumentsState extends TriggerState {
  /** Every document ID the trigger has seen, as ranges. */
  known?: IdRanges;
}

const DAY_MS = 24 * 60 * 60_000;

async function knownAtStart(client: DocexClient, state: TriggerState, options: PollOptions) {
  const filters = { folder_id: options.folderId, template_id: options.templateId };
  const all = await client.fetchDocuments(filters);
  if (state.cursor || !options.startTime) return addIds([], all);
  const since = Date.parse(options.startTime);
  const created = new Date(since - DAY_MS).toISOString().slice(0, 10);
  const recent = new Set(
    await client.fetchDocuments({ ...filters, updated_since: options.startTime, start_date: created }),
  );
  return addIds(
    [],
    all.filter((id) => !recent.has(id)),
  );
}

export async function pollNewDocuments(
  client: DocexClient,
  state: NewDocumentsState,
  options: PollOptions,
): Promise<Emitted[] | null> {
  const known = state.known ?? (await knownAtStart(client, state, options));
  const changed = await pollChanges(client, state, options);
  const fresh = (changed ?? []).filter((d) => !hasId(known, d.document_id));
  addIds(known, Object.keys(state.seen ?? {}).map(Number));
  addIds(
    known,
    (changed ?? []).map((d) => d.document_id),
  );
  state.known = known;
  return fresh.length > 0 ? fresh : null;
}
