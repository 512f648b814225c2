/** A world with review rules (the watch's own and one route per rule), and what its tests share. */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { filesUnder, makeWorld } from './helpers.ts';

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
