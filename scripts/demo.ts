/**
 * `npm run demo`: the emulator on a free port with a demo template, the bundled sample documents
 * copied into a fresh inbox, and docex-sync processing them until every file is done or failed.
 */
import { cp, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as delay } from 'node:timers/promises';
import { startEmulator } from '../emulator/index.ts';
import { createNodeClient } from '@docex/shared/node';
import { loadConfig } from '../daemon/src/config/config.ts';
import { startDaemon } from '../daemon/src/app/daemon.ts';
import { createLogger } from '../daemon/src/common/logging.ts';

const samples = fileURLToPath(new URL('../examples/samples', import.meta.url));
const work = await mkdtemp(join(tmpdir(), 'docex-demo-'));
const emulator = await startEmulator({ port: 0, taskDelayMs: 300 });
const apiKey = emulator.keys[0]!;
console.log(`Emulator of the Document Extraction Service on ${emulator.url}`);

try {
  const client = createNodeClient({ baseUrl: emulator.url, apiKey });
  const folder = await client.createFolder({ name: 'Accounts payable' });
  const template = await client.createTemplate({
    folder_id: folder.id,
    name: 'Supplier invoice',
    number_locale: 'EU',
    date_locale: 'EU',
  });
  const fields = [
    ['Invoice number', 'General fields', 'invoice_number'],
    ['Invoice date', 'General fields', 'invoice_date'],
    ['Supplier', 'General fields', 'text'],
    ['Total', 'General fields', 'invoice_amount'],
    ['Description', 'Line fields', 'text'],
    ['Quantity', 'Line fields', 'quantity'],
    ['Amount', 'Line fields', 'total_price'],
  ] as const;
  for (const [i, [name, type, format]] of fields.entries()) {
    await client.createField({ template_id: template.id, name, type, format, position: i + 1 });
  }
  console.log(`Template "${template.name}" (id ${template.id}) with ${fields.length} fields`);

  const config = join(work, 'docex-sync.yaml');
  await writeFile(
    config,
    [
      `state_db: ./state/docex-sync.db`,
      `api: { base_url: "${emulator.url}", concurrency: 4, requests_per_second: 20 }`,
      `poll: { interval_ms: 300, max_interval_ms: 2000 }`,
      `watch:`,
      `  - path: ./inbox`,
      `    template_id: ${template.id}`,
      `    output: ./results`,
      `    on_success: move`,
      `    processed_dir: ./processed`,
      `    failed_dir: ./failed`,
      `    stable_ms: 500`,
      `log_level: warn`,
      ``,
    ].join('\n'),
  );
  await cp(samples, join(work, 'inbox'), { recursive: true });
  const dropped = await readdir(join(work, 'inbox'));
  console.log(`Dropped ${dropped.length} sample documents into ${join(work, 'inbox')}`);

  const log = createLogger('warn');
  const syncClient = createNodeClient({ baseUrl: emulator.url, apiKey, logger: log });
  const daemon = await startDaemon(loadConfig(config), syncClient, log);
  const started = Date.now();
  while (!(
    daemon.pipeline.idle() &&
    daemon.db.fileCounts.counts().archived + daemon.db.fileCounts.counts().failed >= dropped.length
  )) {
    if (Date.now() - started > 60_000) throw new Error('the demo did not finish within 60 s');
    await delay(100);
  }
  const counts = daemon.db.fileCounts.counts();
  await daemon.stop();

  console.log(
    `\nProcessed ${counts.archived} of ${dropped.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s (${counts.failed} failed).\n`,
  );
  const results = (await readdir(join(work, 'results'))).filter((f) => f.endsWith('.json')).sort();
  for (const file of results) {
    const { document } = JSON.parse(await readFile(join(work, 'results', file), 'utf8')) as {
      document: {
        document_name: string;
        General_fields: Record<string, { value: unknown; confidence: number }>;
        Line_fields: Record<string, unknown[]>;
      };
    };
    const g = document.General_fields;
    const lines = Object.values(document.Line_fields)[0]?.length ?? 0;
    console.log(
      `  ${document.document_name.padEnd(26)} ${String(g['Invoice number']?.value).padEnd(14)} ${String(g['Invoice date']?.value).padEnd(11)} total ${String(g.Total?.value).padStart(8)}  ${lines} line item(s)`,
    );
  }
  console.log(`\nResults (JSON, and CSV for fields and line items): ${join(work, 'results')}`);
  console.log(`Originals moved to:                                ${join(work, 'processed')}`);
  console.log(`State DB:                                          ${join(work, 'state')}`);
  console.log(
    `See it with:  bash scripts/run.sh node daemon/src/commands/docex-sync.ts status --config ${config}`,
  );
} finally {
  await emulator.stop();
}
