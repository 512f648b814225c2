/**
 * The CSV files of a document's results: the general fields (one row) and the line items (in
 * pieces), in the template's column order and the watch's dialect (standard or for a spreadsheet),
 * and the reader of our own CSV files.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { generalFieldsOf, lineItemTable, type DocumentData, type TaskResult } from '@docex/shared';
import type { TemplateLayout } from './template-layout.ts';

/** How CSV files are written: standard (RFC 4180) or for a spreadsheet (BOM, ';', decimal comma). */
export interface CsvDialect {
  delimiter: ',' | ';';
  bom: boolean;
  decimal: '.' | ',';
}
export const STANDARD_CSV: CsvDialect = { delimiter: ',', bom: false, decimal: '.' };

/** Excel in a locale whose list separator is ';': decimal comma unless the template writes US numbers. */
export function dialectFor(style: 'standard' | 'excel', layout: TemplateLayout | undefined): CsvDialect {
  if (style === 'standard') return STANDARD_CSV;
  return { delimiter: ';', bom: true, decimal: layout?.numberLocale === 'US' ? '.' : ',' };
}

/** The template's order first (also fields this document lacks), then the rest in the document's order. */
export function orderColumns(known: readonly string[] | undefined, present: readonly string[]): string[] {
  return [...new Set([...(known ?? []), ...present])];
}

const cellOf = (v: unknown, dialect: CsvDialect): string => {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return dialect.decimal === ',' ? String(v).replace('.', ',') : String(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
};

/** Cells quoted in a CSV (RFC 4180): those holding the delimiter, a quote or a line break. */
const MUST_QUOTE = { ',': /[",\r\n]/, ';': /[";\r\n]/ } as const;

/**
 * Rows as CSV text, a line break after each: cells quoted where RFC 4180 needs it, quotes doubled.
 * What csv-stringify wrote (test/daemon/outputs/csv.test.ts), at a tenth of its CPU per cell, which
 * counts for a document of 200,000 lines; and a lone carriage return is quoted too (csv-stringify
 * left it bare, which a reader, ours included, takes for a line break).
 */
export function csv(rows: unknown[][], dialect: CsvDialect, header = true): string {
  const mustQuote = MUST_QUOTE[dialect.delimiter];
  let text = dialect.bom && header ? '\uFEFF' : '';
  for (const row of rows) {
    for (let j = 0; j < row.length; j++) {
      const cell = cellOf(row[j], dialect);
      if (j > 0) text += dialect.delimiter;
      text += mustQuote.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
    }
    text += '\n';
  }
  return text;
}

export interface Fraud {
  verdict: string | null;
  score: number | null;
}

/** The verdict travels with the task result; a document's data may carry it too (kept if so). */
export function fraudOf(data: DocumentData, task: TaskResult | null | undefined): Fraud {
  const d = data as Record<string, unknown>;
  const verdict = d.Fraud_verdict ?? task?.Fraud_verdict ?? null;
  const score = d.Fraud_score ?? task?.Fraud_score ?? null;
  return {
    verdict: typeof verdict === 'string' ? verdict : null,
    score: typeof score === 'number' ? score : null,
  };
}

/** One row: document columns, the fraud verdict and score, then each field's value and confidence. */
export function generalCsv(
  data: DocumentData,
  source: string,
  fraud: Fraud,
  layout?: TemplateLayout,
  dialect = STANDARD_CSV,
): string {
  const fields = new Map(generalFieldsOf(data).map((f) => [f.name, f]));
  const names = orderColumns(layout?.general, [...fields.keys()]);
  const header = [
    'document_id',
    'document_name',
    'source_file',
    'fraud_verdict',
    'fraud_score',
    ...names.flatMap((n) => [n, `${n} (confidence)`]),
  ];
  const row = [
    data.document_id,
    data.document_name ?? '',
    source,
    fraud.verdict,
    fraud.score,
    ...names.flatMap((n) => [fields.get(n)?.value, fields.get(n)?.confidence]),
  ];
  return csv([header, row], dialect);
}

/**
 * Cells of the line items CSV made between two turns of the event loop: a few ms of work. A document
 * may have 200,000 lines; made at once, their CSV held the daemon's event loop for seconds.
 */
const CELLS_PER_PIECE = 10_000;

/** The line items CSV, in pieces of about CELLS_PER_PIECE cells, the event loop running between them. */
export async function* linesCsv(
  data: DocumentData,
  layout?: TemplateLayout,
  dialect = STANDARD_CSV,
): AsyncGenerator<string> {
  const table = lineItemTable(data);
  const names = orderColumns(layout?.line, table.names);
  const header = ['document_id', 'line', ...names.flatMap((n) => [n, `${n} (confidence)`])];
  let rows: unknown[][] = [header];
  let first = true;
  for (let i = 0; i < table.count; i++) {
    const item = table.line(i);
    rows.push([data.document_id, i + 1, ...names.flatMap((n) => [item[n]?.value, item[n]?.confidence])]);
    if (rows.length * header.length >= CELLS_PER_PIECE) {
      yield csv(rows, dialect, first);
      first = false;
      rows = [];
      await nextTurn();
    }
  }
  if (rows.length > 0) yield csv(rows, dialect, first);
}

/** RFC 4180 records (quoted cells with delimiters, quotes and line breaks), enough to read our own files. */
export function parseCsv(text: string, delimiter: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  const endCell = () => {
    row.push(cell);
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === delimiter) endCell();
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endCell();
      rows.push(row);
      row = [];
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    endCell();
    rows.push(row);
  }
  return rows;
}
