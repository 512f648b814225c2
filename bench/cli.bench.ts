/**
 * docex from the shell against its practical limits, pairs interleaved (the order flipping every
 * repetition), min and median printed:
 *
 * - one command (`docex folders list`, the built bundle daemon/dist/docex.js) against curl making the
 *   same request, and against `node -e 0` (what starting Node costs at all);
 * - `docex templates plan` and `apply` of a setup of DOCEX_BENCH_TEMPLATES templates (default 20)
 *   with 10 fields and 2 instructions each: wall time and the requests they make, at the default
 *   10 requests per second (docex-sync's) and with a profile that allows 1000.
 *
 * The emulator runs in this process; every docex is a child process. No timing is asserted anywhere.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startEmulator } from '../emulator/index.ts';
import type { BenchRow } from './run.ts';

const run = promisify(execFile);
const REPS = Number(process.env.DOCEX_BENCH_REPS ?? 10);
const TEMPLATES = Number(process.env.DOCEX_BENCH_TEMPLATES ?? 20);
const repo = fileURLToPath(new URL('..', import.meta.url));

const stats = (ms: number[]) => {
  const sorted = [...ms].sort((a, b) => a - b);
  return { min: sorted[0]!, median: sorted[Math.floor(sorted.length / 2)]! };
};

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

function setupYaml(templates: number): string {
  const lines = ['version: 1', 'folders:', '  - name: Bench', 'templates:'];
  for (let t = 0; t < templates; t++) {
    lines.push(`  - name: Template ${t}`, '    folder: Bench', '    number_locale: EU', '    fields:');
    for (let f = 0; f < 10; f++)
      lines.push(
        `      - { name: field ${f}, type: ${f < 7 ? 'General' : 'Line'} fields, format: text, position: ${f + 1} }`,
      );
    lines.push(
      '    instructions:',
      '      - { type: General fields, content: One }',
      '      - { type: Line fields, content: Two }',
    );
  }
  return `${lines.join('\n')}\n`;
}

export default async function bench(): Promise<BenchRow[]> {
  await run(process.execPath, ['scripts/build.ts', 'daemon'], { cwd: repo });
  const docex = join(repo, 'daemon/dist/docex.js');
  const key = 'bench-cli-key-0123456789';
  const emulator = await startEmulator({ port: 0, companies: [{ name: 'Bench', apiKey: key }] });
  const dir = await mkdtemp(join(tmpdir(), 'docex-cli-bench-'));
  const env = { ...process.env, DOCEX_BASE_URL: emulator.url, DOCEX_API_KEY: key, XDG_CONFIG_HOME: dir };
  const rows: BenchRow[] = [];
  try {
    const cases: Record<string, () => Promise<unknown>> = {
      docex: () => run(process.execPath, [docex, 'folders', 'list', '--json'], { env }),
      curl: () =>
        run('curl', ['-sf', '-H', `Authorization: Bearer ${key}`, `${emulator.url}/v1/fetch_all_folders/`]),
      node: () => run(process.execPath, ['-e', '0']),
    };
    const times: Record<string, number[]> = { docex: [], curl: [], node: [] };
    const names = Object.keys(cases);
    for (let i = 0; i < REPS; i++) {
      for (const name of i % 2 ? [...names].reverse() : names) times[name]!.push(await timed(cases[name]!));
    }
    const d = stats(times.docex!);
    const c = stats(times.curl!);
    const n = stats(times.node!);
    rows.push(
      {
        measure: 'docex folders list, min',
        value: d.min,
        unit: 'ms',
        note: `median ${d.median.toFixed(0)} ms`,
      },
      {
        measure: 'curl, same request, min',
        value: c.min,
        unit: 'ms',
        note: `median ${c.median.toFixed(0)} ms`,
      },
      { measure: 'node -e 0, min', value: n.min, unit: 'ms', note: `median ${n.median.toFixed(0)} ms` },
      { measure: 'docex / curl (min)', value: d.min / c.min, unit: 'x' },
      {
        measure: 'docex - node -e 0 (min)',
        value: d.min - n.min,
        unit: 'ms',
        note: 'loading docex and its dependencies',
      },
    );

    const file = join(dir, 'setup.yaml');
    await writeFile(file, setupYaml(TEMPLATES));
    const step = async (measure: string, args: string[]) => {
      emulator.resetStats();
      const ms = await timed(() =>
        run(process.execPath, [docex, ...args], { env, maxBuffer: 64 * 1024 * 1024 }),
      );
      rows.push({ measure, value: ms, unit: 'ms', note: `${emulator.stats().totalRequests} requests` });
    };
    const what = `${TEMPLATES} templates x 10 fields`;
    await step(`templates plan, empty account (${what})`, ['templates', 'plan', file]);
    await step(`templates apply, empty account (${what})`, ['templates', 'apply', file]);
    await step(`templates plan, nothing to change (${what})`, ['templates', 'plan', file]);
    await step(`templates export (${what})`, ['templates', 'export']);
    // The default profile keeps docex-sync's 10 requests per second; a profile may allow more.
    const config = join(dir, 'config.yaml');
    await writeFile(config, 'profiles:\n  fast: { requests_per_second: 1000, concurrency: 8 }\n');
    await step(`templates plan, nothing to change, 1000 req/s profile (${what})`, [
      'templates',
      'plan',
      file,
      '--config',
      config,
      '--profile',
      'fast',
    ]);
  } finally {
    await emulator.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return rows;
}
