import { appendFile, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { runRerun } from '../../../daemon/src/jobs/reruns.ts';
import {
  DailyCsv,
  localDate,
  parseCsv,
  ResultWriter,
  STANDARD_CSV,
  type ResultJson,
} from '../../../daemon/src/outputs/results.ts';
import { invoice, makeWorld, SECRET, until, type World } from '../helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const today = () => `daily-${localDate(new Date())}.csv`;
const quietLog = () =>
  createLogger('warn', {
    pretty: false,
    destination: new Writable({ write: (_c, _e, done) => done() }),
  });

async function resultFiles(dir: string, prefix: string) {
  const names = await readdir(dir);
  const pick = (suffix: string) =>
    join(
      dir,
      names.find((n) => n.startsWith(prefix) && n.endsWith(suffix))!,
    );
  return {
    json: JSON.parse(await readFile(pick('.json'), 'utf8')) as ResultJson,
    fields: await readFile(pick('.fields.csv'), 'utf8'),
    lines: await readFile(pick('.lines.csv'), 'utf8'),
  };
}

describe('results operators can use', () => {
  it("columns follow the template's field order, fetched once per template; fraud, source and archive in the results", async () => {
    world = await makeWorld();
    const daemon = await world.start();
    // Positions 1..4 in the helper: Invoice number, Total | Description, Amount (alphabetically: Amount first).
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('A-1'));
    await writeFile(join(world.dir, 'inbox', 'b.txt'), invoice('B-1'));
    await until('both archived', () => daemon.db.fileCounts.counts().archived === 2);
    expect(world.emulator.stats().requestsByOperation.fetch_template).toBe(1);
    expect(world.emulator.stats().requestsByOperation.fetch_field).toBe(4);

    const a = await resultFiles(join(world.dir, 'results'), 'a.');
    const [header, row] = parseCsv(a.fields, ',');
    expect(header).toEqual([
      'document_id',
      'document_name',
      'source_file',
      'fraud_verdict',
      'fraud_score',
      'Invoice number',
      'Invoice number (confidence)',
      'Total',
      'Total (confidence)',
    ]);
    expect(a.json.task?.Fraud_verdict).toMatch(/_RISK$/);
    expect(row![3]).toBe(a.json.task!.Fraud_verdict);
    expect(Number(row![4])).toBe(a.json.task!.Fraud_score);
    expect(a.json.fraud_verdict).toBe(a.json.task!.Fraud_verdict);
    expect(a.lines.split('\n')[0]).toBe(
      'document_id,line,Description,Description (confidence),Amount,Amount (confidence)',
    );
    expect(a.json.source_file).toBe(join(world.dir, 'inbox', 'a.txt'));
    expect(a.json.archived_to).toBe(join(world.dir, 'processed', 'a.txt'));

    const daily = parseCsv(await readFile(join(world.dir, 'results', today()), 'utf8'), ',');
    expect(daily[0]).toEqual([
      'document_id',
      'source_file',
      'document_name',
      'archived_to',
      'outcome',
      'written_at',
      'fraud_verdict',
      'fraud_score',
      'Invoice number',
      'Total',
    ]);
    expect(
      daily
        .slice(1)
        .map((r) => [r[1], r[8], r[9]])
        .sort(),
    ).toEqual([
      [join(world.dir, 'inbox', 'a.txt'), 'A-1', '10'],
      [join(world.dir, 'inbox', 'b.txt'), 'B-1', '10'],
    ]);
  });

  it('two files of the same name: each JSON names where its original went; a changed target is corrected', async () => {
    world = await makeWorld();
    const dir = world.dir;
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'same.txt'), invoice('S-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
    await writeFile(join(world.dir, 'inbox', 'same.txt'), invoice('S-2'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 2);
    const names = (await readdir(join(world.dir, 'results'))).filter((n) => n.endsWith('.json'));
    const archived = await Promise.all(
      names.map(
        async (n) => (JSON.parse(await readFile(join(dir, 'results', n), 'utf8')) as ResultJson).archived_to,
      ),
    );
    expect(archived.sort()).toEqual([
      join(dir, 'processed', 'same (2).txt'),
      join(dir, 'processed', 'same.txt'),
    ]);

    // The planned name was taken between the results and the move: the JSON is corrected afterwards.
    const writer = new ResultWriter(createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET }));
    const target = { output: join(dir, 'results'), formats: ['json'] as const };
    const documentId = daemon.db.files.inState('archived')[0]!.document_id!;
    await writer.recordArchive(target, 'same.txt', documentId, '/elsewhere/same (3).txt');
    const json = JSON.parse(
      await readFile(join(dir, 'results', `same.doc-${documentId}.json`), 'utf8'),
    ) as ResultJson;
    expect(json.archived_to).toBe('/elsewhere/same (3).txt');
    expect(json.document.document_id).toBe(documentId);
  });

  it('excel style: BOM, semicolons and decimal commas for an EU template', async () => {
    world = await makeWorld({ watchYaml: '    csv_style: excel' });
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'eu.txt'), invoice('E-1', '1.234,50'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
    const { fields, lines } = await resultFiles(join(world.dir, 'results'), 'eu.');
    expect(fields.startsWith('\uFEFFdocument_id;document_name;source_file;fraud_verdict;')).toBe(true);
    const [, row] = parseCsv(fields.slice(1), ';');
    expect(row!.slice(5)).toEqual(['E-1', '0,95', '1234,5', '0,95']);
    expect(lines.split('\n')[1]).toMatch(/;1;Widget;0,9;4;0,9$/);
    const daily = await readFile(join(world.dir, 'results', today()), 'utf8');
    expect(daily.startsWith('\uFEFFdocument_id;source_file;')).toBe(true);
    expect(daily.indexOf('\uFEFF', 1)).toBe(-1);
  });

  it('the daily CSV: header once, one row per document, a crash-torn row is cut, a replay adds nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-daily-'));
    try {
      const path = join(dir, 'daily.csv');
      const record = (id: number) => ({
        document_id: id,
        source_file: `/in/${id}, "quoted".pdf`,
        document_name: `${id}.pdf`,
        archived_to: null,
        outcome: 'processed',
        written_at: '2026-01-01T00:00:00.000Z',
        fraud_verdict: 'LOW_RISK',
        fraud_score: 0.1,
      });
      const fields = (total: number) =>
        [
          ['Note', 'two\nlines'],
          ['Total', total],
        ] as const;
      const first = new DailyCsv();
      expect(await first.append(path, record(1), fields(1.5), STANDARD_CSV)).toBe(true);
      expect(await first.append(path, record(1), fields(1.5), STANDARD_CSV)).toBe(false);
      await Promise.all([2, 3, 4].map((id) => first.append(path, record(id), fields(id), STANDARD_CSV)));
      await appendFile(path, '5,"/in/5.pdf",5.pd'); // the process died in the middle of a row

      const afterRestart = new DailyCsv();
      expect(await afterRestart.append(path, record(3), fields(3), STANDARD_CSV)).toBe(false);
      expect(
        await afterRestart.append(
          path,
          record(5),
          [
            ['Total', 5],
            ['Unknown', 'x'],
          ],
          STANDARD_CSV,
        ),
      ).toBe(true);
      const rows = parseCsv(await readFile(path, 'utf8'), ',');
      expect(rows.map((r) => r[0])).toEqual(['document_id', '1', '2', '3', '4', '5']);
      expect(rows[1]).toEqual([
        '1',
        '/in/1, "quoted".pdf',
        '1.pdf',
        '',
        'processed',
        '2026-01-01T00:00:00.000Z',
        'LOW_RISK',
        '0.1',
        'two\nlines',
        '1.5',
      ]);
      expect(rows[5]!.slice(8)).toEqual(['', '5']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the daily CSV keeps a bounded number of days in memory; a forgotten day is read back, so a replay still adds nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-daily-bound-'));
    try {
      const daily = new DailyCsv();
      const record = (id: number) => ({
        document_id: id,
        source_file: `/in/${id}.pdf`,
        document_name: `${id}.pdf`,
        archived_to: null,
        outcome: 'processed',
        written_at: '2026-01-01T00:00:00.000Z',
        fraud_verdict: null,
        fraud_score: null,
      });
      const day = (n: number) => join(dir, `daily-2026-01-${String(n).padStart(2, '0')}.csv`);
      for (let n = 1; n <= 30; n++)
        expect(await daily.append(day(n), record(n), [], STANDARD_CSV)).toBe(true);
      expect(daily.remembered).toBeLessThanOrEqual(8);
      // Day 1 was forgotten: its row is known again from the file, not appended twice.
      expect(await daily.append(day(1), record(1), [], STANDARD_CSV)).toBe(false);
      expect(await daily.append(day(1), record(31), [], STANDARD_CSV)).toBe(true);
      const rows = parseCsv(await readFile(day(1), 'utf8'), ',');
      expect(rows.map((r) => r[0])).toEqual(['document_id', '1', '31']);
      expect(daily.remembered).toBeLessThanOrEqual(8);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a name from the server never decides where results go', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-results-'));
    try {
      const writer = new ResultWriter({
        fetchTemplate: () => Promise.reject(new Error('offline')),
        fetchField: () => Promise.reject(new Error('offline')),
      } as never);
      const written = await writer.write(
        { output: join(dir, 'out'), formats: ['json', 'csv'] },
        { document_id: 7, template_id: 1, document_name: '../../etc/passwd', General_fields: { x: 1 } },
        {
          source: '/in/x',
          archivedTo: null,
          sha256: null,
          task: null,
          outcome: 'processed',
          sourceName: '../../../evil.pdf',
        },
      );
      expect(written.every((p) => p.startsWith(join(dir, 'out') + '/'))).toBe(true);
      expect((await readdir(join(dir, 'out'))).sort()).toEqual([
        `daily-${localDate(new Date())}.csv`,
        'evil.doc-7.fields.csv',
        'evil.doc-7.json',
        'evil.doc-7.lines.csv',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('after a rerun the results of the files concerned are fetched again and rewritten when they changed', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'r.txt'), invoice('R-1'));
    await writeFile(join(world.dir, 'inbox', 's.txt'), invoice('S-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 2);
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const before = await resultFiles(join(world.dir, 'results'), 'r.');
    const job = { name: 'cli', template_id: world.templateId, override: true, dry_run: false };
    const deps = {
      db: daemon.db,
      client,
      log: quietLog(),
      config: world.config(),
      refresh: { firstDelayMs: 20, windowMs: 5_000 },
    };

    const same = await runRerun(deps, job);
    expect(same.refresh).toEqual({ files: 2, rewritten: 0, unchanged: 2, not_seen: 0 });

    const template = await client.fetchTemplate({ template_id: world.templateId });
    for (const field_id of template.field_ids!) {
      const field = await client.fetchField({ field_id });
      if (field.name === 'Total') await client.updateField({ field_id, name: 'Grand total' });
    }
    const changed = await runRerun(deps, { ...job, override: false });
    expect(changed).toMatchObject({ status: 'done', rerun: 2, refresh: { files: 2, rewritten: 2 } });
    const after = await resultFiles(join(world.dir, 'results'), 'r.');
    expect(after.json.document.General_fields).toHaveProperty('Grand total');
    expect(after.json.refreshed_after_rerun).toBe('cli');
    expect(after.json.archived_to).toBe(before.json.archived_to);
    expect(after.json.source_file).toBe(before.json.source_file);
    expect(after.json.task).toEqual(before.json.task);
    expect(parseCsv(after.fields, ',')[0]).toContain('Grand total');
    const daily = parseCsv(await readFile(join(world.dir, 'results', today()), 'utf8'), ',');
    expect(daily.slice(1).map((r) => r[4])).toEqual([
      'processed',
      'processed',
      'processed (rerun)',
      'processed (rerun)',
    ]);
  });
});
