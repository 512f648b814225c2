/**
 * The second round of the Docex node, in n8n-core's real ExecuteContext against the emulator over
 * real HTTP: keep the input, Extract from a URL (a local file server) or base64 text with clear
 * errors, confidence in Simplify, and Route for Review's second output.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { INodeExecutionData, INodeParameters } from 'n8n-workflow';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import {
  binaryBuffer,
  binaryItem,
  runDocex,
  runDocexOutputs,
  type Credentials,
  type RunOptions,
} from './harness.ts';

let emu: Emulator;
let credentials: Credentials;
let templateId = 0;
const files = { server: undefined as Server | undefined, url: '', requests: [] as string[], aborted: 0 };

const invoice = (n: string, extra = '') =>
  `Invoice number: ${n}\nTotal: 10,00\nItem | Amount\nWidget | 4,00\nGadget | 6,00\n${extra}`;

beforeAll(async () => {
  emu = await startEmulator({ port: 0, taskDelayMs: 30 });
  credentials = { baseUrl: emu.url, apiKey: emu.keys[0]! };
  const run = async (p: Record<string, unknown>) =>
    (await runDocex(p as INodeParameters, { credentials }))[0]!.json;
  const folder = await run({ resource: 'folder', operation: 'create', additionalFields: { name: 'F' } });
  const template = await run({
    resource: 'template',
    operation: 'create',
    folderId: { __rl: true, mode: 'id', value: String(folder.id) },
    name: 'Invoice',
    additionalFields: { numberLocale: 'EU' },
  });
  templateId = template.id as number;
  const field = (name: string, type: string, format: string) =>
    run({ resource: 'field', operation: 'create', templateId: byId(templateId), name, type, format });
  await field('Invoice number', 'General fields', 'invoice_number');
  await field('Total', 'General fields', 'total_price');
  await field('PO number', 'General fields', 'text');
  await field('Item', 'Line fields', 'text');
  await field('Amount', 'Line fields', 'total_price');

  files.server = createServer((req, res) => {
    files.requests.push(req.url ?? '');
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/files/invoice-7.txt') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(invoice('U-7'));
    } else if (path === '/download') {
      res
        .writeHead(200, {
          'content-type': 'text/plain',
          'content-disposition': 'attachment; filename="from-header.txt"',
        })
        .end(invoice(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? 'U-8'));
    } else if (path === '/empty.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf' }).end();
    } else if (path === '/big') {
      // No content-length: the cap must stop the stream itself.
      res.writeHead(200, { 'content-type': 'application/pdf' });
      res.on('close', () => files.aborted++);
      const chunk = Buffer.alloc(64 * 1024, 1);
      const write = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', write);
      };
      write();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('no such file');
    }
  });
  await new Promise<void>((r) => files.server!.listen(0, '127.0.0.1', r));
  files.url = `http://127.0.0.1:${(files.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await emu.stop();
  files.server?.closeAllConnections();
  await new Promise<void>((r) => files.server!.close(() => r()));
});

const byId = (id: number) => ({ __rl: true, mode: 'id', value: String(id) });
const json = (items: INodeExecutionData[]) => items.map((i) => i.json);

async function extract(
  parameters: Record<string, unknown>,
  options: Partial<RunOptions> = {},
): Promise<[INodeExecutionData[], ...INodeExecutionData[][]]> {
  return (await runDocexOutputs(
    {
      resource: 'document',
      operation: 'extract',
      templateId: byId(templateId),
      ...parameters,
      options: { pollInterval: 0.05, ...((parameters.options as object) ?? {}) },
    } as INodeParameters,
    { credentials, ...options },
  )) as [INodeExecutionData[], ...INodeExecutionData[][]];
}

describe('Keep the input', () => {
  it('is off by default: only the extracted data, no input field or binary', async () => {
    const item = await binaryItem({ data: { data: invoice('K-1'), fileName: 'k1.txt' } });
    item.json = { customer: 'ACME', mail_id: 42 };
    const [out] = await extract({}, { items: [item] });
    expect(out![0]!.json).not.toHaveProperty('customer');
    expect(out![0]!.binary).toBeUndefined();
  });

  it("Include Other Input Fields and Include Input Binary Files carry them over; the node's keys win", async () => {
    const item = await binaryItem({ data: { data: invoice('K-2'), fileName: 'k2.txt' } });
    item.json = { customer: 'ACME', document_name: 'from input' };
    const [out] = await extract(
      { options: { includeOtherFields: true, includeBinary: true } },
      { items: [item] },
    );
    expect(out![0]!.json).toMatchObject({
      customer: 'ACME',
      document_name: 'k2.txt',
      'Invoice number': 'K-2',
    });
    expect((await binaryBuffer(out![0]!)).toString()).toBe(invoice('K-2'));
    expect(out![0]!.binary!.data!.fileName).toBe('k2.txt');
    expect(out![0]!.pairedItem).toEqual({ item: 0 });
  });

  it('on Get Data and Download File too; the downloaded file wins its binary field', async () => {
    const item = await binaryItem({ data: { data: invoice('K-3'), fileName: 'k3.txt' } });
    const [[done]] = await extract({}, { items: [item] });
    const id = done!.json.document_id as number;
    const input = await binaryItem({ original: { data: 'the original', fileName: 'orig.txt' } });
    input.json = { ticket: 'T-1' };
    const data = await runDocex(
      { resource: 'document', operation: 'getData', documentId: id, options: { includeOtherFields: true } },
      { credentials, items: [input] },
    );
    expect(data[0]!.json).toMatchObject({ ticket: 'T-1', document_id: id, 'Invoice number': 'K-3' });
    expect(data[0]!.binary).toBeUndefined();
    const file = await runDocex(
      {
        resource: 'document',
        operation: 'downloadFile',
        lookUpBy: 'documentId',
        documentId: id,
        options: { includeOtherFields: true, includeBinary: true },
      },
      { credentials, items: [input] },
    );
    expect(file[0]!.json).toMatchObject({ ticket: 'T-1', fileName: 'k3.txt' });
    expect(Object.keys(file[0]!.binary!).sort()).toEqual(['data', 'original']);
    expect((await binaryBuffer(file[0]!, 'original')).toString()).toBe('the original');
    expect((await binaryBuffer(file[0]!, 'data')).toString()).toBe(invoice('K-3'));
  });
});

describe('Input Source', () => {
  it("URL: downloaded with n8n's HTTP helper, the file name from the path or Content-Disposition", async () => {
    const [out] = await extract({ source: 'url', fileUrl: `${files.url}/files/invoice-7.txt?sig=secret` });
    expect(out![0]!.json).toMatchObject({ document_name: 'invoice-7.txt', 'Invoice number': 'U-7' });
    const [named] = await extract({ source: 'url', fileUrl: `${files.url}/download` });
    expect(named![0]!.json).toMatchObject({ document_name: 'from-header.txt', 'Invoice number': 'U-8' });
    const [renamed] = await extract({
      source: 'url',
      fileUrl: `${files.url}/download?n=U-9`,
      options: { fileName: 'chosen.txt' },
    });
    expect(renamed![0]!.json.document_name).toBe('chosen.txt');
  });

  it('URL: a non-2xx answer, an empty file, a file over the cap and a bad link fail with clear messages (no query shown)', async () => {
    await expect(extract({ source: 'url', fileUrl: `${files.url}/nope.pdf?token=SECRET` })).rejects.toThrow(
      `Downloading the file of item 0 failed: ${files.url}/nope.pdf (query hidden) answered HTTP 404 Not Found`,
    );
    await expect(
      extract({ source: 'url', fileUrl: `${files.url}/nope.pdf?token=SECRET` }),
    ).rejects.not.toThrow(/SECRET/);
    await expect(extract({ source: 'url', fileUrl: `${files.url}/empty.pdf` })).rejects.toThrow(
      `The file of item 0 at ${files.url}/empty.pdf is empty (0 bytes)`,
    );
    const aborted = files.aborted;
    await expect(
      extract({ source: 'url', fileUrl: `${files.url}/big`, options: { maxFileSizeMb: 1 } }),
    ).rejects.toThrow(`The file of item 0 at ${files.url}/big is larger than 1 MB`);
    // The endless body was cut off, not read to the end.
    await expect.poll(() => files.aborted).toBe(aborted + 1);
    await expect(extract({ source: 'url', fileUrl: 'ftp://example.com/a.pdf' })).rejects.toThrow(
      'The File URL of item 0 is not an http(s) link',
    );
  });

  it('Base64 Text: plain base64 or a data: URL, from a dotted path', async () => {
    const text = Buffer.from(invoice('B-1')).toString('base64');
    const [out] = await extract(
      { source: 'base64', encodedField: 'file.content', options: { fileName: 'b1.txt' } },
      { items: [{ json: { file: { content: text } } }] },
    );
    expect(out![0]!.json).toMatchObject({ document_name: 'b1.txt', 'Invoice number': 'B-1' });
    const [fromDataUrl] = await extract(
      { source: 'base64', encodedField: 'doc' },
      {
        items: [
          { json: { doc: `data:text/plain;base64,${Buffer.from(invoice('B-2')).toString('base64')}` } },
        ],
      },
    );
    // No name given: "document" with the extension of the data: URL's type.
    expect(fromDataUrl![0]!.json).toMatchObject({ document_name: 'document.txt', 'Invoice number': 'B-2' });
  });

  it('Base64 Text: a missing field, text that is not base64, or an empty file fail with clear messages', async () => {
    await expect(
      extract({ source: 'base64', encodedField: 'pdf' }, { items: [{ json: { other: 1 } }] }),
    ).rejects.toMatchObject({
      message: 'Item 0 has no base64 text in field "pdf"',
      description: expect.stringContaining('fields are: other'),
    });
    await expect(
      extract({ source: 'base64', encodedField: 'pdf' }, { items: [{ json: { pdf: 'not base64!' } }] }),
    ).rejects.toThrow('The field "pdf" of item 0 is not base64');
    await expect(
      extract({ source: 'base64', encodedField: 'pdf' }, { items: [{ json: { pdf: '=' } }] }),
    ).rejects.toThrow('The file in field "pdf" of item 0 is empty (0 bytes)');
  });

  it('Binary File: a missing binary field and an empty file fail before anything is sent', async () => {
    const item = await binaryItem({ attachment: { data: invoice('M-1'), fileName: 'm.txt' } });
    await expect(extract({}, { items: [item] })).rejects.toMatchObject({
      message: 'Item 0 has no binary field "data"',
      description: 'Its binary fields are: attachment. Set "Input Binary Field" to one of them.',
    });
    await expect(extract({}, { items: [{ json: {} }] })).rejects.toMatchObject({
      description: expect.stringContaining('choose the URL or Base64 Text input source'),
    });
    const empty = await binaryItem({ data: { data: '', fileName: 'empty.pdf' } });
    await expect(extract({}, { items: [empty] })).rejects.toThrow(
      'The file in binary field "data" of item 0 is empty (0 bytes)',
    );
  });
});

describe('Confidence and review', () => {
  it("Simplify keeps each general field's confidence with Include Confidence, and only then", async () => {
    const item = await binaryItem({ data: { data: invoice('C-1'), fileName: 'c1.txt' } });
    const [[plain]] = await extract({}, { items: [item] });
    expect(plain!.json).not.toHaveProperty('confidence');
    const [[withConfidence]] = await extract(
      { options: { includeConfidence: true, acceptDuplicates: true } },
      { items: [item] },
    );
    // Found in the text: 0.95; not in it (PO number): 0.1 (the emulator's figures).
    expect(withConfidence!.json.confidence).toEqual({
      'Invoice number': 0.95,
      Total: 0.95,
      'PO number': 0.1,
    });
  });

  it('Route for Review: two outputs, the unsure document on "Needs Review" with its reasons', async () => {
    const good = await binaryItem({ data: { data: invoice('R-1', 'PO number: 77\n'), fileName: 'r1.txt' } });
    const unsure = await binaryItem({ data: { data: invoice('R-2'), fileName: 'r2.txt' } });
    const outputs = await extract(
      { routeForReview: true, reviewMinConfidence: 0.8, reviewFraud: false },
      { items: [good, unsure] },
    );
    expect(outputs).toHaveLength(2);
    const [done, review] = outputs;
    expect(json(done!).map((j) => j.document_name)).toEqual(['r1.txt']);
    expect(done![0]!.json).not.toHaveProperty('review_reasons');
    expect(json(review!).map((j) => j.document_name)).toEqual(['r2.txt']);
    expect(review![0]!.json.review_reasons).toEqual([
      {
        rule: 'minConfidence',
        field: 'PO number',
        value: '',
        found: 0.1,
        threshold: 0.8,
        message: 'PO number: confidence 0.1 is below 0.8',
      },
    ]);
    expect(review![0]!.pairedItem).toEqual({ item: 1 });
  });

  it('Route for Review: required fields, a fraud verdict not clean, and the line total', async () => {
    const risky = await binaryItem({
      data: { data: invoice('R-3', 'PO number: 1\nfraud: high\n'), fileName: 'r3.txt' },
    });
    const [done, review] = await extract(
      {
        routeForReview: true,
        reviewMinConfidence: 0,
        reviewRequiredFields: 'Invoice number, Due date',
        reviewMore: { lineAmountField: 'Amount', totalField: 'Total', lineTotalTolerance: 0 },
      },
      { items: [risky] },
    );
    expect(done).toEqual([]);
    expect(review![0]!.json.review_reasons).toEqual([
      { rule: 'requiredFields', field: 'Due date', message: 'Due date is missing' },
      { rule: 'fraud', value: 'HIGH_RISK', message: 'fraud verdict is "HIGH_RISK", not a clean one' },
    ]);
  });

  it("Route for Review on Get Data reads the verdict from the document's task; off, there is one output", async () => {
    const risky = await binaryItem({
      data: { data: invoice('R-4', 'PO number: 1\nfraud: high\n'), fileName: 'r4.txt' },
    });
    const [[extracted]] = await extract({}, { items: [risky] });
    const id = extracted!.json.document_id as number;
    const outputs = await runDocexOutputs(
      { resource: 'document', operation: 'getData', documentId: id, routeForReview: true },
      { credentials },
    );
    expect(outputs[0]).toEqual([]);
    expect(outputs[1]![0]!.json).toMatchObject({
      document_id: id,
      fraud: { verdict: 'HIGH_RISK' },
      review_reasons: [{ rule: 'fraud', message: 'fraud verdict is "HIGH_RISK", not a clean one' }],
    });
    expect(
      await runDocexOutputs({ resource: 'document', operation: 'getData', documentId: id }, { credentials }),
    ).toHaveLength(1);
  });
});
