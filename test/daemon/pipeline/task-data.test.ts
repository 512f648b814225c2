/**
 * A watch whose upload named its template writes from the task's answer, without
 * fetch_document_data (domain/task-data.ts, issue #42): its CSV files, column order and
 * confidences, are the same as those written from the document's data, and its JSON differs only
 * where the JSON says so (`document_from: "task"`, a `document` without the keys only the
 * document's data has). `document_data: always` writes today's JSON, read from the document.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { invoice, makeWorld, until, type World } from '../helpers.ts';

const names = ['t0.txt', 't1.txt', 't2.txt'];
let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** Each file's CSV files, the document id column and the source path left out (they differ between runs). */
async function csvs(w: World) {
  const dir = join(w.dir, 'results');
  const files = await readdir(dir);
  const out: Record<string, string[][][]> = {};
  for (const name of names) {
    const base = name.replace('.txt', '');
    const read = async (suffix: string, drop: number[]) =>
      (
        await readFile(
          join(
            dir,
            files.find((f) => f.startsWith(`${base}.doc-`) && f.endsWith(suffix))!,
          ),
          'utf8',
        )
      )
        .trim()
        .split('\n')
        .map((l) => l.split(',').filter((_, i) => !drop.includes(i)));
    out[name] = [await read('.fields.csv', [0, 2]), await read('.lines.csv', [0])];
  }
  return out;
}

/** Each file's JSON result, without what differs between two runs (ids, times, paths). */
async function jsons(w: World) {
  const dir = join(w.dir, 'results');
  const files = await readdir(dir);
  const out: Record<string, Record<string, unknown>> = {};
  for (const name of names) {
    const file = files.find((f) => f.startsWith(`${name.replace('.txt', '')}.doc-`) && f.endsWith('.json'));
    if (!file) continue;
    const json = JSON.parse(await readFile(join(dir, file), 'utf8'));
    for (const o of [json.document, json.task]) {
      delete o.document_id;
      delete o.task_id;
    }
    delete json.written_at;
    delete json.source_file;
    delete json.archived_to;
    out[name] = json;
  }
  return out;
}

async function run(formats: string, documentData?: string) {
  world = await makeWorld({
    taskDelayMs: 50,
    watchYaml: `    formats: ${formats}${documentData ? `\n    document_data: ${documentData}` : ''}`,
  });
  const daemon = await world.start();
  const { writeFile } = await import('node:fs/promises');
  for (const [i, name] of names.entries())
    await writeFile(join(world.dir, 'inbox', name), invoice(`T-${i}`, `${i + 2},25`));
  await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length);
  const result = {
    csvs: await csvs(world),
    jsons: await jsons(world),
    dataReads: world.emulator.stats().requestsByOperation.fetch_document_data ?? 0,
  };
  await world.cleanup();
  world = undefined;
  return result;
}

describe('results from the task answer', () => {
  it('skips fetch_document_data by default and writes the same CSVs as from the document data', async () => {
    const read = await run('[json, csv]', 'always');
    const fromTask = await run('[json, csv]');
    const csvOnly = await run('[csv]');
    expect(read.dataReads).toBe(names.length);
    expect(fromTask.dataReads).toBe(0);
    expect(csvOnly.dataReads).toBe(0);
    expect(fromTask.csvs).toEqual(read.csvs);
    expect(csvOnly.csvs).toEqual(read.csvs);
    expect(csvOnly.csvs['t1.txt']![0]![1]).toContain('T-1');
    expect(csvOnly.csvs['t1.txt']![0]![0]).toContain('Invoice number (confidence)');
    expect(csvOnly.jsons).toEqual({});
    for (const name of names) {
      const asRead = read.jsons[name]!;
      const told = fromTask.jsons[name]!;
      // Read: today's JSON, no marker, the document's data as the service sent it.
      expect(asRead.document_from).toBeUndefined();
      expect(asRead.document).toHaveProperty('General_fields_list');
      // From the task: said so, and the document holds what the answer told, in the data's order.
      expect(told.document_from).toBe('task');
      expect(Object.keys(told.document as object)).toEqual([
        'template_id',
        'document_name',
        'General_fields',
        'Line_fields',
      ]);
      const { document: readDocument, ...readRest } = asRead;
      const { document: toldDocument, document_from: _, ...toldRest } = told;
      expect(toldRest).toEqual(readRest);
      const { General_fields, Line_fields, template_id, document_name } = readDocument as Record<
        string,
        unknown
      >;
      expect(toldDocument).toEqual({ template_id, document_name, General_fields, Line_fields });
    }
  }, 90_000);

  it('document_data: always reads the document for a CSV-only watch too', async () => {
    const csvOnly = await run('[csv]', 'always');
    expect(csvOnly.dataReads).toBe(names.length);
  }, 60_000);
});
