/**
 * The back-office walkthrough of examples/docex-sync.yaml (docs/daemon.md, "A back office, end to
 * end"), against the emulator: the example as shipped, with only its machine-specific values moved
 * into a temp folder and onto the emulator, passes `check` (every template and folder it names
 * exists there) and then does what its comments say: supplier folders routed to their templates, an
 * unmapped folder held, Synology's @eaDir ignored, originals archived by year/month/supplier, and
 * retention's dry run naming what would go. Its mailbox needs an IMAP server: it is left out here
 * (test/daemon/mail/dovecot.test.ts covers a real one).
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { startEmulator, type Emulator } from '../../../emulator/index.ts';
import { createNodeClient } from '@docex/shared/node';
import { checkConfig } from '../../../daemon/src/app/preflight.ts';
import { prune } from '../../../daemon/src/jobs/retention.ts';
import { loadConfig } from '../../../daemon/src/config/config.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { startDaemon, type RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { invoiceTemplate } from '../../support/templates.ts';
import { routeSettings } from '../../../daemon/src/config/route-settings.ts';
import { filesUnder, SECRET, until, watchIn } from '../helpers.ts';

const EXAMPLE = join(import.meta.dirname, '../../../examples/docex-sync.yaml');
const DAY = 86_400_000;

let emulator: Emulator | undefined;
let daemon: RunningDaemon | undefined;
let dir: string | undefined;
afterEach(async () => {
  await daemon?.stop();
  await emulator?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  [daemon, emulator, dir] = [undefined, undefined, undefined];
});

const scan = (supplier: string, number: string) =>
  `Supplier: ${supplier}\nInvoice number: ${number}\nTotal: 10,00\nWidget | 4,00\nGadget | 6,00\n`;

describe('examples/docex-sync.yaml, the back-office walkthrough', () => {
  it("holds no route that takes review rules or names written for another template's fields", async () => {
    const raw = YAML.parse(await readFile(EXAMPLE, 'utf8')) as Record<string, any>;
    const watch = watchIn('/srv/base', '/srv/share', raw.watch[0]);
    for (const route of watch.routes) {
      // The watch's rules and names are written for its own template's fields.
      if (route.template_id === watch.template_id) continue;
      const { review, archive_name, result_name } = routeSettings(watch, route);
      expect({ route: route.match, review, archive_name, result_name }).toEqual({
        route: route.match,
        review: route.review,
        archive_name: route.archive_name,
        result_name: route.result_name,
      });
      // Each has rules of its own (a route to another template without any is likely an oversight).
      expect(review, route.match).toBeDefined();
    }
  });

  it('passes check against the emulator, routes the supplier folders, holds the unmapped one, ignores @eaDir, names the archive from the data', async () => {
    emulator = await startEmulator({
      port: 0,
      taskDelayMs: 30,
      companies: [{ name: 'Acme', apiKey: SECRET }],
    });
    const client = createNodeClient({ baseUrl: emulator.url, apiKey: SECRET });
    // The ids the example names: templates 12 and 14 (with a Supplier field), folder 3.
    const folders = [];
    for (let i = 1; i <= 3; i++) folders.push(await client.createFolder({ name: `Folder ${i}` }));
    expect(folders.at(-1)!.id).toBe(3);
    for (let id = 1; id <= 14; id++) {
      const template = await invoiceTemplate(client, folders[0]!.id, `Template ${id}`);
      expect(template.id).toBe(id);
      if (id === 12 || id === 14)
        await client.createField({
          template_id: id,
          name: 'Supplier',
          type: 'General fields',
          format: 'text',
          position: 5,
        });
    }

    // The example as shipped; only what belongs to a machine is moved here.
    dir = await mkdtemp(join(tmpdir(), 'docex-example-'));
    const raw = YAML.parse(await readFile(EXAMPLE, 'utf8')) as Record<string, any>;
    const watch = raw.watch[0];
    expect(watch.routes.map((r: { match: string }) => r.match)).toEqual(['ACME GmbH', 'Globex', 'Branch-*']);
    expect(watch.retention).toMatchObject({ processed_days: 400, failed_days: 60, results_days: 90 });
    expect(raw.mailboxes).toHaveLength(1);
    raw.state_db = join(dir, 'state', 'state.db');
    raw.api.base_url = emulator.url;
    raw.api.requests_per_second = 200;
    raw.poll = { ...raw.poll, interval_ms: 50, max_interval_ms: 200 };
    Object.assign(watch, {
      path: join(dir, 'Invoices'),
      output: join(dir, 'results'),
      processed_dir: join(dir, 'processed'),
      failed_dir: join(dir, 'failed'),
      review_dir: join(dir, 'to-review'),
      stable_ms: 200,
      polling_interval_ms: 200,
      rescan_interval_ms: 1000,
    });
    raw.pull.output = join(dir, 'pulled');
    raw.http.port = 0;
    delete raw.notify; // its n8n webhook is not here
    delete raw.mailboxes; // needs an IMAP server
    const configFile = join(dir, 'docex-sync.yaml');
    await writeFile(configFile, YAML.stringify(raw));

    const inbox = join(dir, 'Invoices');
    const files: Record<string, string> = {
      'ACME GmbH/2026/R-1001.pdf': scan('ACME GmbH', 'R-1001'),
      'Globex/g-77.pdf': scan('Globex Corp', 'G-77'),
      'Globex/g-78.pdf': `${scan('Globex Corp', 'G-78')}Fraud: high\n`, // the emulator's score 0.95
      'Misc/letter.pdf': scan('Nobody', 'X-1'),
      '@eaDir/scan-0001.pdf/SYNOFILE_THUMB_M.jpg': 'a thumbnail',
      'ACME GmbH/@eaDir/R-1001.pdf/SYNOFILE_THUMB_S.jpg': 'a thumbnail',
      'scan-0001.pdf': scan('Initech', 'S-1'),
    };
    for (const [rel, text] of Object.entries(files)) {
      await mkdir(join(inbox, rel, '..'), { recursive: true });
      await writeFile(join(inbox, rel), text);
    }

    const config = loadConfig(configFile);
    const report = await checkConfig(config, client, emulator.url);
    expect(report.problems).toEqual([]);
    expect(report.exitCode).toBe(0);

    const log = createLogger('debug', {
      pretty: false,
      destination: new Writable({ write: (_c, _e, d) => d() }),
    });
    daemon = await startDaemon(config, client, log);
    const db = daemon.db;
    await until(
      'three archived, one held, one waiting for review',
      () =>
        db.fileCounts.counts().archived === 3 &&
        db.fileCounts.counts().held === 1 &&
        db.fileCounts.counts().review === 1,
      30_000,
    );
    expect(db.fileCounts.inReview(10).map((r) => r.rel)).toEqual([join('Globex', 'g-78.pdf')]);
    const routes = Object.fromEntries(db.files.inState('archived').map((r) => [r.rel, r.route]));
    expect(routes).toEqual({
      [join('ACME GmbH', '2026', 'R-1001.pdf')]: 'ACME GmbH',
      [join('Globex', 'g-77.pdf')]: 'Globex',
      'scan-0001.pdf': null,
    });
    expect(db.files.inState('held')[0]).toMatchObject({
      rel: join('Misc', 'letter.pdf'),
      reason: expect.stringContaining('subfolder "Misc" is mapped by no route'),
    });
    await daemon.stop();
    daemon = undefined;

    const now = new Date();
    const month = `${now.getFullYear()}/${String(now.getMonth() + 1).padStart(2, '0')}`;
    expect(await filesUnder(join(dir, 'processed'))).toEqual(
      [`${month}/ACME GmbH/R-1001.pdf`, `${month}/Globex Corp/G-77.pdf`, `${month}/Initech/S-1.pdf`].sort(),
    );
    // The fraud suspect waits in review_dir, named like its archive; nothing of it reached output.
    expect(await filesUnder(join(dir, 'to-review'))).toContain(`${month}/Globex Corp/G-78.pdf`);
    // The thumbnails and the held letter stay where they were.
    expect(await filesUnder(inbox)).toEqual(
      [
        'ACME GmbH/@eaDir/R-1001.pdf/SYNOFILE_THUMB_S.jpg',
        '@eaDir/scan-0001.pdf/SYNOFILE_THUMB_M.jpg',
        'Misc/letter.pdf',
      ].sort(),
    );
    const results = (await filesUnder(join(dir, 'results'))).filter((f) => !f.startsWith('daily-'));
    expect(results).toEqual(
      ['ACME GmbH/R-1001', 'Globex Corp/G-77', 'Initech/S-1']
        .flatMap((b) => [`${b}.fields.csv`, `${b}.json`, `${b}.lines.csv`])
        .sort(),
    );

    // Retention, 100 days on: the results (90 days) would go, the originals (400 days) stay, and
    // nothing of the document waiting for review is touched.
    const lines: string[] = [];
    await prune(config, { dryRun: true, out: (l) => void lines.push(l), now: () => Date.now() + 100 * DAY });
    const would = lines.filter((l) => l.startsWith('would delete '));
    expect(would).toHaveLength(9);
    expect(would.every((l) => l.includes('result file') && l.includes('retention.results_days: 90'))).toBe(
      true,
    );
    expect(lines.at(-1)).toMatch(
      /^Dry run: 9 file\(s\), [\d,]+ bytes, would be deleted\. Nothing was deleted\.$/,
    );
  }, 90_000);
});
