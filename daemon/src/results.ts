/** Result files per document: JSON (everything), and CSV for general fields (one row) and line items. */
import { stringify } from 'csv-stringify/sync';
import { join } from 'node:path';
import {
  generalFieldsOf,
  lineItemsOf,
  safeFileName,
  type DocumentData,
  type TaskResult,
} from '../../shared/src/core/index.ts';
import { inside, writeAtomic } from './files.ts';

export interface ResultContext {
  source: string;
  sha256: string | null;
  task: TaskResult | null;
  outcome: 'processed' | 'duplicate';
}

const cell = (v: unknown) =>
  v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);

/** Columns: document columns, then each field's value and confidence, fields in name order. */
export function generalCsv(data: DocumentData, source: string): string {
  const fields = generalFieldsOf(data).sort((a, b) => a.name.localeCompare(b.name));
  const header = [
    'document_id',
    'document_name',
    'source_file',
    ...fields.flatMap((f) => [f.name, `${f.name} (confidence)`]),
  ];
  const row = [
    data.document_id,
    data.document_name ?? '',
    source,
    ...fields.flatMap((f) => [cell(f.value), cell(f.confidence)]),
  ];
  return stringify([header, row.map(cell)]);
}

export function linesCsv(data: DocumentData): string {
  const items = lineItemsOf(data);
  const names = [...new Set(items.flatMap((i) => Object.keys(i)))].sort((a, b) => a.localeCompare(b));
  const header = ['document_id', 'line', ...names.flatMap((n) => [n, `${n} (confidence)`])];
  const rows = items.map((item, i) =>
    [data.document_id, i + 1, ...names.flatMap((n) => [cell(item[n]?.value), cell(item[n]?.confidence)])].map(
      cell,
    ),
  );
  return stringify([header, ...rows]);
}

/** The base of result file names: the source file's name (made safe) and the document id. */
export function resultBase(sourceName: string, documentId: number): string {
  const stem = safeFileName(sourceName).replace(/\.[^.]+$/, '') || 'document';
  return `${stem}.doc-${documentId}`;
}

export async function writeResults(
  outputDir: string,
  formats: Array<'json' | 'csv'>,
  data: DocumentData,
  ctx: ResultContext,
  sourceName: string,
): Promise<string[]> {
  const base = resultBase(sourceName, data.document_id);
  const written: string[] = [];
  const put = async (name: string, content: string) => {
    const path = inside(outputDir, name);
    await writeAtomic(path, content);
    written.push(path);
  };
  if (formats.includes('csv')) {
    await put(`${base}.fields.csv`, generalCsv(data, ctx.source));
    await put(`${base}.lines.csv`, linesCsv(data));
  }
  // JSON last: its presence means the set is complete.
  if (formats.includes('json')) {
    const json = {
      document: data,
      task: ctx.task,
      source_file: ctx.source,
      sha256: ctx.sha256,
      outcome: ctx.outcome,
      written_at: new Date().toISOString(),
    };
    await put(`${base}.json`, `${JSON.stringify(json, null, 2)}\n`);
  }
  return written.map((p) => join(p));
}
