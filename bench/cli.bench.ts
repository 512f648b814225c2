/**
 * docex from the shell against its practical limits, pairs interleaved (the order rotating every
 * repetition), min and median printed, each figure with its goal (issue #22) and its ratio:
 *
 * - start-up of the **installed** packages (test/e2e/pack.ts: a plain `npm pack` of cli/ and daemon/ in a
 *   clean copy, `npm install -g` into a scratch prefix): `docex --version` and
 *   `docex-sync --version` against `node -e 0` (goal <= 1.3x), and `docex folders list --json`
 *   against a node script that makes the same one `fetch` to the same server (goal <= 1.5x); the
 *   compile cache is warmed by one run of each first (the user's second start is what counts);
 * - curl making the same request, for scale;
 * - `docex templates plan` and `apply` of a setup of DOCEX_BENCH_TEMPLATES templates (default 20)
 *   with 10 fields and 2 instructions each: wall time and the requests they make, at the default
 *   10 requests per second (docex-sync's) and with a profile that allows 1000.
 *
 * The emulator runs in this process; every command is a child process. No timing is asserted
 * anywhere. On a shared machine the figures are noisy: the min is the one to compare.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startEmulator } from '../emulator/index.ts';
import { installDocexSync } from './installed.ts';
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

/** Runs every case `reps` times, interleaved, the order rotating each repetition; ms per case. */
async function interleaved(cases: Record<string, () => Promise<unknown>>, reps: number) {
  const names = Object.keys(cases);
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < reps; i++)
    for (let k = 0; k < names.length; k++) {
      const name = names[(i + k) % names.length]!;
      times[name]!.push(await timed(cases[name]!));
    }
  return Object.fromEntries(names.map((n) => [n, stats(times[n]!)]));
}

/** A figure against its baseline: both with min and median, and the ratio of the mins with the goal. */
function versus(
  measure: string,
  figure: { min: number; median: number },
  baselineName: string,
  baseline: { min: number; median: number },
  goal: number,
): BenchRow[] {
  const ratio = figure.min / baseline.min;
  return [
    { measure, value: figure.min, unit: 'ms', note: `min; median ${figure.median.toFixed(0)} ms` },
    {
      measure: `  ${baselineName}`,
      value: baseline.min,
      unit: 'ms',
      note: `min; median ${baseline.median.toFixed(0)} ms`,
    },
    {
      measure: `  ratio (min / min)`,
      value: ratio,
      unit: 'x',
      note: `goal <= ${goal}x: ${ratio <= goal ? 'met' : 'missed'} (median ratio ${(figure.median / baseline.median).toFixed(2)}x)`,
    },
  ];
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
  const docex = join(repo, 'cli/dist/docex.js');
  const key = 'bench-cli-key-0123456789';
  const emulator = await startEmulator({ port: 0, companies: [{ name: 'Bench', apiKey: key }] });
  const dir = await mkdtemp(join(tmpdir(), 'docex-cli-bench-'));
  const env = { ...process.env, DOCEX_BASE_URL: emulator.url, DOCEX_API_KEY: key, XDG_CONFIG_HOME: dir };
  const rows: BenchRow[] = [];
  try {
    const installed = installDocexSync(dir);
    // The compile cache in a folder of its own, warmed by one run of each command.
    const cacheEnv = { ...env, XDG_CACHE_HOME: join(dir, 'cache') };
    const fetchScript = join(dir, 'one-fetch.mjs');
    await writeFile(
      fetchScript,
      `const r = await fetch(process.env.DOCEX_BASE_URL + '/v1/fetch_all_folders/', { headers: { authorization: 'Bearer ' + process.env.DOCEX_API_KEY } });\nif (!r.ok) process.exit(1);\nprocess.stdout.write(JSON.stringify(await r.json(), null, 2) + '\\n');\n`,
    );
    const cases: Record<string, () => Promise<unknown>> = {
      'node -e 0': () => run(process.execPath, ['-e', '0']),
      'docex --version': () => run(installed.docex, ['--version'], { env: cacheEnv }),
      'docex-sync --version': () => run(installed.docexSync, ['--version'], { env: cacheEnv }),
      'docex --help': () => run(installed.docex, ['--help'], { env: cacheEnv }),
      'docex folders list --json': () =>
        run(installed.docex, ['folders', 'list', '--json'], { env: cacheEnv }),
      'node one-fetch script': () => run(process.execPath, [fetchScript], { env }),
      curl: () =>
        run('curl', ['-sf', '-H', `Authorization: Bearer ${key}`, `${emulator.url}/v1/fetch_all_folders/`]),
    };
    for (const warm of Object.values(cases)) await warm();
    const t = await interleaved(cases, REPS);
    rows.push(
      ...versus('installed docex --version', t['docex --version']!, 'node -e 0', t['node -e 0']!, 1.3),
      ...versus(
        'installed docex-sync --version',
        t['docex-sync --version']!,
        'node -e 0',
        t['node -e 0']!,
        1.3,
      ),
      ...versus('installed docex --help', t['docex --help']!, 'node -e 0', t['node -e 0']!, 1.3),
      ...versus(
        'installed docex folders list --json',
        t['docex folders list --json']!,
        'node script, the same one fetch',
        t['node one-fetch script']!,
        1.5,
      ),
      {
        measure: 'curl, the same request',
        value: t.curl!.min,
        unit: 'ms',
        note: `min; median ${t.curl!.median.toFixed(0)} ms`,
      },
    );

    await run(process.execPath, ['scripts/build.ts', 'docex'], { cwd: repo });
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
