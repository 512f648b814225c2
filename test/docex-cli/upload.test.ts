/**
 * `docex upload FILE...` shares upload_file requests as docex-sync and the n8n node do (issue #42):
 * at most 20 files a request, each file's outcome under its own name and in the order given, and a
 * missing file said before anything is sent. A batch refused as a whole and a refused key are the
 * client's (test/shared/batch.test.ts): the emulator refuses those before reading the body and closes,
 * which a client writing the body may read as a lost connection (docs/decisions.md).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { templateWithField } from '../support/templates.ts';
import { inProcess, useCliWorld } from './helpers.ts';

const world = useCliWorld();
let templateId: number;

beforeAll(async () => {
  const acme = world.client('sk-acme-secret-4711');
  const folder = await acme.createFolder({ name: 'Batched uploads' });
  templateId = (await templateWithField(acme, folder.id, 'Batched')).id;
});

beforeEach(() => {
  world.emulator.faults.set({});
  world.emulator.resetStats();
});

/** Writes `count` small invoices named `<prefix>-<i>.txt` and answers their names. */
async function invoices(prefix: string, count: number): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `${prefix}-${i}.txt`);
  for (const name of names) await writeFile(join(world.dir, name), `Invoice number: ${name}\n`);
  return names;
}

const docex = (args: string[], options: { tty?: boolean; key?: string } = {}) =>
  inProcess([...args.slice(0, 1), ...args.slice(1).map((a) => (a.endsWith('.txt') ? join(world.dir, a) : a))], {
    tty: options.tty,
    env: {
      XDG_CONFIG_HOME: join(world.dir, 'no-config'),
      DOCEX_BASE_URL: world.emulator.url,
      DOCEX_API_KEY: options.key ?? 'sk-acme-secret-4711',
    },
  });
const requests = (operation: string) => world.emulator.stats().requestsByOperation[operation] ?? 0;

describe('docex upload of many files', () => {
  it('--wait: 25 files in two requests (20 + 5), each file its own result in order, a poll per file at most two wasted a round', async () => {
    const names = await invoices('wait', 25);
    const run = await docex(['upload', ...names, '--template', String(templateId), '--wait']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const answer = JSON.parse(run.stdout) as {
      task_ids: string[];
      tasks: Array<{ status: string; document_name: string }>;
      files: Array<{ file: string; task_ids: string[]; tasks: Array<{ status: string; document_name: string }> }>;
    };
    expect(answer.files.map((f) => f.file)).toEqual(names);
    expect(answer.files.map((f) => [f.tasks[0]!.status, f.tasks[0]!.document_name])).toEqual(
      names.map((n) => ['DONE', n]),
    );
    expect(answer.tasks).toHaveLength(25);
    expect(new Set(answer.task_ids).size).toBe(25);
    expect(requests('upload_file')).toBe(2);
    // The shared completion check: a poll per file, and at most two polls wasted a listing round.
    const listings = requests('fetch_documents');
    expect(listings).toBeGreaterThan(0);
    expect(requests('fetch_tasks_results')).toBeLessThanOrEqual(25 + 2 * listings);
    expect(requests('fetch_document_data')).toBe(0);
  });

  it('without --wait: two requests, every task id, and which files each request carried', async () => {
    const names = await invoices('nowait', 25);
    const run = await docex(['upload', ...names, '--template', String(templateId)]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const answer = JSON.parse(run.stdout) as { task_ids: string[]; uploads: Array<{ files: string[] }> };
    expect(new Set(answer.task_ids).size).toBe(25);
    expect(answer.uploads.map((u) => u.files)).toEqual([names.slice(0, 20), names.slice(20)]);
    expect(requests('upload_file')).toBe(2);
  });

  it('a missing file stops the command before anything is sent (exit 2, naming it)', async () => {
    const names = await invoices('missing', 2);
    const run = await docex(['upload', names[0]!, 'missing-nowhere.txt', names[1]!, '--wait']);
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `docex: upload_file: cannot read file "${join(world.dir, 'missing-nowhere.txt')}" (ENOENT)\n`,
    });
    expect(world.emulator.stats().totalRequests).toBe(0);
  });
});
