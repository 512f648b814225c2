/**
 * Extract over the items of one execution (runAll): the same output items as each item run on its
 * own (the per-item `run`, today's path), with far fewer requests. Two emulators with the same
 * set-up, so neither run sees the other's files as duplicates.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { createNodeClient } from '@docex/shared/node';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { readInput } from '../../nodes/Docex/actions/common.execute.ts';
import * as extract from '../../nodes/Docex/actions/document/extract.operation.ts';
import { allOperations } from '../../nodes/Docex/actions/router.ts';
import { docexClient } from '../../nodes/Docex/transport/index.ts';
import { invoiceTemplate } from '../support/templates.ts';
import { binaryItem, executeContext, runDocex, type Credentials } from './harness.ts';

const invoice = (n: string, total: string) => `Invoice number: ${n}\nTotal: ${total}\nWidget;2;${total}\n`;

/** The node's smallest Poll Interval (its minValue, 0.1 s) and a task time below it. */
const POLL_INTERVAL_S = 0.1;
const TASK_DELAY_MS = 80;

interface Side {
  emu: Emulator;
  credentials: Credentials;
  templateId: number;
}

async function side(): Promise<Side> {
  // A task takes less than one poll interval (below) and more than the first look right after its
  // upload: each file alone is polled twice, as with the defaults, in less time.
  const emu = await startEmulator({ port: 0, taskDelayMs: TASK_DELAY_MS });
  const credentials = { baseUrl: emu.url, apiKey: emu.keys[0]! };
  const setup = createNodeClient({ baseUrl: emu.url, apiKey: emu.keys[0]! });
  const folder = await setup.createFolder({ name: 'Batch' });
  const template = await invoiceTemplate(setup, folder.id, 'Invoices');
  return { emu, credentials, templateId: template.id };
}

let today: Side;
let batched: Side;
beforeAll(async () => {
  [today, batched] = await Promise.all([side(), side()]);
});
afterAll(async () => {
  await Promise.all([today?.emu.stop(), batched?.emu.stop()]);
});

/** 50 items: one file each, but item 5 with two files, item 9 unreadable, item 14 a repeat of item 2's bytes. */
async function items(): Promise<INodeExecutionData[]> {
  const out: INodeExecutionData[] = [];
  for (let k = 0; k < 50; k++) {
    const files: Record<string, { data: string | Buffer; fileName: string; mimeType?: string }> = {
      data: { data: invoice(`N-${k}`, `${k},50`), fileName: `n${k}.txt` },
    };
    if (k === 5) files.second = { data: invoice('N-5b', '7,00'), fileName: 'n5b.txt' };
    if (k === 9)
      files.data = {
        data: Buffer.from([0, 1, 2, 3]),
        fileName: 'n9.bin',
        mimeType: 'application/octet-stream',
      };
    if (k === 14) files.data = { data: invoice('N-2', '2,50'), fileName: 'n14.txt' };
    out.push(await binaryItem(files));
  }
  return out;
}

const parameters = (templateId: number): INodeParameters => ({
  resource: 'document',
  operation: 'extract',
  binaryPropertyName: '*',
  templateId: { __rl: true, mode: 'id', value: String(templateId) },
  options: { pollInterval: POLL_INTERVAL_S, includeConfidence: true },
});

/** Document ids differ between the two emulators' runs; everything else must not. */
const comparable = (out: INodeExecutionData[]) =>
  out.map((item) => ({
    ...item.json,
    document_id: typeof item.json.document_id,
    pairedItem: item.pairedItem,
  }));

const perDocument = (side: Side, files: number) => {
  const counts = side.emu.stats().requestsByOperation;
  const sent = ['upload_file', 'fetch_tasks_results', 'fetch_documents', 'fetch_document_data'].reduce(
    (sum, op) => sum + (counts[op] ?? 0),
    0,
  );
  return { counts, perDocument: sent / files };
};

describe('Extract across the items of an execution', () => {
  it('gives every item what it got alone, with an upload per 20 files and about one poll per file', async () => {
    const input = await items();
    const files = 51;

    // Today's path: each item on its own, with the per-item run.
    const ctx = executeContext(parameters(today.templateId), {
      credentials: today.credentials,
      items: input,
      continueOnFail: true,
    });
    const client = await docexClient(ctx);
    const op = allOperations.find((o) => o.value === 'extract')!;
    const runAlone = async () => {
      const out: INodeExecutionData[] = [];
      for (let i = 0; i < input.length; i++)
        out.push(...(await extract.run(ctx, client, i, await readInput(ctx, i, op))));
      return out;
    };

    // The new path: the node as n8n runs it. Both paths at once (each against its own emulator, so
    // neither sees the other's files or requests): the test waits for the longer, not for both.
    const [alone, together] = await Promise.all([
      runAlone(),
      runDocex(parameters(batched.templateId), {
        credentials: batched.credentials,
        items: input,
        continueOnFail: true,
      }),
    ]);

    expect(comparable(together)).toEqual(comparable(alone));
    // Item 5 has two files, so item k > 5 is output k + 1.
    expect(together[6]).toMatchObject({ json: { 'Invoice number': 'N-5b' }, pairedItem: { item: 5 } });
    expect(together[10]!.json).toMatchObject({ status: 'FAILED', document_name: 'n9.bin' });
    expect(together[15]!.json).toMatchObject({ status: 'DUPLICATE', document_name: 'n2.txt' });

    const before = perDocument(today, files);
    const after = perDocument(batched, files);
    expect(after.counts.upload_file).toBe(3); // 20 files, 20, then 11
    expect(before.counts.upload_file).toBe(50);
    expect(after.perDocument).toBeLessThanOrEqual(1.6);
    expect(after.perDocument).toBeLessThan(before.perDocument);
  }, 300_000);
});
