/**
 * The review queue end to end against the emulator: each rule held on its own route (and not firing
 * for a document that passes it), the three shapes of confidences, review.json and the review CSV,
 * the needs_review notification, health, and approval moving everything on to processed/output.
 *
 * The emulator's figures (docs/emulator.md): a field found in the text has confidence 0.95, one not
 * found 0.1 with a synthetic value ("" for text); the fraud score comes from the content hash
 * (0..0.6: LOW_RISK below 0.4, else MEDIUM_RISK) or is 0.95 and HIGH_RISK with a line "Fraud: high".
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DocexClient, DocumentData } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { approveReviewed } from '../../../daemon/src/actions/approve.ts';
import { DAILY_COLUMNS, parseCsv } from '../../../daemon/src/outputs/results.ts';
import type { ReviewJson } from '../../../daemon/src/outputs/review.ts';
import { healthOf, statusSnapshot } from '../../../daemon/src/status/read-model.ts';
import { SECRET, until, type World } from '../helpers.ts';
import { cleanInvoice, receiver, reviewWorld, tree } from '../review-helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** The watch reads the document's data for every file, as before the task's answer could stand for it. */
async function readDocumentDataAlways(w: World) {
  const yaml = await readFile(w.configFile, 'utf8');
  await writeFile(
    w.configFile,
    yaml.replace('    review_dir: ./review\n', '    review_dir: ./review\n    document_data: always\n'),
  );
}

describe('the review queue', () => {
  it(
    'each rule holds what breaks it and lets pass what does not; review.json, the CSV and the notification name the rule, field, value and threshold',
    { timeout: 120_000 },
    async () => {
      const hook = await receiver();
      try {
        world = await reviewWorld({ notifyUrl: hook.url });
        const inbox = join(world.dir, 'inbox');
        for (const d of ['required', 'verdict', 'score', 'lines', 'none'])
          await mkdir(join(inbox, d), { recursive: true });
        // Held, and the one beside it that passes the same rule.
        const files: Record<string, string> = {
          'low.txt': 'Invoice number: L-1\nWidget | 4,00\n', // Total not found: confidence 0.1 < 0.8
          'ok.txt': cleanInvoice('OK-1'),
          'required/missing.txt': 'Total: 10,00\nWidget | 10,00\n', // Invoice number: synthetic ""
          'required/present.txt': cleanInvoice('RQ-1'),
          'verdict/risky.txt': cleanInvoice('V-1', 'Fraud: high\n'),
          'verdict/clean.txt': cleanInvoice('V-2'),
          'score/risky.txt': cleanInvoice('S-1', 'Fraud: high\n'), // 0.95 > 0.9
          'score/clean.txt': cleanInvoice('S-2'), // below 0.4
          'lines/off.txt': 'Invoice number: LT-1\nTotal: 12,00\nWidget | 4,00\nGadget | 6,00\n',
          'lines/even.txt': cleanInvoice('LT-2'),
          'none/low.txt': 'Invoice number: N-1\n', // low confidence, but this route has no rules
        };
        for (const [name, text] of Object.entries(files)) await writeFile(join(inbox, name), text);
        const daemon = await world.start();
        await until(
          'every file held or archived',
          () => {
            const c = daemon.db.fileCounts.counts();
            return c.review === 5 && c.archived === 6;
          },
          60_000,
        );

        const review = join(world.dir, 'review');
        const heldNames = [
          'low.txt',
          'required/missing.txt',
          'verdict/risky.txt',
          'score/risky.txt',
          'lines/off.txt',
        ];
        const inReview = await tree(review);
        for (const name of heldNames) expect(inReview).toContain(name);
        expect(await tree(join(world.dir, 'processed'))).toEqual([
          'lines/even.txt',
          'none/low.txt',
          'ok.txt',
          'required/present.txt',
          'score/clean.txt',
          'verdict/clean.txt',
        ]);
        expect(await tree(inbox)).toEqual([]);
        // Nothing of a held document reached output: no result file, no row in output's daily CSV.
        const heldIds = daemon.db.fileCounts.inReview(10).map((r) => r.document_id);
        const output = await tree(join(world.dir, 'results'));
        for (const id of heldIds) expect(output.filter((f) => f.includes(`.doc-${id}.`))).toEqual([]);
        const dailyBefore = output.find((f) => f.startsWith('daily-'))!;
        const idsBefore = parseCsv(await readFile(join(world.dir, 'results', dailyBefore), 'utf8'), ',').map(
          (r) => r[0],
        );
        for (const id of heldIds) expect(idsBefore).not.toContain(String(id));

        const reviewJson = async (stem: string) => {
          const name = inReview.find((f) => f.startsWith(`${stem}.doc-`) && f.endsWith('.review.json'))!;
          return JSON.parse(await readFile(join(review, name), 'utf8')) as ReviewJson;
        };
        const low = await reviewJson('low');
        expect(low.rules).toEqual([
          {
            rule: 'minConfidence',
            field: 'Total',
            value: 0,
            found: 0.1,
            threshold: 0.8,
            message: 'Total: confidence 0.1 is below 0.8',
          },
        ]);
        expect(low).toMatchObject({
          status: 'needs_review',
          file: 'low.txt',
          original: join(review, 'low.txt'),
          source_file: join(inbox, 'low.txt'),
        });
        // Its results are beside it, named as in output.
        for (const suffix of ['.json', '.fields.csv', '.lines.csv'])
          expect(existsSync(join(review, `low.doc-${low.document_id}${suffix}`))).toBe(true);
        expect((await reviewJson('missing')).rules).toEqual([
          { rule: 'requiredFields', field: 'Invoice number', value: '', message: 'Invoice number is empty' },
        ]);
        const risky = inReview.filter((f) => f.startsWith('risky.doc-') && f.endsWith('.review.json'));
        const rules = await Promise.all(
          risky.map(async (f) => (JSON.parse(await readFile(join(review, f), 'utf8')) as ReviewJson).rules),
        );
        expect(rules).toEqual(
          expect.arrayContaining([
            [{ rule: 'fraud', value: 'HIGH_RISK', message: 'fraud verdict is "HIGH_RISK", not a clean one' }],
            [{ rule: 'fraud', value: 0.95, threshold: 0.9, message: 'fraud score 0.95 is above 0.9' }],
          ]),
        );
        expect((await reviewJson('off')).rules).toEqual([
          {
            rule: 'lineTotal',
            field: 'Total',
            value: 10,
            found: 12,
            threshold: 0.01,
            message: 'sum of Amount over 2 line(s) is 10, Total is 12 (tolerance 0.01)',
          },
        ]);

        // The day's review CSV: one row per held document, with its rules and reasons (corrections:
        // filled by a decision's row).
        const csvName = inReview.find((f) => /^review-\d{4}-\d{2}-\d{2}\.csv$/.test(f))!;
        const [header, ...rows] = parseCsv(await readFile(join(review, csvName), 'utf8'), ',');
        expect(header).toEqual([...DAILY_COLUMNS, 'route', 'rules', 'reasons', 'corrections']);
        expect(rows).toHaveLength(5);
        const rowOf = (name: string) => rows.find((r) => r[1] === join(inbox, name))!;
        expect(rowOf('low.txt').slice(8)).toEqual([
          '',
          'minConfidence',
          'Total: confidence 0.1 is below 0.8',
          '',
        ]);
        expect(rowOf('lines/off.txt')[8]).toBe('lines');
        expect(rowOf('verdict/risky.txt')[6]).toBe('HIGH_RISK');

        // One needs_review notification per held document, naming its rules; no result_written for them.
        await until(
          '5 notifications',
          () => hook.received.filter((e) => e.event === 'needs_review').length === 5,
        );
        const lowEvent = hook.received.find(
          (e) => e.event === 'needs_review' && e.data.file === join(inbox, 'low.txt'),
        )!;
        expect(lowEvent.data).toMatchObject({
          original: join(review, 'low.txt'),
          document_id: low.document_id,
          reasons: [{ rule: 'minConfidence', field: 'Total', found: 0.1, threshold: 0.8 }],
        });
        const written = hook.received.filter((e) => e.event === 'result_written').map((e) => e.data.file);
        for (const name of heldNames) expect(written).not.toContain(join(inbox, name));

        // Health says a person must look; status lists each with its reasons.
        const source = { db: daemon.db, config: world.config() };
        expect(healthOf(source)).toMatchObject({ level: 'attention' });
        expect(healthOf(source).reasons).toContain(
          '5 document(s) wait for review: look at them in their review_dir, then approve them (docex-sync approve, or Approve on the status page)',
        );
        const listed = statusSnapshot(source).review;
        expect(listed.total).toBe(5);
        expect(listed.files.find((f) => f.file === join(inbox, 'low.txt'))).toMatchObject({
          original: join(review, 'low.txt'),
          reasons: ['Total: confidence 0.1 is below 0.8'],
        });

        // Approved: results into output (and its daily CSV), the original to processed, nothing left in review_dir.
        const ids = listed.files.map((f) => f.id);
        expect(
          approveReviewed({ db: daemon.db, config: world.config(), wake: () => daemon.pipeline.wake() }, ids),
        ).toEqual({
          approved: ids,
          skipped: [],
        });
        await until('approved files archived', () => daemon.db.fileCounts.counts().archived === 11, 30_000);
        expect(await tree(review)).toEqual([csvName]);
        const processed = await tree(join(world.dir, 'processed'));
        for (const name of heldNames) expect(processed).toContain(name);
        const results = await tree(join(world.dir, 'results'));
        for (const suffix of ['.json', '.fields.csv', '.lines.csv'])
          expect(results).toContain(`low.doc-${low.document_id}${suffix}`);
        const json = JSON.parse(
          await readFile(join(world.dir, 'results', `low.doc-${low.document_id}.json`), 'utf8'),
        );
        expect(json.archived_to).toBe(join(world.dir, 'processed', 'low.txt'));
        const daily = results.find((f) => f.startsWith('daily-'))!;
        const dailyRows = parseCsv(await readFile(join(world.dir, 'results', daily), 'utf8'), ',').slice(1);
        expect(dailyRows.map((r) => r[0]).filter((id) => id === String(low.document_id))).toHaveLength(1);
        await until('result_written for approved files', () =>
          hook.received.some((e) => e.event === 'result_written' && e.data.file === join(inbox, 'low.txt')),
        );
        expect(healthOf(source).level).toBe('healthy');
        // Approving again changes nothing.
        expect(approveReviewed({ db: daemon.db, config: world.config() }, [ids[0]!]).skipped).toEqual([
          { id: ids[0], reason: 'it is not waiting for review (it is archived)' },
        ]);
      } finally {
        await hook.close();
      }
    },
  );

  it(
    'the three shapes of confidences: objects, parallel arrays, and bare values (no confidence: never held)',
    { timeout: 90_000 },
    async () => {
      world = await reviewWorld();
      // What it injects is the document's data: read for every file (document_data: always).
      await readDocumentDataAlways(world);
      const shapes: Record<string, (g: Record<string, { value: unknown; confidence: number }>) => unknown> = {
        objects: (g) => g,
        parallel: (g) => ({
          names: Object.keys(g),
          values: Object.values(g).map((e) => e.value),
          confidences: Object.values(g).map((e) => e.confidence),
        }),
        bare: (g) => Object.fromEntries(Object.entries(g).map(([k, e]) => [k, e.value])),
      };
      // The service's answer in each shape (the API document does not show the inner keys): the file's
      // name says which; only General_fields is kept, so nothing else can give a confidence.
      const base = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
      const fetchDocumentData: DocexClient['fetchDocumentData'] = async (args) => {
        const data = await base.fetchDocumentData(args);
        const shape = Object.keys(shapes).find((s) => data.document_name?.startsWith(s))!;
        const general = data.General_fields as Record<string, { value: unknown; confidence: number }>;
        const { General_fields_list: _, ...rest } = data as DocumentData & { General_fields_list?: unknown };
        return { ...rest, General_fields: shapes[shape]!(general) } as DocumentData;
      };
      const client = new Proxy(base, {
        get: (target, key) => {
          if (key === 'fetchDocumentData') return fetchDocumentData;
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      for (const shape of Object.keys(shapes)) {
        await writeFile(join(world.dir, 'inbox', `${shape}-low.txt`), `Invoice number: ${shape}-1\n`);
        await writeFile(join(world.dir, 'inbox', `${shape}-ok.txt`), cleanInvoice(`${shape}-2`));
      }
      const daemon = await world.start({ client });
      await until(
        'all six finished',
        () => {
          const c = daemon.db.fileCounts.counts();
          return c.review + c.archived === 6;
        },
        60_000,
      );
      const held = statusSnapshot({ db: daemon.db, config: world.config() }).review.files;
      expect(held.map((f) => relative(join(world!.dir, 'inbox'), f.file)).sort()).toEqual([
        'objects-low.txt',
        'parallel-low.txt',
      ]);
      for (const f of held) expect(f.reasons).toEqual(['Total: confidence 0.1 is below 0.8']);
      expect(await tree(join(world.dir, 'processed'))).toEqual([
        'bare-low.txt',
        'bare-ok.txt',
        'objects-ok.txt',
        'parallel-ok.txt',
      ]);
    },
  );
});

describe('the review queue with names from the data and hostile data', () => {
  it(
    'archive_name names the original in review_dir and, once approved, in processed alike',
    { timeout: 90_000 },
    async () => {
      world = await reviewWorld({});
      await writeFile(
        world.configFile,
        (await readFile(world.configFile, 'utf8')).replace(
          '    review_dir: ./review\n',
          '    review_dir: ./review\n    archive_name: "{field:Invoice number}{ext}"\n',
        ),
      );
      await writeFile(join(world.dir, 'inbox', 'scan-0001.txt'), 'Invoice number: R-77\nWidget | 4,00\n');
      const daemon = await world.start();
      await until('held', () => daemon.db.fileCounts.counts().review === 1);
      expect(await tree(join(world.dir, 'review'))).toContain('R-77.txt');
      approveReviewed({ db: daemon.db, config: world.config(), wake: () => daemon.pipeline.wake() }, 'all');
      await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
      expect(await tree(join(world.dir, 'processed'))).toEqual(['R-77.txt']);
    },
  );

  it(
    'hostile field names and values are cleaned in review.json and the CSV, and nothing is written outside review_dir',
    { timeout: 90_000 },
    async () => {
      world = await reviewWorld();
      // What it injects is the document's data: read for every file (document_data: always).
      await readDocumentDataAlways(world);
      const base = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
      const evilName = '=HYPERLINK("http://evil.example")\n../../../etc/passwd\u202e';
      const fetchDocumentData: DocexClient['fetchDocumentData'] = async (args) => {
        const data = await base.fetchDocumentData(args);
        return {
          ...data,
          General_fields: {
            [evilName]: { value: '../../outside\u0000\r\n=1+1', confidence: 0.05 },
            '': { value: 'x'.repeat(5000), confidence: 0.01 },
          },
          General_fields_list: [],
        } as DocumentData;
      };
      const client = new Proxy(base, {
        get: (target, key) => {
          if (key === 'fetchDocumentData') return fetchDocumentData;
          const value: unknown = Reflect.get(target, key, target);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      await writeFile(join(world.dir, 'inbox', 'evil.txt'), 'Invoice number: E-1\n');
      const daemon = await world.start({ client });
      await until('held', () => daemon.db.fileCounts.counts().review === 1);
      const review = join(world.dir, 'review');
      const files = await tree(review);
      const jsonName = files.find((f) => f.endsWith('.review.json'))!;
      const text = await readFile(join(review, jsonName), 'utf8');
      const json = JSON.parse(text) as ReviewJson;
      for (const r of json.rules) {
        expect(r.field).not.toMatch(/[\u0000-\u001f\u202e]/);
        expect(String(r.value)).not.toMatch(/[\u0000-\u001f]/);
        expect(r.message.length).toBeLessThanOrEqual(600);
      }
      expect(json.rules[0]!.field).toBe('=HYPERLINK("http://evil.example") ../../../etc/passwd ');
      expect(String(json.rules[1]!.value)).toHaveLength(300);
      const csvName = files.find((f) => f.startsWith('review-'))!;
      const [, row] = parseCsv(await readFile(join(review, csvName), 'utf8'), ',');
      // A spreadsheet does not run it as a formula: the cell starts with a quote.
      expect(row![10]!.startsWith("'=HYPERLINK")).toBe(true);
      // Everything written is inside review_dir (plus the watch's own folders): nothing beside the world's folders.
      expect(
        (await tree(world.dir)).filter(
          (f) => !/^(review|state|inbox|results|processed|failed)\//.test(f) && f !== 'docex-sync.yaml',
        ),
      ).toEqual([]);
      expect(files.every((f) => !f.includes('..'))).toBe(true);
    },
  );
});
