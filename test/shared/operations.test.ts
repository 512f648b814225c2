/**
 * Every operation of OPERATIONS, driven from the table: the request line (both instruction forms),
 * the exact encoded query, the JSON or multipart body, the Authorization header, and the parsed
 * answer. A new operation without a sample here fails the first test.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import {
  camelCase,
  OPERATION_NAMES,
  OPERATIONS,
  readAll,
  type BinaryResult,
  type CallOptions,
  type OperationName,
} from '@docex/shared';
import { BASE, bytes, KEY, nodeClient } from '../support/client.ts';

interface ExpectedFile {
  field: string;
  name: string;
  type: string;
  content: string;
}

interface Sample {
  title: string;
  /** A function when the input holds a one-shot stream (the sample runs twice). */
  input?: Record<string, unknown> | (() => Record<string, unknown>);
  options?: CallOptions;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** The exact encoded query string, '' for none. */
  query: string;
  json?: unknown;
  multipart?: { files: ExpectedFile[]; fields: Record<string, string> };
  reply: unknown;
  replyHeaders?: Record<string, string>;
  /** The parsed answer (for binary operations: the file's metadata and bytes). */
  expected: unknown;
}

const dir = mkdtempSync(join(tmpdir(), 'docex-ops-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const invoicePath = join(dir, 'invoice.pdf');
const ratesPath = join(dir, 'rates.csv');
writeFileSync(invoicePath, '%PDF-1.7 fake invoice');
writeFileSync(ratesPath, 'code,rate\nA,1.5\n');

const folder = {
  id: 1,
  name: 'Invoices',
  desc: null,
  template_ids: [2],
  templates: [{ id: 2, name: 'Supplier', desc: null }],
};
const template = {
  id: 2,
  name: 'Supplier',
  desc: 'd',
  folder_id: 1,
  field_ids: [3],
  instruction_ids: [5],
};
const field = {
  id: 3,
  template_id: 2,
  name: 'total',
  type: 'General fields',
  desc: 'Total',
  format: 'total_price',
  position: 1,
};
const instruction = { id: 5, template_id: 2, content: 'Amounts are in EUR', type: 'Line fields' };
const taskResult = {
  status: 'DONE',
  status_message: 'ok',
  child_task_ids: null,
  task_id: 't-1',
  document_id: 10,
  document_name: 'invoice.pdf',
  General_fields: { total: { value: '12.50', confidence: 0.98 } },
  Line_fields: { sku: [{ value: 'A1', confidence: 0.9 }] },
  Fraud_verdict: 'clean',
  Fraud_justification: null,
  Fraud_score: 0.02,
  Fraud_detection_tests: [{ name: 'metadata', passed: true }],
};
const documentData = {
  document_id: 10,
  template_id: 2,
  document_name: 'invoice.pdf',
  General_fields: { total: { value: '12.50', confidence: 0.98 } },
  General_fields_list: [{ name: 'total', value: '12.50', confidence: 0.98 }],
  Line_fields: {},
  task_id: 't-1',
};
const rerun = {
  rerun: 2,
  not_rerun: 1,
  rerun_doc_ids: [1, 2],
  errors: [
    {
      error_code: 'DOCUMENT_NOT_FOUND',
      error_type: 'invalid_id',
      message: 'missing',
      id_type: 'document_id',
      id: 3,
    },
  ],
};
const zipBytes = Buffer.from('PK\u0003\u0004 fake zip archive');

const SAMPLES: Record<OperationName, Sample[]> = {
  check_api_key: [
    {
      title: 'no input, no body',
      method: 'POST',
      path: '/v1/check_api_key/',
      query: '',
      reply: { valid: true, company: 'Acme' },
      expected: { valid: true, details: { valid: true, company: 'Acme' } },
    },
  ],
  upload_file: [
    {
      title: 'a path, a buffer and a stream, all query parameters, metadata object',
      input: () => ({
        files: [
          { path: invoicePath },
          { data: bytes('PNGDATA'), fileName: 'scan "1".png' },
          {
            stream: Readable.from([Buffer.from('col\n'), Buffer.from('1\n')]),
            fileName: 'lines.csv',
            contentType: 'text/csv; charset=utf-8',
          },
        ],
        folder_id: 1,
        template_id: 2,
        doc_id: 10,
        metadata: { source: 'test', n: 1 },
      }),
      method: 'POST',
      path: '/v1/upload_file/',
      query: '?folder_id=1&template_id=2&doc_id=10',
      multipart: {
        files: [
          { field: 'files', name: 'invoice.pdf', type: 'application/pdf', content: '%PDF-1.7 fake invoice' },
          { field: 'files', name: 'scan "1".png', type: 'image/png', content: 'PNGDATA' },
          { field: 'files', name: 'lines.csv', type: 'text/csv; charset=utf-8', content: 'col\n1\n' },
        ],
        fields: { metadata: '{"source":"test","n":1}' },
      },
      reply: { task_id: 't-1', child_task_ids: ['t-2', 't-3', 't-4'] },
      expected: {
        task_id: 't-1',
        task_ids: ['t-2', 't-3', 't-4'],
        raw: { task_id: 't-1', child_task_ids: ['t-2', 't-3', 't-4'] },
      },
    },
    {
      title: 'one file, string metadata, numeric task id',
      input: { files: [{ data: bytes('x'), fileName: 'a.bin' }], metadata: 'batch 7' },
      method: 'POST',
      path: '/v1/upload_file/',
      query: '',
      multipart: {
        files: [{ field: 'files', name: 'a.bin', type: 'application/octet-stream', content: 'x' }],
        fields: { metadata: 'batch 7' },
      },
      reply: { task_id: 42 },
      expected: { task_id: '42', task_ids: ['42'], raw: { task_id: 42 } },
    },
  ],
  fetch_tasks_results: [
    {
      title: 'task id with characters that need encoding',
      input: { task_id: 'a/b c+d' },
      method: 'GET',
      path: '/v1/fetch_tasks_results/',
      query: '?task_id=a%2Fb+c%2Bd',
      reply: taskResult,
      expected: taskResult,
    },
  ],
  upload_csv: [
    {
      title: 'agent id in the path, one CSV file',
      input: { agent_id: 7, file: { path: ratesPath } },
      method: 'POST',
      path: '/v1/datatable_match_agents/7/upload_csv/',
      query: '',
      multipart: {
        files: [{ field: 'file', name: 'rates.csv', type: 'text/csv', content: 'code,rate\nA,1.5\n' }],
        fields: {},
      },
      reply: { status: 'ok', rows: 1 },
      expected: { status: 'ok', rows: 1 },
    },
  ],
  fetch_all_folders: [
    {
      title: 'no input',
      method: 'GET',
      path: '/v1/fetch_all_folders/',
      query: '',
      reply: { folders: [folder, { id: 4 }] },
      expected: { folders: [folder, { id: 4 }] },
    },
  ],
  fetch_folder: [
    {
      title: 'folder_id',
      input: { folder_id: 1 },
      method: 'GET',
      path: '/v1/fetch_folder/',
      query: '?folder_id=1',
      reply: folder,
      expected: folder,
    },
  ],
  create_folder: [
    {
      title: 'name and a null desc',
      input: { name: 'Invoices', desc: null },
      method: 'POST',
      path: '/v1/create_folder/',
      query: '',
      json: { name: 'Invoices', desc: null },
      reply: folder,
      expected: folder,
    },
    {
      title: 'empty input sends an empty object',
      method: 'POST',
      path: '/v1/create_folder/',
      query: '',
      json: {},
      reply: { id: 9 },
      expected: { id: 9 },
    },
  ],
  update_folder: [
    {
      title: 'folder_id in the query, fields in the body',
      input: { folder_id: 1, name: 'Renamed', desc: 'new' },
      method: 'PUT',
      path: '/v1/update_folder/',
      query: '?folder_id=1',
      json: { name: 'Renamed', desc: 'new' },
      reply: { ...folder, name: 'Renamed' },
      expected: { ...folder, name: 'Renamed' },
    },
  ],
  delete_folder: [
    {
      title: 'override',
      input: { folder_id: 1, override: true },
      method: 'DELETE',
      path: '/v1/delete_folder/',
      query: '?folder_id=1&override=true',
      reply: { deleted: true },
      expected: { deleted: true },
    },
    {
      title: 'empty answer',
      input: { folder_id: '1', override: false },
      method: 'DELETE',
      path: '/v1/delete_folder/',
      query: '?folder_id=1&override=false',
      reply: '',
      expected: '',
    },
  ],
  fetch_template: [
    {
      title: 'template_id',
      input: { template_id: 2 },
      method: 'GET',
      path: '/v1/fetch_template/',
      query: '?template_id=2',
      reply: { ...template, number_locale: 'EU' },
      expected: { ...template, number_locale: 'EU', agent_ids: [] },
    },
  ],
  create_template: [
    {
      title: 'folder_id in body and query, template_id and with_agents in the query',
      input: {
        folder_id: 1,
        name: 'Supplier',
        desc: 'd',
        number_locale: 'EU',
        date_locale: 'US',
        template_id: 9,
        with_agents: true,
      },
      method: 'POST',
      path: '/v1/create_template/',
      query: '?folder_id=1&template_id=9&with_agents=true',
      json: { folder_id: 1, name: 'Supplier', desc: 'd', number_locale: 'EU', date_locale: 'US' },
      reply: { ...template, agents: [{ id: 55, type: 'datatable_match' }] },
      expected: { ...template, agents: [{ id: 55, type: 'datatable_match' }], agent_ids: [55] },
    },
  ],
  update_template: [
    {
      title: 'null clears a locale',
      input: { template_id: 2, folder_id: 3, name: 'New', number_locale: null, date_locale: 'EU' },
      method: 'PUT',
      path: '/v1/update_template/',
      query: '?template_id=2',
      json: { folder_id: 3, name: 'New', number_locale: null, date_locale: 'EU' },
      reply: { ...template, folder_id: 3 },
      expected: { ...template, folder_id: 3, agent_ids: [] },
    },
  ],
  delete_template: [
    {
      title: 'override, empty answer',
      input: { template_id: 2, override: true },
      method: 'DELETE',
      path: '/v1/delete_template/',
      query: '?template_id=2&override=true',
      reply: '',
      expected: undefined,
    },
  ],
  fetch_field: [
    {
      title: 'field_id',
      input: { field_id: 3 },
      method: 'GET',
      path: '/v1/fetch_field/',
      query: '?field_id=3',
      reply: field,
      expected: field,
    },
  ],
  create_field: [
    {
      title: 'template_id in body and query, format required',
      input: {
        template_id: 2,
        name: 'total',
        type: 'General fields',
        format: 'total_price',
        desc: 'Total',
        position: 1,
      },
      method: 'POST',
      path: '/v1/create_field/',
      query: '?template_id=2',
      json: {
        template_id: 2,
        name: 'total',
        type: 'General fields',
        format: 'total_price',
        desc: 'Total',
        position: 1,
      },
      reply: field,
      expected: field,
    },
  ],
  update_field: [
    {
      title: 'position is updatable',
      input: { field_id: 3, position: 4, format: 'number', type: 'Line fields' },
      method: 'PUT',
      path: '/v1/update_field/',
      query: '?field_id=3',
      json: { position: 4, format: 'number', type: 'Line fields' },
      reply: { ...field, position: 4 },
      expected: { ...field, position: 4 },
    },
  ],
  delete_field: [
    {
      title: 'field_id',
      input: { field_id: 3 },
      method: 'DELETE',
      path: '/v1/delete_field/',
      query: '?field_id=3',
      reply: '',
      expected: undefined,
    },
  ],
  fetch_instruction: [
    {
      title: 'query form',
      input: { instruction_id: 5 },
      method: 'GET',
      path: '/v1/fetch_instruction/',
      query: '?instruction_id=5',
      reply: instruction,
      expected: instruction,
    },
    {
      title: 'path-segment form',
      input: { instruction_id: 5 },
      options: { instructionIdIn: 'path' },
      method: 'GET',
      path: '/v1/fetch_instruction/5',
      query: '',
      reply: instruction,
      expected: instruction,
    },
  ],
  create_instruction: [
    {
      title: 'all in the body',
      input: { template_id: 2, content: 'Amounts are in EUR', type: 'Line fields' },
      method: 'POST',
      path: '/v1/create_instruction/',
      query: '',
      json: { template_id: 2, content: 'Amounts are in EUR', type: 'Line fields' },
      reply: instruction,
      expected: instruction,
    },
  ],
  update_instruction: [
    {
      title: 'query form',
      input: { instruction_id: 5, content: 'new' },
      method: 'PUT',
      path: '/v1/update_instruction/',
      query: '?instruction_id=5',
      json: { content: 'new' },
      reply: { ...instruction, content: 'new' },
      expected: { ...instruction, content: 'new' },
    },
    {
      title: 'path-segment form',
      input: { instruction_id: 5, type: 'General fields' },
      options: { instructionIdIn: 'path' },
      method: 'PUT',
      path: '/v1/update_instruction/5',
      query: '',
      json: { type: 'General fields' },
      reply: { ...instruction, type: 'General fields' },
      expected: { ...instruction, type: 'General fields' },
    },
  ],
  delete_instruction: [
    {
      title: 'query form',
      input: { instruction_id: 5 },
      method: 'DELETE',
      path: '/v1/delete_instruction/',
      query: '?instruction_id=5',
      reply: '',
      expected: undefined,
    },
    {
      title: 'path-segment form',
      input: { instruction_id: 5 },
      options: { instructionIdIn: 'path' },
      method: 'DELETE',
      path: '/v1/delete_instruction/5',
      query: '',
      reply: '',
      expected: undefined,
    },
  ],
  fetch_documents: [
    {
      title: 'no filters',
      method: 'GET',
      path: '/v1/fetch_documents/',
      query: '',
      reply: [1, 2, 3],
      expected: [1, 2, 3],
    },
    {
      title: 'all five filters, updated_since as a Date',
      input: {
        start_date: '2024-01-01',
        end_date: new Date('2024-12-31T23:00:00Z'),
        folder_id: 1,
        template_id: 2,
        updated_since: new Date('2024-05-06T07:08:09.123Z'),
      },
      method: 'GET',
      path: '/v1/fetch_documents/',
      query:
        '?start_date=2024-01-01&end_date=2024-12-31&folder_id=1&template_id=2&updated_since=2024-05-06T07%3A08%3A09.123%2B00%3A00',
      reply: ['4', 5],
      expected: [4, 5],
    },
    {
      title: 'updated_since string without offset is sent as UTC',
      input: { updated_since: '2024-05-06T07:08:09' },
      method: 'GET',
      path: '/v1/fetch_documents/',
      query: '?updated_since=2024-05-06T07%3A08%3A09%2B00%3A00',
      reply: [],
      expected: [],
    },
    {
      title: 'updated_since with a positive offset keeps it',
      input: { updated_since: '2024-05-06T09:08:09.5+02:00' },
      method: 'GET',
      path: '/v1/fetch_documents/',
      query: '?updated_since=2024-05-06T09%3A08%3A09.5%2B02%3A00',
      reply: [],
      expected: [],
    },
    {
      title: 'updated_since with a compact negative offset',
      input: { updated_since: '2024-05-06T01:38:09-0530' },
      method: 'GET',
      path: '/v1/fetch_documents/',
      query: '?updated_since=2024-05-06T01%3A38%3A09-05%3A30',
      reply: [],
      expected: [],
    },
    {
      title: 'updated_since with Z',
      input: { updated_since: '2024-05-06T07:08Z' },
      method: 'GET',
      path: '/v1/fetch_documents/',
      query: '?updated_since=2024-05-06T07%3A08%3A00%2B00%3A00',
      reply: [],
      expected: [],
    },
    {
      title: 'updated_since as a date only is midnight UTC',
      input: { updated_since: '2024-05-06' },
      method: 'GET',
      path: '/v1/fetch_documents/',
      query: '?updated_since=2024-05-06T00%3A00%3A00%2B00%3A00',
      reply: [],
      expected: [],
    },
  ],
  fetch_document_data: [
    {
      title: 'document_id',
      input: { document_id: 10 },
      method: 'GET',
      path: '/v1/fetch_document_data/',
      query: '?document_id=10',
      reply: documentData,
      expected: documentData,
    },
  ],
  fetch_file: [
    {
      title: 'by document id',
      input: { document_id: 10 },
      method: 'GET',
      path: '/v1/fetch_file/',
      query: '?document_id=10',
      reply: Buffer.from('%PDF-1.7 original'),
      replyHeaders: {
        'content-type': 'application/pdf',
        'content-length': '17',
        'content-disposition': 'attachment; filename="invoice.pdf"',
      },
      expected: {
        fileName: 'invoice.pdf',
        contentType: 'application/pdf',
        size: 17,
        text: '%PDF-1.7 original',
      },
    },
    {
      title: 'by task id, hostile file name',
      input: { task_id: 't-1' },
      method: 'GET',
      path: '/v1/fetch_file/',
      query: '?task_id=t-1',
      reply: Buffer.from('data'),
      replyHeaders: {
        'content-type': 'image/png',
        'content-disposition': 'attachment; filename="../../etc/passwd"',
      },
      expected: { fileName: 'passwd', contentType: 'image/png', size: null, text: 'data' },
    },
  ],
  fetch_raw_text: [
    {
      title: 'by task id',
      input: { task_id: 't-1' },
      method: 'GET',
      path: '/v1/fetch_raw_text/',
      query: '?task_id=t-1',
      reply: { raw_text: 'INVOICE 12' },
      expected: { text: 'INVOICE 12', raw: { raw_text: 'INVOICE 12' } },
    },
    {
      title: 'by document id',
      input: { document_id: 10 },
      method: 'GET',
      path: '/v1/fetch_raw_text/',
      query: '?document_id=10',
      reply: { text: 'x', document_id: 10 },
      expected: { text: 'x', raw: { text: 'x', document_id: 10 } },
    },
  ],
  fetch_files_batch: [
    {
      title: 'both id lists',
      input: { document_ids: [1, '2'], task_ids: ['t-1'] },
      method: 'POST',
      path: '/v1/fetch_files_batch/',
      query: '',
      json: { document_ids: [1, 2], task_ids: ['t-1'] },
      reply: zipBytes,
      replyHeaders: {
        'content-type': 'application/zip',
        'content-length': String(zipBytes.length),
        'content-disposition': 'attachment; filename="files.zip"',
      },
      expected: {
        fileName: 'files.zip',
        contentType: 'application/zip',
        size: zipBytes.length,
        text: zipBytes.toString(),
      },
    },
    {
      title: 'task ids only',
      input: { task_ids: ['t-1', 't-2'] },
      method: 'POST',
      path: '/v1/fetch_files_batch/',
      query: '',
      json: { task_ids: ['t-1', 't-2'] },
      reply: zipBytes,
      replyHeaders: { 'content-type': 'application/zip' },
      expected: { fileName: null, contentType: 'application/zip', size: null, text: zipBytes.toString() },
    },
  ],
  delete_doc: [
    {
      title: 'delete_file',
      input: { doc_id: 10, delete_file: true },
      method: 'DELETE',
      path: '/v1/delete_doc/',
      query: '?doc_id=10&delete_file=true',
      reply: '',
      expected: undefined,
    },
  ],
  rerun_documents: [
    {
      title: 'ids and override',
      input: { doc_ids: [1, 2, 3], override_extraction: true },
      method: 'POST',
      path: '/v1/rerun_documents/',
      query: '',
      json: { doc_ids: [1, 2, 3], override_extraction: true },
      reply: rerun,
      expected: rerun,
    },
  ],
};

interface Seen {
  method: string;
  url: URL;
  headers: Record<string, string>;
  text: string;
  form?: FormData;
}

/** Intercepts the next request to BASE, whatever its path, and records it. */
function intercept(sample: Sample): Promise<Seen> {
  return new Promise((resolve) => {
    nock(BASE)
      .intercept(() => true, sample.method)
      .query(true)
      .reply(async (req: Request) => {
        const seen: Seen = {
          method: req.method,
          url: new URL(req.url),
          headers: Object.fromEntries(req.headers),
          text: await req.clone().text(),
        };
        if (seen.headers['content-type']?.startsWith('multipart/form-data')) seen.form = await req.formData();
        resolve(seen);
        return [200, sample.reply as string, sample.replyHeaders ?? {}];
      });
  });
}

async function resultOf(value: unknown, binary: boolean): Promise<unknown> {
  if (!binary) return value;
  const file = value as BinaryResult;
  return {
    fileName: file.fileName,
    contentType: file.contentType,
    size: file.size,
    text: Buffer.from(await readAll(file.body)).toString(),
  };
}

afterEach(() => {
  nock.cleanAll();
});

beforeAll(() => {
  nock.disableNetConnect();
  return () => nock.enableNetConnect();
});

test('every operation of OPERATIONS has samples, and every path-form operation a path-form sample', () => {
  expect(Object.keys(SAMPLES).sort()).toEqual([...OPERATION_NAMES].sort());
  expect(OPERATION_NAMES).toHaveLength(28);
  for (const name of OPERATION_NAMES) {
    expect(SAMPLES[name].length, name).toBeGreaterThan(0);
    if ('pathForm' in OPERATIONS[name]) {
      expect(
        SAMPLES[name].some((s) => s.options?.instructionIdIn === 'path'),
        name,
      ).toBe(true);
    }
  }
});

const cases = OPERATION_NAMES.flatMap((name) =>
  SAMPLES[name].flatMap((sample) =>
    (['call', 'method'] as const).map((via) => ({
      name,
      sample,
      via,
      label: `${name}: ${sample.title} (${via})`,
    })),
  ),
);

describe('request and answer of every operation', () => {
  test.each(cases)('$label', async ({ name, sample, via }) => {
    const client = nodeClient();
    const op = OPERATIONS[name];
    const seenPromise = intercept(sample);
    const input = typeof sample.input === 'function' ? sample.input() : sample.input;
    const method = (client as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
      camelCase(name)
    ]!;
    const call =
      via === 'call'
        ? (client.call as (n: string, ...a: unknown[]) => Promise<unknown>)(name, input, sample.options)
        : method.call(client, input, sample.options);
    const result = await resultOf(await call, op.output === 'binary');
    const seen = await seenPromise;

    expect(`${seen.method} ${seen.url.pathname}`).toBe(`${sample.method} ${sample.path}`);
    expect(seen.url.search).toBe(sample.query);
    expect(seen.headers.authorization).toBe(`Bearer ${KEY}`);

    if (sample.json !== undefined) {
      expect(seen.headers['content-type']).toBe('application/json');
      expect(JSON.parse(seen.text)).toEqual(sample.json);
    } else if (sample.multipart) {
      const form = seen.form!;
      expect(form, 'multipart body').toBeDefined();
      const files: ExpectedFile[] = [];
      const fields: Record<string, string> = {};
      for (const [key, value] of form.entries()) {
        if (typeof value === 'string') fields[key] = value;
        else files.push({ field: key, name: value.name, type: value.type, content: await value.text() });
      }
      expect(files).toEqual(sample.multipart.files);
      expect(fields).toEqual(sample.multipart.fields);
      // The declared length is the real one when every size is known, so the server can refuse early.
      if (seen.headers['content-length'])
        expect(Number(seen.headers['content-length'])).toBe(Buffer.byteLength(seen.text));
    } else {
      expect(seen.text).toBe('');
      expect(seen.headers['content-type']).toBeUndefined();
    }

    expect(result).toEqual(sample.expected);
  });

  test('the client-wide instructionIdIn option selects the path form', async () => {
    const client = nodeClient({ instructionIdIn: 'path' });
    const scope = nock(BASE).get('/v1/fetch_instruction/5').reply(200, instruction);
    await expect(client.fetchInstruction({ instruction_id: 5 })).resolves.toEqual(instruction);
    // ... but leaves operations without a path form alone
    nock(BASE).get('/v1/fetch_field/').query({ field_id: '3' }).reply(200, field);
    await expect(client.fetchField({ field_id: 3 })).resolves.toEqual(field);
    // ... and a call can still ask for the query form
    nock(BASE).get('/v1/fetch_instruction/').query({ instruction_id: '5' }).reply(200, instruction);
    await expect(
      client.fetchInstruction({ instruction_id: 5 }, { instructionIdIn: 'query' }),
    ).resolves.toEqual(instruction);
    scope.done();
  });
});

describe('createNodeClient', () => {
  test('a base URL with a path prefix and a trailing slash; the user agent', async () => {
    let seen: { path: string; ua: string | null } | undefined;
    nock('http://gateway.test')
      .get('/docex/api/v1/fetch_folder/')
      .query({ folder_id: '1' })
      .reply(async (req: Request) => {
        seen = { path: new URL(req.url).pathname, ua: req.headers.get('user-agent') };
        return [200, folder];
      });
    const client = nodeClient({ baseUrl: 'http://gateway.test/docex/api/', userAgent: 'sync/1.2' });
    await client.fetchFolder({ folder_id: 1 });
    expect(seen).toEqual({ path: '/docex/api/v1/fetch_folder/', ua: 'sync/1.2' });
  });

  test('refuses a base URL that is not http(s), and a missing key', () => {
    expect(() => nodeClient({ baseUrl: 'docex.test' })).toThrow(TypeError);
    expect(() => nodeClient({ baseUrl: 'ftp://docex.test' })).toThrow(/must start with http/);
    expect(() => nodeClient({ apiKey: '' })).toThrow(/API key is required/);
  });
});
