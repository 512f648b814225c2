/** A world with review rules (the watch's own and one route per rule), and what its tests share. */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createNodeClient } from '@docex/shared/node';
import { parseCsv } from '../../daemon/src/outputs/results.ts';
import { filesUnder, makeWorld, SECRET, type World } from './helpers.ts';

/** Every file below `dir`, relative to it, '/'-separated and sorted (helpers.ts, filesUnder). */
export const tree = filesUnder;

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
/** The emulator's score of a text without "Fraud: high" (emulator/extract.ts, fraudOf). */
const scoreOf = (text: string) =>
  Math.round((parseInt(sha(text).slice(0, 8), 16) / 0xffffffff) * 0.6 * 1000) / 1000;
/** An invoice (number, total 10,00, two lines summing to it) whose hash gives a LOW_RISK verdict. */
export function cleanInvoice(n: string, extra = ''): string {
  for (let i = 0; ; i++) {
    const text = `Invoice number: ${n}\nTotal: 10,00\nWidget | 4,00\nGadget | 6,00\n${extra}Ref: ${i}\n`;
    if (scoreOf(text) < 0.4) return text;
  }
}

/** A webhook receiver on a free loopback port. */
export async function receiver() {
  const received: Array<{ event: string; data: Record<string, unknown> }> = [];
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      received.push(JSON.parse(raw) as { event: string; data: Record<string, unknown> });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The world's config with review rules: the watch's own, and one route per rule with its own. */
export async function reviewWorld(options: { notifyUrl?: string; extra?: string } = {}) {
  const w = await makeWorld();
  const t = w.templateId;
  const route = (name: string, review: string) =>
    `      - { match: ${name}, template_id: ${t}, review: ${review} }`;
  const yaml = (await readFile(w.configFile, 'utf8')).replace(
    '    rescan_interval_ms: 1000\n',
    [
      '    rescan_interval_ms: 1000',
      '    recursive: true',
      '    review_dir: ./review',
      '    review: { min_confidence: 0.8 }',
      '    routes:',
      route('required', '{ required_fields: [Invoice number] }'),
      route('verdict', '{ fraud: { not_clean: true } }'),
      route('score', '{ fraud: { max_score: 0.9 } }'),
      route('lines', '{ line_total: { line_field: Amount, total_field: Total } }'),
      route('none', '{}'),
      '',
    ].join('\n'),
  );
  await writeFile(
    w.configFile,
    yaml +
      (options.notifyUrl
        ? `notify: { webhooks: [{ url: "${options.notifyUrl}", events: [needs_review, result_written] }], retry_base_ms: 10 }\n`
        : '') +
      (options.extra ?? ''),
  );
  return w;
}

/**
 * The example's watch, shrunk to what the scenario needs: loose scans at the top go with the
 * watch's template, `ACME GmbH/**` by its route; names from the data; its review rules; retention;
 * the status page on `port` (0: a free one). The template gets a Supplier field (the emulator reads
 * `Supplier: ...` lines).
 */
export async function backOffice(port = 0): Promise<World> {
  const w = await makeWorld();
  const client = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
  await client.createField({
    template_id: w.templateId,
    type: 'General fields',
    name: 'Supplier',
    format: 'text',
  });
  const yaml = (await readFile(w.configFile, 'utf8')).replace(
    '    rescan_interval_ms: 1000\n',
    [
      '    rescan_interval_ms: 1000',
      '    recursive: true',
      '    routes:',
      `      - { match: 'ACME GmbH', template_id: ${w.templateId}, metadata: '{"supplier":"ACME"}' }`,
      '    formats: [json, csv]',
      '    daily_csv: true',
      "    archive_name: '{yyyy}/{MM}/{field:Supplier|no supplier}/{field:Invoice number}{ext}'",
      "    result_name: '{field:Supplier}/{field:Invoice number}'",
      '    name_missing: unknown',
      '    review_dir: ./to-review',
      '    review:',
      '      min_confidence: 0.8',
      '      required_fields: [Supplier, Invoice number, Total]',
      '      fraud: { max_score: 0.7 }',
      '    retention: { processed_days: 400, failed_days: 60, results_days: 90 }',
      '',
    ].join('\n'),
  );
  await writeFile(w.configFile, `${yaml}http: { port: ${port} }\n`);
  return w;
}

/** An invoice of ACME GmbH without a Total (confidence 0.1 < 0.8): held for review. */
export const heldInvoice = (lines = 'Widget | 4,00\nGadget | 6,00\n') =>
  `Supplier: ACME GmbH\nInvoice number: R-1001\n${lines}`;

export async function drop(w: World, rel: string, text: string) {
  const path = join(w.dir, 'inbox', rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, text);
  return path;
}

/** Every file below `dir` ending in `suffix`, read as JSON, by its path. */
export async function jsonFiles<T>(dir: string, suffix: string): Promise<Map<string, T>> {
  const found = new Map<string, T>();
  for (const rel of (await tree(dir)).filter((f) => f.endsWith(suffix)))
    found.set(join(dir, rel), JSON.parse(await readFile(join(dir, rel), 'utf8')) as T);
  return found;
}

/** A CSV's rows as objects by header (standard dialect). */
export async function csvRecords(path: string): Promise<Array<Record<string, string>>> {
  const [header = [], ...rows] = parseCsv(await readFile(path, 'utf8'), ',');
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i] ?? ''])));
}
