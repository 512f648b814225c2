/**
 * A CSV-only watch whose upload named its template writes from the task's answer, without
 * fetch_document_data (domain/task-data.ts, issue #42): its CSV files, column order and
 * confidences, are the same as those written from the document's data.
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

async function run(formats: string) {
  world = await makeWorld({ taskDelayMs: 50, watchYaml: `    formats: ${formats}` });
  const daemon = await world.start();
  const { writeFile } = await import('node:fs/promises');
  for (const [i, name] of names.entries())
    await writeFile(join(world.dir, 'inbox', name), invoice(`T-${i}`, `${i + 2},25`));
  await until('all archived', () => daemon.db.counts().archived === names.length);
  const result = {
    csvs: await csvs(world),
    dataReads: world.emulator.stats().requestsByOperation.fetch_document_data ?? 0,
  };
  await world.cleanup();
  world = undefined;
  return result;
}

describe('results from the task answer', () => {
  it('a CSV-only watch skips fetch_document_data and writes the same CSVs as from the document data', async () => {
    const withJson = await run('[json, csv]');
    const csvOnly = await run('[csv]');
    expect(withJson.dataReads).toBe(names.length);
    expect(csvOnly.dataReads).toBe(0);
    expect(csvOnly.csvs).toEqual(withJson.csvs);
    expect(csvOnly.csvs['t1.txt']![0]![1]).toContain('T-1');
    expect(csvOnly.csvs['t1.txt']![0]![0]).toContain('Invoice number (confidence)');
  }, 60_000);
});
