/**
 * `npm run bench`: runs the default export of every bench/*.bench.ts (or of the ones whose file name
 * contains an argument: `node bench/run.ts client`) and prints one table per module.
 * A bench module's default export is `() => Promise<BenchRow[]>`.
 */
import { readdir } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';

export interface BenchRow {
  measure: string;
  value: number;
  unit: string;
  note?: string;
}

const format = (v: number) =>
  !Number.isFinite(v)
    ? String(v)
    : Math.abs(v) >= 100
      ? v.toFixed(0)
      : Math.abs(v) >= 10
        ? v.toFixed(1)
        : v.toFixed(2);

function table(rows: BenchRow[]): string {
  const cells = rows.map((r) => [r.measure, format(r.value), r.unit, r.note ?? '']);
  const widths = [0, 1, 2, 3].map((i) => Math.max(...cells.map((c) => c[i]!.length), 1));
  return cells
    .map((c) =>
      [c[0]!.padEnd(widths[0]!), c[1]!.padStart(widths[1]!), c[2]!.padEnd(widths[2]!), c[3]!]
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

async function main() {
  const dir = fileURLToPath(new URL('.', import.meta.url));
  const filters = process.argv.slice(2);
  const files = (await readdir(dir))
    .filter((f) => f.endsWith('.bench.ts'))
    .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
    .sort();
  if (files.length === 0) throw new Error(`no bench/*.bench.ts matches ${filters.join(' ')}`);
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  console.log(`node ${process.version}, ${process.platform}/${process.arch}, load average ${load()}`);
  for (const file of files) {
    const started = performance.now();
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as { default: () => Promise<BenchRow[]> };
    const rows = await mod.default();
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(`\n${file} (${seconds} s, load average after: ${load()})\n${table(rows)}`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) await main();
