/**
 * The Document Extraction Trigger through n8n-core's real PollContext (static data on the Workflow,
 * as n8n persists it between polls), against the emulator. n8n's clock is faked (Date only: timers
 * and sockets stay real); the emulator's clock is n8n's plus a chosen skew, so the times of the
 * documents' updates are exact.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { IDataObject, INodeExecutionData } from 'n8n-workflow';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { pollingTrigger, type Credentials } from './harness.ts';
import { templateWithField } from '../support/templates.ts';

let emu: Emulator;
let client: DocexClient;
let credentials: Credentials;
/** Server clock minus n8n clock, in ms. */
let skewMs = 0;
let folderId = 0;
let n = 0;

const T0 = Date.UTC(2026, 0, 10, 12, 0, 0);
const at = (ms: number) => vi.setSystemTime(T0 + ms);
const byId = (id: number) => ({ __rl: true, mode: 'id', value: String(id) });

beforeAll(async () => {
  emu = await startEmulator({ port: 0, taskDelayMs: 5, now: () => Date.now() + skewMs });
  // Above the credential's default rate (10/s, tested in rate.test.ts): a poll of 130 documents
  // would otherwise take its 13 s of pacing.
  credentials = { baseUrl: emu.url, apiKey: emu.keys[0]!, requestsPerSecond: 1000 };
  client = createNodeClient({ baseUrl: emu.url, apiKey: emu.keys[0]!, retry: { maxRetries: 0 } });
  folderId = (await client.createFolder({ name: 'trigger tests' })).id;
});
afterAll(async () => emu.stop());
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  at(0);
  skewMs = 0;
});
afterEach(() => {
  vi.useRealTimers();
  emu.faults.clear();
});

/** A template of its own per test, so each trigger sees only its test's documents. */
async function newTemplate(): Promise<number> {
  const t = await templateWithField(client, folderId, `t${++n}`, { name: 'Invoice number', format: 'text' });
  return t.id;
}

/** Uploads `count` documents (at most 50 per request) and waits for them; returns their ids. */
async function upload(templateId: number, count = 1): Promise<number[]> {
  const ids: number[] = [];
  for (let done = 0; done < count; done += 50) {
    const files = Array.from({ length: Math.min(50, count - done) }, () => ({
      data: new TextEncoder().encode(`Invoice number: T-${++n}\n`),
      fileName: `t${n}.txt`,
    }));
    const { tasks } = await client.uploadAndWait({ files, template_id: templateId }, { intervalMs: 5 });
    ids.push(...tasks.map((t) => t.document_id!));
  }
  return ids;
}

const emitted = (out: INodeExecutionData[][] | null) =>
  (out?.[0] ?? []).map((i) => i.json.document_id as number);

/** "New or Changed Document" with the raw data, unless `extra` says otherwise. */
function trigger(templateId: number, extra: IDataObject = {}) {
  return pollingTrigger(
    { event: 'newOrChangedDocument', templateId: byId(templateId), simplify: false, ...extra },
    credentials,
  );
}

describe('Document Extraction Trigger', () => {
  it('first activation starts from now; each new document is emitted once, with its data', async () => {
    const templateId = await newTemplate();
    await upload(templateId);
    const t = trigger(templateId);
    at(10_000);
    expect(await t.poll()).toBeNull();
    expect(t.state().cursor).toBe(new Date(T0 + 10_000).toISOString());
    at(20_000);
    const [fresh] = await upload(templateId);
    at(70_000);
    const out = await t.poll();
    expect(emitted(out)).toEqual([fresh]);
    expect(out![0]![0]!.json).toMatchObject({ document_id: fresh, General_fields: expect.any(Object) });
    at(130_000);
    expect(await t.poll()).toBeNull();
    at(400_000);
    expect(await t.poll()).toBeNull();
  });

  it('a start time emits everything changed since then on the first poll', async () => {
    const templateId = await newTemplate();
    at(-3_600_000);
    const [older] = await upload(templateId);
    at(-600_000);
    const [newer] = await upload(templateId);
    const old = [older, newer];
    at(0);
    const t = trigger(templateId, { startTime: '2026-01-10T11:30:00' });
    expect(emitted(await t.poll())).toEqual([old[1]]);
    const all = trigger(templateId, { startTime: '2026-01-10T10:00:00' });
    expect(emitted(await all.poll())).toEqual(old);
    at(60_000);
    expect(await all.poll()).toBeNull();
  });

  it('documents updated exactly at the cursor are emitted; those already emitted are not repeated', async () => {
    const templateId = await newTemplate();
    for (const marginSeconds of [0, 120]) {
      const t = trigger(templateId, { options: { marginSeconds } });
      at(100_000);
      const [before] = await upload(templateId); // same instant as the poll, seen by it
      expect(await t.poll()).toBeNull(); // first activation: counted as seen
      const [atCursor] = await upload(templateId); // updated exactly at the cursor, after the poll
      at(160_000);
      // updated_since is inclusive: a document stamped exactly at the cursor is in the next window.
      expect(emitted(await t.poll())).toEqual([atCursor]);
      expect(before).toBeDefined();
      at(220_000);
      expect(await t.poll()).toBeNull();
    }
  });

  it('clock skew: a server a few seconds behind n8n does not make documents fall before the cursor', async () => {
    const templateId = await newTemplate();
    skewMs = -5_000; // the service's clock runs 5 s behind n8n's
    const safe = trigger(templateId); // default margin: 2 minutes
    const bare = trigger(templateId, { options: { marginSeconds: 0 } });
    at(0);
    expect(await safe.poll()).toBeNull();
    expect(await bare.poll()).toBeNull();
    at(1_000);
    const [late] = await upload(templateId); // stamped at n8n's T0 - 4 s: before both cursors
    at(60_000);
    expect(emitted(await safe.poll())).toEqual([late]);
    // Without a margin the document would be lost: this is what the margin is for.
    expect(await bare.poll()).toBeNull();
  });

  it('clock skew: a server ahead of n8n does not make documents come twice', async () => {
    const templateId = await newTemplate();
    skewMs = 7_000;
    const t = trigger(templateId);
    at(0);
    expect(await t.poll()).toBeNull();
    at(5_000);
    const [doc] = await upload(templateId); // stamped T0 + 12 s, after the next cursor
    at(10_000);
    expect(emitted(await t.poll())).toEqual([doc]);
    at(70_000);
    expect(await t.poll()).toBeNull(); // still inside the window: filtered as already emitted
  });

  it('many documents in one poll: each once, in ID order', async () => {
    const templateId = await newTemplate();
    const t = trigger(templateId, { idsOnly: true });
    expect(await t.poll()).toBeNull();
    at(10_000);
    const many = await upload(templateId, 130);
    at(60_000);
    const out = await t.poll();
    expect(emitted(out)).toEqual([...many].sort((a, b) => a - b));
    expect(out![0]![0]!.json).toEqual({ document_id: Math.min(...many) });
    at(120_000);
    expect(await t.poll()).toBeNull();
  });

  it('a document changed again (rerun) inside the overlap window is emitted again', async () => {
    const templateId = await newTemplate();
    const t = trigger(templateId);
    expect(await t.poll()).toBeNull();
    at(5_000);
    const [doc] = await upload(templateId);
    at(30_000);
    expect(emitted(await t.poll())).toEqual([doc]);
    at(40_000);
    await client.rerunDocuments({ doc_ids: [doc!], override_extraction: true });
    at(60_000);
    expect(emitted(await t.poll())).toEqual([doc]);
    at(90_000);
    expect(await t.poll()).toBeNull();
  });

  it('an API error fails the poll and leaves the cursor, so the next poll catches up', async () => {
    const templateId = await newTemplate();
    const t = trigger(templateId);
    expect(await t.poll()).toBeNull();
    const before = JSON.parse(JSON.stringify(t.state())) as IDataObject;
    at(10_000);
    const [doc] = await upload(templateId);
    at(60_000);
    emu.faults.set({ errorRate: 1, statuses: [422], operations: ['fetch_documents'] });
    await expect(t.poll()).rejects.toMatchObject({ name: 'NodeApiError', httpCode: '422' });
    emu.faults.set({ errorRate: 1, statuses: [500], operations: ['fetch_document_data'] });
    await expect(t.poll()).rejects.toThrow(/fetch_document_data: HTTP 500/);
    expect(JSON.parse(JSON.stringify(t.state()))).toEqual(before);
    emu.faults.clear();
    at(300_000); // long after: the window still starts at the old cursor
    expect(emitted(await t.poll())).toEqual([doc]);
  });

  it('manual mode returns the most recent documents and does not move the cursor', async () => {
    const templateId = await newTemplate();
    const t = trigger(templateId, { options: { limit: 2 } });
    expect(await t.poll('manual')).toBeNull();
    expect(t.state()).toEqual({});
    const docs = await upload(templateId, 3);
    const out = await t.poll('manual');
    expect(emitted(out)).toEqual([docs[2], docs[1]]);
    expect(out![0]![0]!.json).toHaveProperty('General_fields');
    expect(t.state()).toEqual({});
    // Activation afterwards still starts from now.
    at(10_000);
    expect(await t.poll()).toBeNull();
  });

  it('the folder filter, and IDs only', async () => {
    const otherFolder = (await client.createFolder({ name: 'elsewhere' })).id;
    const inFolder = await newTemplate();
    const elsewhere = (await client.createTemplate({ folder_id: otherFolder, name: `t${++n}` })).id;
    const t = pollingTrigger(
      {
        event: 'newOrChangedDocument',
        folderId: { __rl: true, mode: 'list', value: String(otherFolder) },
        idsOnly: true,
      },
      credentials,
    );
    expect(await t.poll()).toBeNull();
    at(10_000);
    await upload(inFolder);
    const [mine] = await upload(elsewhere);
    at(60_000);
    const out = await t.poll();
    expect(out?.[0]?.map((i) => i.json)).toEqual([{ document_id: mine }]);
  });

  it('a folder or template ID that is not a whole number fails the poll: the filter is never dropped', async () => {
    for (const filter of [
      { folderId: { __rl: true, mode: 'id', value: 'x7' } },
      { templateId: { __rl: true, mode: 'id', value: '4.5' } },
    ]) {
      const t = pollingTrigger({ event: 'newOrChangedDocument', idsOnly: true, ...filter }, credentials);
      const error = await t.poll().then(
        () => expect.fail('an ID that is not one must fail the poll'),
        (e: unknown) => e as Error & { description?: string },
      );
      expect(error).toMatchObject({ name: 'NodeOperationError' });
      expect(error.message).toMatch(/^(Folder: "x7"|Template: "4\.5") is not an ID$/);
      expect(error.description).toMatch(/whole number/);
      expect(t.state()).toEqual({});
    }
  });
});

describe('Document Extraction Trigger: New Document', () => {
  const newDocuments = (templateId: number, extra: IDataObject = {}) =>
    pollingTrigger({ templateId: byId(templateId), ...extra }, credentials);

  it('is the default event: each upload once, simplified; reruns of known documents are not events', async () => {
    const templateId = await newTemplate();
    const [existing] = await upload(templateId);
    const t = newDocuments(templateId);
    at(10_000);
    expect(await t.poll()).toBeNull();
    at(20_000);
    const [fresh] = await upload(templateId);
    await client.rerunDocuments({ doc_ids: [existing!], override_extraction: true });
    at(70_000);
    const out = await t.poll();
    expect(out?.[0]?.map((i) => i.json)).toEqual([
      {
        document_id: fresh,
        document_name: expect.stringMatching(/\.txt$/),
        'Invoice number': expect.stringMatching(/^T-/),
        line_items: [],
        fraud: { verdict: null, score: null },
      },
    ]);
    at(100_000);
    await client.rerunDocuments({ doc_ids: [fresh!], override_extraction: true });
    at(130_000);
    expect(await t.poll()).toBeNull(); // inside the overlap, changed: still not new
    at(400_000);
    await client.rerunDocuments({ doc_ids: [fresh!, existing!], override_extraction: true });
    at(460_000);
    expect(await t.poll()).toBeNull(); // after the overlap: known, so not new
    const [another] = await upload(templateId);
    at(520_000);
    expect(emitted(await t.poll())).toEqual([another]);
    expect(t.state().known).toEqual(expect.arrayContaining([expect.any(Array)]));
  });

  it('with Start From, documents created since then come once, old ones changed since then do not', async () => {
    const templateId = await newTemplate();
    at(-3 * 86_400_000);
    const [old] = await upload(templateId);
    at(-600_000);
    const [recent] = await upload(templateId);
    at(-300_000);
    await client.rerunDocuments({ doc_ids: [old!], override_extraction: true });
    at(0);
    const t = newDocuments(templateId, { startTime: '2026-01-10T11:30:00', idsOnly: true });
    expect(emitted(await t.poll())).toEqual([recent]);
    at(60_000);
    expect(await t.poll()).toBeNull();
  });

  it('a failed poll changes nothing; the next one emits what it missed', async () => {
    const templateId = await newTemplate();
    const t = newDocuments(templateId, { idsOnly: true });
    expect(await t.poll()).toBeNull();
    const before = JSON.parse(JSON.stringify(t.state())) as IDataObject;
    at(10_000);
    const [doc] = await upload(templateId);
    at(60_000);
    emu.faults.set({ errorRate: 1, statuses: [500], operations: ['fetch_document_data'] });
    await expect(t.poll()).rejects.toThrow(/fetch_document_data: HTTP 500/);
    expect(JSON.parse(JSON.stringify(t.state()))).toEqual(before);
    emu.faults.clear();
    at(120_000);
    expect(emitted(await t.poll())).toEqual([doc]);
  });
});

describe('Emit Only (filters by the shared review rules)', () => {
  /** One document with this text; returns its id and the fraud verdict its task carries. */
  async function uploadText(templateId: number, text: string) {
    const { tasks } = await client.uploadAndWait(
      { files: [{ data: new TextEncoder().encode(text), fileName: `f${++n}.txt` }], template_id: templateId },
      { intervalMs: 5 },
    );
    return { id: tasks[0]!.document_id!, verdict: tasks[0]!.Fraud_verdict };
  }

  it('Fraud Verdict Not Clean emits only documents whose verdict is not clean, with the verdict', async () => {
    const templateId = await newTemplate();
    const t = pollingTrigger(
      { event: 'newDocument', templateId: byId(templateId), emitOnly: 'fraudNotClean' },
      credentials,
    );
    expect(await t.poll()).toBeNull();
    at(10_000);
    const docs = [
      await uploadText(templateId, `Invoice number: F-${++n}\n`),
      await uploadText(templateId, `Invoice number: F-${++n}\nfraud: high\n`),
      await uploadText(templateId, `Invoice number: F-${++n}\n`),
    ];
    expect(docs[1]!.verdict).toBe('HIGH_RISK');
    at(60_000);
    const out = await t.poll();
    // The emulator's verdict of a plain document depends on its hash: expect what its tasks said.
    expect(emitted(out)).toEqual(docs.filter((d) => d.verdict !== 'LOW_RISK').map((d) => d.id));
    const risky = out![0]!.find((i) => i.json.document_id === docs[1]!.id)!.json;
    expect(risky).toMatchObject({
      fraud: { verdict: 'HIGH_RISK' },
      review_reasons: [{ rule: 'fraud', message: 'fraud verdict is "HIGH_RISK", not a clean one' }],
    });
  });

  it('Needs Review emits only documents breaking a rule (IDs only works too); a failed verdict read loses nothing', async () => {
    const templateId = await newTemplate();
    const t = pollingTrigger(
      {
        event: 'newOrChangedDocument',
        templateId: byId(templateId),
        emitOnly: 'needsReview',
        reviewMinConfidence: 0.5,
        reviewRequiredFields: 'Invoice number',
        reviewFraud: true,
        idsOnly: true,
      },
      credentials,
    );
    expect(await t.poll()).toBeNull();
    at(10_000);
    const missing = await uploadText(templateId, 'Nothing to read here\n');
    const risky = await uploadText(templateId, `Invoice number: N-${++n}\nfraud: high\n`);
    const fine = await uploadText(templateId, `Invoice number: N-${++n}\n`);
    at(60_000);
    emu.faults.set({ errorRate: 1, statuses: [500], operations: ['fetch_tasks_results'] });
    const before = JSON.parse(JSON.stringify(t.state())) as IDataObject;
    await expect(t.poll()).rejects.toThrow(/fetch_tasks_results: HTTP 500/);
    expect(JSON.parse(JSON.stringify(t.state()))).toEqual(before);
    emu.faults.clear();
    at(120_000);
    const out = await t.poll();
    const expected = [missing, risky, ...(fine.verdict === 'LOW_RISK' ? [] : [fine])].map((d) => d.id);
    expect(emitted(out)).toEqual(expected.sort((a, b) => a - b));
    expect(out![0]![0]!.json).toEqual({ document_id: missing.id });
  });
});
