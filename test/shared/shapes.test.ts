/**
 * Answers whose shape the API document does not show, and readers of extracted values and file
 * names. Parsed through the client where the variant comes off the wire, as pure units otherwise.
 */
import nock from 'nock';
import { describe, expect, test } from 'vitest';
import {
  DocexResponseShapeError,
  fileNameFromContentDisposition,
  generalFieldsOf,
  lineItemsOf,
  lineItemTable,
  readFieldValue,
  safeFileName,
  schemas,
} from '@docex/shared';
import { BASE, bytes, caught, nodeClient } from '../support/client.ts';
import { offlineNock } from './helpers-nock.ts';

offlineNock();

const client = () => nodeClient({ retry: { maxRetries: 0 } });
const files = [{ data: bytes('x'), fileName: 'a.pdf' }];

function answer(method: 'GET' | 'POST', path: string, body: unknown, headers: Record<string, string> = {}) {
  nock(BASE)
    .intercept(path, method)
    .query(true)
    .reply(200, typeof body === 'string' ? body : JSON.stringify(body), {
      'content-type': typeof body === 'string' ? 'text/plain' : 'application/json',
      ...headers,
    });
}

describe('upload answers', () => {
  test.each([
    ['{task_id}', { task_id: 'a' }, 'a', ['a']],
    ['{task_id, child_task_ids}', { task_id: 'p', child_task_ids: ['c1', 'c2'] }, 'p', ['c1', 'c2']],
    ['{task_id, child_task_ids: []}', { task_id: 'p', child_task_ids: [] }, 'p', ['p']],
    ['{task_id: null, task_ids}', { task_id: null, task_ids: ['a', 'b', 'a'] }, null, ['a', 'b']],
    ['a list of ids', ['a', 'b'], null, ['a', 'b']],
    ['a list of one id', ['a'], 'a', ['a']],
    ['a list of {task_id}', [{ task_id: 'a', file: 'x.pdf' }, { task_id: 7 }], null, ['a', '7']],
    ['{tasks: [{task_id}]}', { tasks: [{ task_id: 'a' }, { task_id: 'b' }] }, null, ['a', 'b']],
    ['{tasks: [{id}]}', { tasks: [{ id: 'a' }] }, 'a', ['a']],
    ['a bare JSON string', 'task-123', 'task-123', ['task-123']],
    ['a bare number', 42, '42', ['42']],
    ['extra keys', { task_id: 'a', status: 'queued', files: 1 }, 'a', ['a']],
  ])('%s', async (_title, body, taskId, taskIds) => {
    answer('POST', '/v1/upload_file/', typeof body === 'string' ? JSON.stringify(body) : body, {
      'content-type': 'application/json',
    });
    const result = await client().uploadFile({ files });
    expect(result.task_id).toBe(taskId);
    expect(result.task_ids).toEqual(taskIds);
    expect(result.raw).toEqual(body);
  });

  test('a bare text body (not JSON) is a task id', async () => {
    answer('POST', '/v1/upload_file/', 'abc-123\n');
    expect((await client().uploadFile({ files })).task_ids).toEqual(['abc-123']);
  });

  test.each([
    ['an object without task ids', { ok: true, document_id: 5 }],
    ['an empty body', ''],
    ['an empty list', []],
    ['a sentence', 'File received, thank you'],
    ['null task_id', { task_id: null }],
  ])('%s is a DocexResponseShapeError', async (_title, body) => {
    answer('POST', '/v1/upload_file/', body);
    const error = (await caught(client().uploadFile({ files }))) as DocexResponseShapeError;
    expect(error).toBeInstanceOf(DocexResponseShapeError);
    expect(error.message).toBe(
      'upload_file: unexpected answer from the server at (root): no task id in the upload answer',
    );
  });
});

describe('check_api_key answers', () => {
  test.each([
    ['{valid: true}', { valid: true }, true],
    ['{valid: false}', { valid: false }, false],
    ['{is_valid: false}', { is_valid: false }, false],
    ['{success: "false"}', { success: 'false' }, false],
    ['a message', { message: 'API key is valid', company_id: 3 }, true],
    ['true', true, true],
    ['false', false, false],
    ['empty body', '', true],
    ['text', 'OK', true],
  ])('%s → valid %s', async (_title, body, valid) => {
    answer('POST', '/v1/check_api_key/', typeof body === 'string' ? body : body);
    const result = await client().checkApiKey();
    expect(result.valid).toBe(valid);
    expect(result.details).toEqual(body);
  });
});

describe('raw text answers', () => {
  test.each([
    ['plain text', 'Invoice 12\nTotal 5', 'Invoice 12\nTotal 5'],
    ['a JSON string', JSON.stringify('Invoice'), 'Invoice'],
    ['{raw_text}', { raw_text: 'a', document_id: 1 }, 'a'],
    ['{text}', { text: 'b' }, 'b'],
    ['{content}', { content: 'c' }, 'c'],
    ['{ocr_text}', { ocr_text: 'd' }, 'd'],
    ['{pages: [string]}', { pages: ['p1', 'p2'] }, 'p1\np2'],
    [
      '{pages: [{text}]}',
      {
        pages: [
          { page: 1, text: 'p1' },
          { page: 2, text: 'p2' },
        ],
      },
      'p1\np2',
    ],
    ['[string]', ['p1', 'p2'], 'p1\np2'],
  ])('%s', async (_title, body, text) => {
    answer(
      'GET',
      '/v1/fetch_raw_text/',
      body,
      typeof body === 'string' && body.startsWith('"') ? { 'content-type': 'application/json' } : {},
    );
    const result = await client().fetchRawText({ document_id: 1 });
    expect(result.text).toBe(text);
  });
});

describe('tolerant parsing', () => {
  test('extra keys are kept, ids may be numeric strings', async () => {
    answer('GET', '/v1/fetch_all_folders/', {
      folders: [
        {
          id: '12',
          name: 'A',
          template_ids: ['3', 4],
          templates: [{ id: '3', name: 'T', extra: 1 }],
          color: 'red',
        },
      ],
      total: 1,
    });
    const result = await client().fetchAllFolders();
    expect(result).toEqual({
      folders: [
        {
          id: 12,
          name: 'A',
          template_ids: [3, 4],
          templates: [{ id: 3, name: 'T', extra: 1 }],
          color: 'red',
        },
      ],
      total: 1,
    });
  });

  test('a bare list of folders is accepted as {folders}', async () => {
    answer('GET', '/v1/fetch_all_folders/', [{ id: 1 }]);
    expect(await client().fetchAllFolders()).toEqual({ folders: [{ id: 1 }] });
  });

  test('fetch_documents: a list, {document_ids}, {ids}', async () => {
    for (const body of [[1, '2'], { document_ids: [1, 2], count: 2 }, { ids: ['1', 2] }]) {
      answer('GET', '/v1/fetch_documents/', body);
      expect(await client().fetchDocuments()).toEqual([1, 2]);
    }
  });

  test('a task result: unknown status kept, spelling variants normalised, extra keys kept', async () => {
    for (const [sent, kept] of [
      ['QUEUED', 'QUEUED'],
      ['in_progress', 'IN PROGRESS'],
      ['In-Progress', 'IN PROGRESS'],
      ['duplicate', 'DUPLICATE'],
    ]) {
      answer('GET', '/v1/fetch_tasks_results/', {
        status: sent,
        status_message: null,
        task_id: 9,
        document_id: '5',
        Fraud_score: '0.25',
        queue_position: 3,
      });
      const result = await client().fetchTasksResults({ task_id: '9' });
      expect(result).toMatchObject({
        status: kept,
        status_message: '',
        task_id: '9',
        document_id: 5,
        Fraud_score: 0.25,
        queue_position: 3,
      });
    }
  });

  test('templates: agent ids gathered from whatever key carries them', async () => {
    const base = { id: 1, name: 't', folder_id: 2 };
    for (const [extra, ids] of [
      [{}, []],
      [{ agent_id: 5 }, [5]],
      [{ datatable_match_agent_id: '6' }, [6]],
      [{ agent_ids: [7, '8'] }, [7, 8]],
      [{ agents: [{ id: 9, type: 'datatable_match' }] }, [9]],
      [{ datatable_match_agents: [{ id: 10 }], agent_id: 10 }, [10]],
    ] as const) {
      answer('GET', '/v1/fetch_template/', { ...base, ...extra });
      expect((await client().fetchTemplate({ template_id: 1 })).agent_ids).toEqual(ids);
    }
  });

  test('rerun answers: missing lists default to [], error entries filled in, counts as strings', async () => {
    answer('POST', '/v1/rerun_documents/', { rerun: '1', not_rerun: 1, errors: [{ id: 4 }] });
    expect(await client().rerunDocuments({ doc_ids: [3, 4] })).toEqual({
      rerun: 1,
      not_rerun: 1,
      rerun_doc_ids: [],
      errors: [{ id: 4, error_code: 'UNKNOWN', error_type: 'unknown', message: 'not rerun' }],
    });
  });

  test('field position as a numeric string', () => {
    expect(schemas.Field.parse({ id: 1, template_id: 2, position: '3' }).position).toBe(3);
  });

  test('upload_csv and delete_folder answers are kept as sent', async () => {
    answer('POST', '/v1/datatable_match_agents/1/upload_csv/', { anything: ['goes'] });
    await expect(
      client().uploadCsv({ agent_id: 1, file: { data: bytes('a'), fileName: 'a.csv' } }),
    ).resolves.toEqual({
      anything: ['goes'],
    });
  });
});

describe('field values', () => {
  test.each([
    ['{value, confidence}', { value: '12.50', confidence: 0.98 }, '12.50', 0.98],
    ['{value, confidence_score}', { value: 'x', confidence_score: '0.5' }, 'x', 0.5],
    ['{text, score}', { text: 'y', score: 1 }, 'y', 1],
    ['{val, conf}', { val: 3, conf: 0 }, 3, 0],
    ['{extracted_value, probability}', { extracted_value: 'z', probability: 0.1 }, 'z', 0.1],
    ['{value} alone', { value: 'v' }, 'v', null],
    ['{confidence} alone', { confidence: 0.4 }, null, 0.4],
    [
      '{value: object}',
      { value: { amount: 5, currency: 'EUR' }, confidence: 0.7 },
      { amount: 5, currency: 'EUR' },
      0.7,
    ],
    ['[value, confidence]', ['A1', 0.9], 'A1', 0.9],
    ['[value, "confidence"]', ['A1', '0.9'], 'A1', 0.9],
    ['two values, not a tuple', [12.5, 3], [12.5, 3], null],
    ['a bare string', 'plain', 'plain', null],
    ['a bare number', 42, 42, null],
    ['null', null, null, null],
    ['an object of unknown keys', { amount: 1 }, { amount: 1 }, null],
    ['a non-numeric confidence', { value: 'v', confidence: 'high' }, 'v', null],
  ])('%s', (_title, entry, value, confidence) => {
    expect(readFieldValue(entry)).toEqual({ value, confidence });
  });

  test('generalFieldsOf: from General_fields, else from General_fields_list', () => {
    expect(
      generalFieldsOf({
        General_fields: { total: { value: '5', confidence: 0.9 }, supplier: 'ACME' },
        Line_fields: null,
      }),
    ).toEqual([
      { name: 'total', value: '5', confidence: 0.9 },
      { name: 'supplier', value: 'ACME', confidence: null },
    ]);
    expect(
      generalFieldsOf({
        General_fields: {},
        General_fields_list: [
          { name: 'total', value: '5', confidence: 0.9 },
          { field_name: 'date', text: '2024-01-01', score: 0.8 },
          { label: 'iban', value: null },
          { no_name: true },
          'junk',
        ],
        Line_fields: null,
      }),
    ).toEqual([
      { name: 'total', value: '5', confidence: 0.9 },
      { name: 'date', value: '2024-01-01', confidence: 0.8 },
      { name: 'iban', value: null, confidence: null },
    ]);
    expect(generalFieldsOf({ General_fields: null, Line_fields: null })).toEqual([]);
  });

  test('lineItemsOf: columns of entries, {values, confidences}, a list of lines', () => {
    const rows = [
      { sku: { value: 'A', confidence: 0.9 }, qty: { value: 2, confidence: 0.8 } },
      { sku: { value: 'B', confidence: 0.7 }, qty: { value: 3, confidence: null } },
    ];
    expect(
      lineItemsOf({
        General_fields: null,
        Line_fields: {
          sku: [{ value: 'A', confidence: 0.9 }, ['B', 0.7]],
          qty: { values: [2, 3], confidences: [0.8] },
        },
      }),
    ).toEqual(rows);
    expect(
      lineItemsOf({
        General_fields: null,
        Line_fields: [
          { sku: { value: 'A', confidence: 0.9 }, qty: { value: 2, confidence: 0.8 } },
          { sku: ['B', 0.7], qty: { value: 3 } },
          'junk',
        ] as unknown as Record<string, unknown>,
      }),
    ).toEqual(rows);
    // columns of different lengths: a row holds what it has
    expect(lineItemsOf({ General_fields: null, Line_fields: { a: ['1', '2'], b: ['x'] } })).toEqual([
      { a: { value: '1', confidence: null }, b: { value: 'x', confidence: null } },
      { a: { value: '2', confidence: null } },
    ]);
    expect(lineItemsOf({ General_fields: null, Line_fields: { only: 'one' } })).toEqual([
      { only: { value: 'one', confidence: null } },
    ]);
    expect(lineItemsOf({ General_fields: null, Line_fields: {} })).toEqual([]);
    expect(lineItemsOf({ General_fields: null, Line_fields: null })).toEqual([]);
  });

  test('lineItemTable: the lines of lineItemsOf one at a time, its columns in the order their keys come', () => {
    const shapes: Array<Record<string, unknown> | unknown[] | null> = [
      { sku: [{ value: 'A', confidence: 0.9 }, ['B', 0.7]], qty: { values: [2, 3], confidences: [0.8] } },
      { b: ['x'], empty: [], 7: ['seven', 'sept'], a: ['1', '2', '3'] }, // '7' comes first in any object's keys
      [{ sku: 'A' }, 'junk', { qty: 2, sku: 'B' }, null, { note: 'n', 1: 'one' }],
      { only: 'one' },
      {},
      null,
    ];
    for (const Line_fields of shapes) {
      const data = { General_fields: null, Line_fields: Line_fields as Record<string, unknown> | null };
      const lines = lineItemsOf(data);
      const table = lineItemTable(data);
      expect(table.count).toBe(lines.length);
      expect(Array.from({ length: table.count }, (_, i) => table.line(i))).toEqual(lines);
      expect(table.names).toEqual([...new Set(lines.flatMap((line) => Object.keys(line)))]);
    }
  });
});

describe('file names from the server', () => {
  test.each([
    ['invoice.pdf', 'invoice.pdf'],
    ['../../x', 'x'],
    ['../../../etc/passwd', 'passwd'],
    ['/etc/passwd', 'passwd'],
    ['C:\\Windows\\System32\\evil.exe', 'evil.exe'],
    ['\\\\server\\share\\a.pdf', 'a.pdf'],
    ['a\u0000b.pdf', 'a_b.pdf'],
    ['line\r\nbreak.pdf', 'line__break.pdf'],
    ['a<b>:c|d?e*f"g.pdf', 'a_b__c_d_e_f_g.pdf'],
    ['CON', '_CON'],
    ['con.txt', '_con.txt'],
    ['NUL.tar.gz', '_NUL.tar.gz'],
    ['com1', '_com1'],
    ['LPT9.pdf', '_LPT9.pdf'],
    ['..', 'file'],
    ['.', 'file'],
    ['...', 'file'],
    ['', 'file'],
    ['.hidden', 'hidden'],
    [' name . ', 'name'],
    ['\ud800broken.pdf', '_broken.pdf'],
  ])('%j → %j', (name, safe) => {
    expect(safeFileName(name)).toBe(safe);
  });

  test('null and undefined use the fallback', () => {
    expect(safeFileName(null)).toBe('file');
    expect(safeFileName(undefined, 'document-7.pdf')).toBe('document-7.pdf');
  });

  test('very long names are capped at 200 UTF-8 bytes, extension kept, characters whole', () => {
    const utf8 = (s: string) => new TextEncoder().encode(s).byteLength;
    const ascii = safeFileName(`${'x'.repeat(400)}.pdf`);
    expect(utf8(ascii)).toBe(200);
    expect(ascii.endsWith('.pdf')).toBe(true);
    const euro = safeFileName(`${'€'.repeat(300)}.pdf`);
    expect(utf8(euro)).toBeLessThanOrEqual(200);
    expect(euro).toMatch(/^€+\.pdf$/);
    const emoji = safeFileName('😀'.repeat(100));
    expect(utf8(emoji)).toBeLessThanOrEqual(200);
    expect(emoji).toBe('😀'.repeat(50));
  });

  test.each([
    ['attachment; filename="invoice.pdf"', 'invoice.pdf'],
    ['attachment; filename=invoice.pdf', 'invoice.pdf'],
    ['attachment; filename="a \\"quoted\\" name.pdf"', 'a "quoted" name.pdf'],
    ['attachment; filename="semi;colon.pdf"; size=3', 'semi;colon.pdf'],
    ["attachment; filename*=UTF-8''%E2%82%AC%20rates.pdf", '€ rates.pdf'],
    ['attachment; filename="fallback.pdf"; filename*=UTF-8\'\'r%C3%A9sum%C3%A9.pdf', 'résumé.pdf'],
    ["attachment; filename*=utf-8'en'..%2F..%2Fetc%2Fpasswd", '../../etc/passwd'],
    ["attachment; filename*=iso-8859-1''r%E9sum%E9.pdf", 'résumé.pdf'],
    ['attachment; filename*=UTF-8\'\'%E0%A4%A; filename="plain.pdf"', 'plain.pdf'],
    ['inline', undefined],
    [undefined, undefined],
  ])('Content-Disposition %j → %j', (header, name) => {
    expect(fileNameFromContentDisposition(header)).toBe(name);
  });

  test('a download names its file safely, whatever the header says', async () => {
    for (const [header, name] of [
      ["attachment; filename*=UTF-8''..%2F..%2F.ssh%2Fauthorized_keys", 'authorized_keys'],
      ['attachment; filename="C:\\\\boot.ini"', 'boot.ini'],
      ['attachment; filename="aux.pdf"', '_aux.pdf'],
      ["attachment; filename*=UTF-8''%00evil.pdf", '_evil.pdf'],
      ['attachment', null],
    ] as const) {
      nock(BASE).get('/v1/fetch_file/').query(true).reply(200, 'x', { 'content-disposition': header });
      const file = await client().fetchFile({ document_id: 1 });
      for await (const _ of file.body) void _;
      expect(file.fileName).toBe(name);
    }
  });
});
