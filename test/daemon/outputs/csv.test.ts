/**
 * The result CSVs: what csv-stringify wrote before (same quoting, same BOM and line breaks, both
 * dialects; a lone carriage return is now quoted too), and the line items of a large document
 * written in pieces with the event loop running between them.
 */
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import type { DocumentData } from '@docex/shared';
import {
  dialectFor,
  generalCsv,
  linesCsv,
  STANDARD_CSV,
  type CsvDialect,
  type TemplateLayout,
} from '../../../daemon/src/outputs/results.ts';

/**
 * Cells as csv-stringify wrote them (the writer before): every cell a string, as cellOf makes it.
 * Told to quote line breaks of both kinds: given '\n' as the record delimiter, it had quoted only
 * that one, and a cell with a lone '\r' (a line break to most CSV readers, ours included) went
 * unquoted.
 */
function csvStringify(rows: unknown[][], dialect: CsvDialect): string {
  const cell = (v: unknown) =>
    v === null || v === undefined
      ? ''
      : typeof v === 'number'
        ? dialect.decimal === ','
          ? String(v).replace('.', ',')
          : String(v)
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
  const text = stringify(
    rows.map((r) => r.map(cell)),
    { delimiter: dialect.delimiter, record_delimiter: '\n', quote_record_delimiter: true },
  );
  return dialect.bom ? `\uFEFF${text}` : text;
}

const TRICKY = [
  'plain',
  '',
  'comma, inside',
  'semi; colon',
  'quote " inside',
  '"quoted"',
  'line\nbreak',
  'carriage\rreturn',
  'crlf\r\n',
  ' spaces ',
  '=1+1',
  'é ü 😀',
  '\uFEFFbom',
  '\t',
];

const layout: TemplateLayout = {
  general: ['Invoice number'],
  line: ['Description', 'Amount'],
  numberLocale: 'EU',
};

const collect = async (pieces: AsyncIterable<string>) => {
  const all: string[] = [];
  for await (const piece of pieces) all.push(piece);
  return all;
};

describe('result CSVs', () => {
  for (const style of ['standard', 'excel'] as const) {
    it(`${style}: the line items and the general fields as csv-stringify wrote them`, async () => {
      const dialect = dialectFor(style, layout);
      const values: unknown[] = [...TRICKY, 4.5, -0.25, 12, null, { nested: 'a,b' }, ['x', 'y"z']];
      const data = {
        document_id: 7,
        document_name: 'name, with "quotes"',
        General_fields: Object.fromEntries(
          values.map((v, i) => [`field ${i}${i % 3 === 0 ? ';,' : ''}`, { value: v, confidence: 0.9 }]),
        ),
        Line_fields: {
          Description: values.map((value) => ({ value, confidence: 0.5 })),
          Amount: values.map((_, i) => ({ value: i + 0.5, confidence: null })),
          'Note, "odd"': [{ value: 'only the first line', confidence: 1 }],
        },
      } as unknown as DocumentData;

      const names = ['Description', 'Amount', 'Note, "odd"'];
      const header = ['document_id', 'line', ...names.flatMap((n) => [n, `${n} (confidence)`])];
      const lines = data.Line_fields as Record<string, Array<{ value: unknown; confidence: unknown }>>;
      const rows = values.map((_, i) => [
        7,
        i + 1,
        ...names.flatMap((n) => [lines[n]![i]?.value, lines[n]![i]?.confidence]),
      ]);
      expect((await collect(linesCsv(data, layout, dialect))).join('')).toBe(
        csvStringify([header, ...rows], dialect),
      );

      const general = Object.entries(data.General_fields!) as Array<
        [string, { value: unknown; confidence: number }]
      >;
      const fraud = { verdict: 'LOW_RISK', score: 0.25 };
      expect(generalCsv(data, '/in/a, "b".pdf', fraud, layout, dialect)).toBe(
        csvStringify(
          [
            [
              'document_id',
              'document_name',
              'source_file',
              'fraud_verdict',
              'fraud_score',
              ...['Invoice number', ...general.map(([n]) => n)].flatMap((n) => [n, `${n} (confidence)`]),
            ],
            [
              7,
              'name, with "quotes"',
              '/in/a, "b".pdf',
              'LOW_RISK',
              0.25,
              undefined,
              undefined,
              ...general.flatMap(([, f]) => [f.value, f.confidence]),
            ],
          ],
          dialect,
        ),
      );
    });
  }

  it('a document of 50,000 lines: its CSV comes in pieces, the event loop running between them', async () => {
    const count = 50_000;
    const data = {
      document_id: 9,
      Line_fields: {
        Description: Array.from({ length: count }, (_, i) => ({
          value: `Widget ${i}, blue`,
          confidence: 0.93,
        })),
        Amount: Array.from({ length: count }, (_, i) => ({ value: i + 0.5, confidence: 0.97 })),
      },
    } as unknown as DocumentData;
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 0);
    const pieces = await collect(linesCsv(data, layout, STANDARD_CSV));
    clearInterval(ticking);
    const text = pieces.join('');
    expect(text.split('\n')).toHaveLength(count + 2); // header, lines, the empty string after the last break
    expect(text.split('\n')[count]).toBe('9,50000,"Widget 49999, blue",0.93,49999.5,0.97');
    // ~10,000 cells a piece: 6 cells a line.
    expect(pieces.length).toBeGreaterThanOrEqual(Math.floor((count * 6) / 10_000));
    expect(ticks).toBeGreaterThan(0);
  });
});
