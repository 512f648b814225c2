/**
 * The core's "changes since a cursor" (shared/src/core/changes.ts), with a scripted client: the
 * overlap and fingerprint rules, documents deleted meanwhile, bounded concurrency, the first run.
 */
import { describe, expect, test } from 'vitest';
import {
  changesSince,
  DocexNotFoundError,
  DocexServerError,
  fingerprint,
  type ChangeCursor,
  type DocexClient,
  type DocumentData,
} from '@docex/shared';

/** A service of documents: id → data (undefined: deleted after it was listed). */
function service(docs: Record<number, Partial<DocumentData> | undefined>, options: { fail?: number } = {}) {
  const asked: Array<Record<string, unknown>> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const client = {
    fetchDocuments: async (input: Record<string, unknown>) => {
      asked.push(input);
      return [...Object.keys(docs).map(Number), Number(Object.keys(docs)[0])]; // with a duplicate
    },
    fetchDocumentData: async ({ document_id }: { document_id: number }) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      if (document_id === options.fail)
        throw new DocexServerError({
          operation: 'fetch_document_data',
          status: 500,
          headers: {},
          body: '',
          serverMessage: '',
        });
      const d = docs[document_id];
      if (!d)
        throw new DocexNotFoundError({
          operation: 'fetch_document_data',
          status: 404,
          headers: {},
          body: '',
          serverMessage: 'gone',
        });
      return { document_id, ...d };
    },
  } as unknown as DocexClient;
  return { client, asked, maxInFlight: () => maxInFlight };
}

const NOW = new Date('2026-01-02T10:00:00Z');
const LATER = new Date('2026-01-02T10:05:00Z');

describe('changesSince', () => {
  test('reports every document of the window by ascending id, skips deleted ones, reads 4 at a time', async () => {
    const docs: Record<number, Partial<DocumentData> | undefined> = {};
    for (let id = 20; id >= 1; id--) docs[id] = id === 7 ? undefined : { General_fields: { n: id } };
    const s = service(docs);
    const changes = await changesSince(s.client, {}, { now: NOW, overlapMs: 60_000, folderId: 3 });
    expect(changes.documents.map((d) => d.document_id)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1).filter((id) => id !== 7),
    );
    expect(changes).toMatchObject({ listed: 20, vanished: 1 });
    expect(s.maxInFlight()).toBe(4);
    // the first run without a start time: an overlap before now
    expect(s.asked[0]).toMatchObject({ folder_id: 3, updated_since: new Date(NOW.getTime() - 60_000) });
    expect(changes.next.cursor).toBe(NOW.toISOString());
    expect(Object.keys(changes.next.seen)).toHaveLength(19);
  });

  test('onProgress counts every listed document as its read ends, deleted ones included', async () => {
    const docs: Record<number, Partial<DocumentData> | undefined> = {};
    for (let id = 1; id <= 9; id++) docs[id] = id === 4 ? undefined : ({ v: id } as never);
    const seen: Array<{ done: number; total: number }> = [];
    const changes = await changesSince(
      service(docs).client,
      {},
      { now: NOW, overlapMs: 0, onProgress: (p) => seen.push(p) },
    );
    expect(changes).toMatchObject({ listed: 9, vanished: 1 });
    expect(seen).toEqual(Array.from({ length: 9 }, (_, i) => ({ done: i + 1, total: 9 })));
  });

  test('the overlap does not repeat a document; a document changed again inside it is reported again', async () => {
    const docs: Record<number, Partial<DocumentData>> = { 1: { v: 1 }, 2: { v: 1 } } as never;
    const first = await changesSince(service(docs).client, {}, { now: NOW, overlapMs: 120_000 });
    expect(first.documents).toHaveLength(2);
    const state: ChangeCursor = first.next;
    const s = service({ ...docs, 2: { v: 2 } as never, 3: { v: 1 } as never });
    const second = await changesSince(s.client, state, { now: LATER, overlapMs: 120_000 });
    expect(second.documents.map((d) => d.document_id)).toEqual([2, 3]);
    // asks again from the cursor minus the overlap
    expect(s.asked[0]!.updated_since).toEqual(new Date(NOW.getTime() - 120_000));
    expect(second.next.seen['1']).toBe(first.next.seen['1']);
    expect(second.next.seen['2']).toBe(fingerprint({ document_id: 2, v: 2 }));
  });

  test('baselineFirstRun: the first run records what is there and reports nothing; startTime reports it all', async () => {
    const docs = { 1: { v: 1 }, 2: { v: 1 } } as never;
    const baseline = await changesSince(
      service(docs).client,
      {},
      { now: NOW, overlapMs: 1000, baselineFirstRun: true },
    );
    expect(baseline.documents).toEqual([]);
    expect(Object.keys(baseline.next.seen)).toEqual(['1', '2']);
    const s = service(docs);
    const fromStart = await changesSince(
      s.client,
      {},
      {
        now: NOW,
        overlapMs: 1000,
        baselineFirstRun: true,
        startTime: '2025-12-01T00:00:00',
      },
    );
    expect(fromStart.documents).toHaveLength(2);
    expect(s.asked[0]!.updated_since).toBe('2025-12-01T00:00:00'); // as given: the client reads it as UTC
  });

  test('a failed read fails the run (the caller keeps its state); no new read starts after it', async () => {
    const docs: Record<number, Partial<DocumentData>> = {};
    for (let id = 1; id <= 12; id++) docs[id] = { v: id } as never;
    const s = service(docs, { fail: 2 });
    await expect(changesSince(s.client, {}, { now: NOW, overlapMs: 0 })).rejects.toBeInstanceOf(
      DocexServerError,
    );
  });
});
