/**
 * Every operation of the Docex node, run through n8n-core's ExecuteContext against the emulator over
 * real HTTP. The last test checks that each operation of the table (and each convenience) was run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { allOperations } from '../../nodes/Docex/actions/router.ts';
import { binaryBuffer, binaryItem, runDocex, type Credentials, type RunOptions } from './harness.ts';

let emu: Emulator;
let credentials: Credentials;
const ran = new Set<string>();

beforeAll(async () => {
  emu = await startEmulator({ port: 0, taskDelayMs: 30 });
  credentials = { baseUrl: emu.url, apiKey: emu.keys[0]! };
});
afterAll(async () => emu.stop());

/** Runs one operation; records it as covered. */
async function run(
  resource: string,
  operation: string,
  parameters: Record<string, unknown> = {},
  options: Partial<RunOptions> = {},
): Promise<INodeExecutionData[]> {
  ran.add(`${resource}:${operation}`);
  return await runDocex({ resource, operation, ...parameters } as INodeParameters, {
    credentials,
    ...options,
  });
}
const byId = (id: number) => ({ __rl: true, mode: 'id', value: String(id) });
const fromList = (id: number) => ({ __rl: true, mode: 'list', value: String(id), cachedResultName: 'x' });
const json = (items: INodeExecutionData[]) => items.map((i) => i.json);
const paired = (items: INodeExecutionData[]) => items.map((i) => i.pairedItem);

let folderId = 0;
let templateId = 0;
const invoice = (n: string, total = '10,00') => `Invoice number: ${n}\nTotal: ${total}\n`;

describe('Account', () => {
  it('Check API Key', async () => {
    expect(json(await run('account', 'checkApiKey'))).toEqual([expect.objectContaining({ valid: true })]);
    await expect(
      runDocex(
        { resource: 'account', operation: 'checkApiKey' },
        { credentials: { ...credentials, apiKey: 'wrong' } },
      ),
    ).rejects.toMatchObject({ name: 'NodeApiError', httpCode: expect.stringMatching(/^40[13]$/) });
  });
});

describe('Folder', () => {
  it('Create, Get, Update, Get Many', async () => {
    const created = json(
      await run('folder', 'create', { additionalFields: { name: 'Invoices', description: 'all' } }),
    );
    expect(created).toEqual([expect.objectContaining({ name: 'Invoices', desc: 'all' })]);
    folderId = created[0]!.id as number;
    expect(json(await run('folder', 'get', { folderId: fromList(folderId) }))[0]).toMatchObject({
      id: folderId,
      name: 'Invoices',
    });
    // An empty description in Update Fields clears it (sent as null).
    const updated = json(
      await run('folder', 'update', {
        folderId: byId(folderId),
        updateFields: { name: 'Bills', description: '' },
      }),
    );
    expect(updated[0]).toMatchObject({ id: folderId, name: 'Bills', desc: null });
    const other = json(await run('folder', 'create', { additionalFields: { name: 'Other' } }))[0]!;
    const many = await run('folder', 'getAll');
    expect(json(many).map((f) => f.name)).toEqual(expect.arrayContaining(['Bills', 'Other']));
    expect(paired(many).every((p) => JSON.stringify(p) === '{"item":0}')).toBe(true);
    expect(json(await run('folder', 'delete', { folderId: byId(other.id as number) }))).toHaveLength(1);
    await expect(
      runDocex({ resource: 'folder', operation: 'get', folderId: byId(other.id as number) }, { credentials }),
    ).rejects.toMatchObject({ httpCode: '404' });
  });
});

describe('Template', () => {
  it('Create (locales as options), Get, Update, Delete', async () => {
    const created = json(
      await run('template', 'create', {
        folderId: fromList(folderId),
        name: 'Invoice',
        additionalFields: { numberLocale: 'EU', dateLocale: 'EU', description: 'invoices' },
      }),
    )[0]!;
    expect(created).toMatchObject({ name: 'Invoice', folder_id: folderId, number_locale: 'EU' });
    templateId = created.id as number;
    expect(json(await run('template', 'get', { templateId: byId(templateId) }))[0]).toMatchObject({
      id: templateId,
    });
    expect(
      json(
        await run('template', 'update', {
          templateId: byId(templateId),
          updateFields: { description: 'EU invoices', dateLocale: 'US' },
        }),
      )[0],
    ).toMatchObject({ desc: 'EU invoices', date_locale: 'US', number_locale: 'EU' });
    const spare = json(await run('template', 'create', { folderId: byId(folderId), name: 'Spare' }))[0]!;
    expect(
      json(
        await run('template', 'delete', {
          templateId: byId(spare.id as number),
          additionalFields: { override: true },
        }),
      ),
    ).toEqual([{ success: true, template_id: spare.id }]);
  });
});

describe('Field and Instruction', () => {
  it('Field: Create (format and type as options), Get, Update, Delete', async () => {
    const created = json(
      await run('field', 'create', {
        templateId: byId(templateId),
        name: 'Invoice number',
        type: 'General fields',
        format: 'invoice_number',
      }),
    )[0]!;
    expect(created).toMatchObject({
      name: 'Invoice number',
      format: 'invoice_number',
      template_id: templateId,
    });
    await run('field', 'create', {
      templateId: byId(templateId),
      name: 'Total',
      type: 'General fields',
      format: 'total_price',
      additionalFields: { description: 'with VAT', position: 2 },
    });
    expect(json(await run('field', 'get', { fieldId: created.id }))[0]).toMatchObject({
      id: created.id,
    });
    expect(
      json(
        await run('field', 'update', { fieldId: created.id, updateFields: { description: 'the number' } }),
      )[0],
    ).toMatchObject({ desc: 'the number' });
    const extra = json(
      await run('field', 'create', {
        templateId: byId(templateId),
        name: 'Tmp',
        type: 'Line fields',
        format: 'text',
      }),
    )[0]!;
    expect(json(await run('field', 'delete', { fieldId: extra.id }))).toEqual([
      { success: true, field_id: extra.id },
    ]);
  });

  it('Instruction: Create, Get, Update, Delete', async () => {
    const created = json(
      await run('instruction', 'create', {
        templateId: byId(templateId),
        content: 'Totals include VAT',
        type: 'General fields',
      }),
    )[0]!;
    expect(created).toMatchObject({ content: 'Totals include VAT', template_id: templateId });
    expect(json(await run('instruction', 'get', { instructionId: created.id }))[0]).toMatchObject({
      id: created.id,
    });
    expect(
      json(
        await run('instruction', 'update', {
          instructionId: created.id,
          updateFields: { content: 'Totals are gross' },
        }),
      )[0],
    ).toMatchObject({ content: 'Totals are gross' });
    expect(json(await run('instruction', 'delete', { instructionId: created.id }))).toEqual([
      { success: true, instruction_id: created.id },
    ]);
  });
});

const docIds: number[] = [];
let firstTaskId = '';

describe('Task', () => {
  it('Upload sends several binary fields in one request; Get Result', async () => {
    const item = await binaryItem({
      data: { data: invoice('U-1'), fileName: 'u1.txt' },
      attachment: { data: invoice('U-2'), fileName: 'u2.txt' },
    });
    const before = emu.stats().requestsByOperation.upload_file ?? 0;
    const out = json(
      await run(
        'task',
        'upload',
        {
          binaryPropertyName: 'data, attachment',
          additionalFields: { templateId: byId(templateId), metadata: '{"source":"n8n"}' },
        },
        { items: [item] },
      ),
    )[0]!;
    expect(emu.stats().requestsByOperation.upload_file).toBe(before + 1);
    expect((out.task_ids as string[]).length).toBe(2);
    firstTaskId = (out.task_ids as string[])[0]!;
    let result: Record<string, unknown> = {};
    // Until the task is done, however long a loaded machine takes (the test's timeout bounds it).
    for (;;) {
      result = json(await run('task', 'getResult', { taskId: firstTaskId }))[0]!;
      if (result.status !== 'IN PROGRESS') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(result).toMatchObject({ status: 'DONE', document_name: 'u1.txt' });
  });

  it('Extract: one simplified item per file, paired with its input item; Simplify off gives the task result', async () => {
    const items = [
      await binaryItem({ data: { data: invoice('A-1', '10,50'), fileName: 'a.txt' } }),
      await binaryItem({
        data: { data: invoice('B-1', '20,00'), fileName: 'b.txt' },
        extra: { data: invoice('B-2', '30,00'), fileName: 'b2.txt' },
      }),
    ];
    const out = await run(
      'document',
      'extract',
      {
        binaryPropertyName: '*',
        templateId: fromList(templateId),
        options: { pollInterval: 0.05 },
      },
      { items },
    );
    expect(paired(out)).toEqual([{ item: 0 }, { item: 1 }, { item: 1 }]);
    // Simplify (the default): plain values, line items, the fraud verdict; no confidence scores.
    expect(json(out)).toEqual(
      ['A-1', 'B-1', 'B-2'].map((number, k) => ({
        document_id: expect.any(Number),
        document_name: ['a.txt', 'b.txt', 'b2.txt'][k],
        'Invoice number': number,
        Total: [10.5, 20, 30][k],
        line_items: [],
        fraud: { verdict: expect.any(String), score: expect.any(Number) },
      })),
    );
    docIds.push(...json(out).map((t) => t.document_id as number));
    const raw = await run(
      'document',
      'extract',
      { templateId: byId(templateId), simplify: false, options: { pollInterval: 0.05 } },
      { items: [await binaryItem({ data: { data: invoice('R-1'), fileName: 'r.txt' } })] },
    );
    expect(json(raw)[0]).toMatchObject({ status: 'DONE', task_id: expect.any(String) });
    expect(
      (json(raw)[0]!.General_fields as Record<string, { value: unknown }>)['Invoice number']!.value,
    ).toBe('R-1');
  });

  it('Extract: FAILED and DUPLICATE fail the item with a clear message', async () => {
    const failing = await binaryItem({
      data: { data: Buffer.from([0, 1, 2, 3]), fileName: 'bad.bin', mimeType: 'application/octet-stream' },
    });
    await expect(
      run(
        'document',
        'extract',
        { templateId: byId(templateId), options: { pollInterval: 0.05 } },
        { items: [failing] },
      ),
    ).rejects.toThrow(/did not succeed for 1 of 1 file\(s\): bad\.bin: FAILED/);
    const duplicate = await binaryItem({ data: { data: invoice('A-1', '10,50'), fileName: 'a-again.txt' } });
    await expect(
      run(
        'document',
        'extract',
        { templateId: byId(templateId), options: { pollInterval: 0.05 } },
        { items: [duplicate] },
      ),
    ).rejects.toThrow(/DUPLICATE \(Duplicate of document \d+/);
  });

  it('Extract: with Continue On Fail the failed files come out with an error field; duplicates can be accepted', async () => {
    const item = await binaryItem({
      ok: { data: invoice('C-1'), fileName: 'c.txt' },
      bad: { data: Buffer.from([0, 1, 2, 3]), fileName: 'c.bin', mimeType: 'application/octet-stream' },
    });
    const out = json(
      await run(
        'document',
        'extract',
        {
          binaryPropertyName: 'ok, bad',
          templateId: byId(templateId),
          options: { pollInterval: 0.05 },
        },
        { items: [item], continueOnFail: true },
      ),
    );
    expect(out[0]).toMatchObject({ document_name: 'c.txt', 'Invoice number': 'C-1' });
    expect(out[0]).not.toHaveProperty('status');
    expect(out[0]).not.toHaveProperty('error');
    expect(out[1]).toMatchObject({ document_name: 'c.bin', status: 'FAILED' });
    expect(out[1]!.error).toMatch(/^Extraction FAILED: c\.bin: FAILED/);
    const again = await binaryItem({ data: { data: invoice('C-1'), fileName: 'c-again.txt' } });
    const accepted = json(
      await run(
        'document',
        'extract',
        {
          templateId: byId(templateId),
          options: { pollInterval: 0.05, acceptDuplicates: true },
        },
        { items: [again] },
      ),
    );
    // The existing document's data, read with fetch_document_data when the task result has none.
    expect(accepted[0]).toMatchObject({
      status: 'DUPLICATE',
      document_id: out[0]!.document_id,
      'Invoice number': 'C-1',
    });
    expect(accepted[0]!.error).toBeUndefined();
  });
});

describe('Agent', () => {
  it('Upload CSV from a binary field', async () => {
    const agent = emu.createAgent(emu.keys[0]!, { type: 'datatable_match', templateIds: [templateId] });
    const item = await binaryItem({
      data: { data: 'sku,name\n1,Widget\n', fileName: 'table.csv', mimeType: 'text/csv' },
    });
    const out = await run('agent', 'uploadCsv', { agentId: agent.id }, { items: [item] });
    expect(out).toHaveLength(1);
    expect(out[0]!.pairedItem).toEqual({ item: 0 });
    expect(emu.agent(agent.id)!.datatable).not.toBeNull();
  });
});

describe('Document', () => {
  it('Get Many: IDs with the five filters, a limit (newest first), or the data of each', async () => {
    const all = json(await run('document', 'getAll', { returnAll: true }));
    expect(all.map((d) => d.document_id)).toEqual(expect.arrayContaining(docIds));
    const today = new Date().toISOString().slice(0, 10);
    const filtered = json(
      await run('document', 'getAll', {
        returnAll: true,
        filters: {
          startDate: today,
          endDate: `${today}T23:59:59`,
          folderId: byId(folderId),
          templateId: fromList(templateId),
          updatedSince: '2020-01-01T00:00:00',
        },
      }),
    );
    expect(filtered.map((d) => d.document_id)).toEqual(expect.arrayContaining(docIds));
    const none = json(
      await run('document', 'getAll', {
        returnAll: true,
        filters: { updatedSince: '2999-01-01T00:00:00' },
      }),
    );
    expect(none).toEqual([]);
    const limited = json(await run('document', 'getAll', { limit: 2 }));
    const newest = [...all.map((d) => d.document_id as number)].sort((a, b) => b - a).slice(0, 2);
    expect(limited.map((d) => d.document_id)).toEqual(newest);
    const raw = json(await run('document', 'getAll', { simplify: false, limit: 2 }));
    expect(raw.map((d) => d.document_id)).toEqual(newest);
    expect(raw[0]).toHaveProperty('General_fields');
    const simple = json(await run('document', 'getAll', { returnAll: true }));
    expect(simple.find((d) => d.document_id === docIds[0])).toMatchObject({
      document_name: 'a.txt',
      'Invoice number': 'A-1',
      Total: 10.5,
    });
  });

  it('Get Data', async () => {
    const data = json(await run('document', 'getData', { documentId: docIds[0], simplify: false }))[0]!;
    expect(data).toMatchObject({ document_id: docIds[0], document_name: 'a.txt' });
    expect((data.General_fields as Record<string, { value: unknown }>).Total!.value).toBe(10.5);
    const simple = json(await run('document', 'getData', { documentId: docIds[0] }))[0]!;
    expect(simple).toMatchObject({ document_id: docIds[0], document_name: 'a.txt', Total: 10.5 });
    // The API document's document data has no Fraud_* keys (task results have): null, not left out.
    expect(simple.fraud).toEqual({ verdict: null, score: null });
  });

  it('Get Raw Text, by document ID or by task ID', async () => {
    expect(json(await run('document', 'getRawText', { documentId: docIds[0] }))[0]!.text).toContain('A-1');
    expect(
      json(await run('document', 'getRawText', { lookUpBy: 'taskId', taskId: firstTaskId }))[0]!.text,
    ).toContain('U-1');
  });

  it('Download File as binary output with a safe file name', async () => {
    const out = await run('document', 'downloadFile', {
      documentId: docIds[1],
      binaryPropertyOutput: 'file',
    });
    expect(out[0]!.json).toMatchObject({ document_id: docIds[1], fileName: 'b.txt', mimeType: 'text/plain' });
    expect(out[0]!.binary!.file!.fileName).toBe('b.txt');
    expect((await binaryBuffer(out[0]!, 'file')).toString()).toBe(invoice('B-1', '20,00'));
    const byTask = await run('document', 'downloadFile', { lookUpBy: 'taskId', taskId: firstTaskId });
    expect(byTask[0]!.binary!.data!.fileName).toBe('u1.txt');
  });

  it('Download ZIP of several documents as binary output', async () => {
    const out = await run('document', 'downloadZip', { documentIds: docIds.join(', ') });
    expect(out).toHaveLength(1);
    expect(out[0]!.binary!.data!.mimeType).toBe('application/zip');
    expect(out[0]!.binary!.data!.fileName).toMatch(/\.zip$/);
    const zip = await binaryBuffer(out[0]!);
    expect(zip.subarray(0, 2).toString()).toBe('PK');
    await expect(run('document', 'downloadZip', { documentIds: '999999' })).rejects.toMatchObject({
      name: 'NodeApiError',
      httpCode: '404',
      description: expect.stringContaining('DOCUMENT_NOT_FOUND'),
    });
  });

  it('Rerun: override, merged answer', async () => {
    const out = json(
      await run('document', 'rerun', {
        documentIds: docIds.join(','),
        additionalFields: { overrideExtraction: true },
      }),
    );
    expect(out[0]).toMatchObject({ rerun: docIds.length, not_rerun: 0, chunks: 1 });
    const refused = json(await run('document', 'rerun', { documentIds: String(docIds[0]) }))[0]!;
    expect(refused).toMatchObject({ rerun: 0, not_rerun: 1 });
  });

  it('Delete, also the file', async () => {
    const id = docIds.pop()!;
    expect(
      json(await run('document', 'delete', { documentId: id, additionalFields: { deleteFile: true } })),
    ).toEqual([{ success: true, doc_id: id }]);
    await expect(run('document', 'getData', { documentId: id })).rejects.toMatchObject({
      httpCode: '404',
    });
  });
});

describe('every operation', () => {
  it('of the node (every table operation and Extract) was run above', () => {
    const expected = allOperations.map((o) => `${o.resource.toLowerCase()}:${o.value}`);
    expect(expected.filter((name) => !ran.has(name))).toEqual([]);
  });
});
