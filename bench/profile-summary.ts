/**
 * `node bench/profile-summary.ts DIR [FILES]`: the CPU profiles of DIR (written by the ingest bench
 * with DOCEX_BENCH_PROFILE=DIR) as CPU per file by category, one column per profile. A native frame
 * (a syscall wrapper, a binding) and Node's own library code count in the category of the nearest
 * frame of ours or of a package above them, so an fsync called by the result writer counts as
 * result files, a socket write by the HTTP client as HTTP; Node code with no such caller (timers,
 * promise jobs, socket events) counts by its own module.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** First match wins; tested against a frame's url, then its function name. */
const OTHER = 'other JavaScript (promises, streams, events, timers, JSON)';
const CATEGORIES: Array<[string, RegExp]> = [
  ['SQLite (state DB)', /better-sqlite3|daemon\/src\/state\.ts/],
  ['answer checks (zod)', /node_modules\/zod|shared\/src\/core\/schemas/],
  [
    'HTTP client and sockets',
    /node_modules\/(got|p-queue|@sindresorhus|cacheable|undici|form-data)|shared\/src\/node\/transport|shared\/src\/core\/(client|rate-limit|retry)|node:(net|_http|http|internal\/http|internal\/deps\/undici|dns|internal\/dns)|undici/,
  ],
  ['watcher (events, walks)', /chokidar|readdirp|daemon\/src\/(watcher|walk)\.ts/],
  ['result files (CSV, JSON, fsync, rename)', /csv-stringify|daemon\/src\/(results|files)\.ts/],
  ['hashing', /node:internal\/crypto/],
  [
    'pipeline steps (scheduler, lifecycle, stats, hashing)',
    /daemon\/src\/(pipeline|lifecycle|progress|metrics)\.ts|prom-client/,
  ],
  ['logging', /pino|daemon\/src\/logging/],
  ['file system (other)', /node:internal\/fs|node:fs/],
  ['the plain loop itself (its reads, writes, moves)', /\/bench\//],
];

function categoryOf(url: string): string | undefined {
  if (!url) return undefined;
  for (const [name, re] of CATEGORIES) if (re.test(url)) return name;
  return OTHER;
}

function summarize(profile: Profile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const totals = new Map<string, number>();
  const add = (k: string, us: number) => totals.set(k, (totals.get(k) ?? 0) + us);
  // Walk from the root, carrying the category of the nearest frame with a url.
  const stack: Array<[number, string]> = [[profile.nodes[0]!.id, OTHER]];
  while (stack.length) {
    const [id, inherited] = stack.pop()!;
    const node = byId.get(id)!;
    const fn = node.callFrame.functionName;
    const { url } = node.callFrame;
    const nodeOwn = url.startsWith('node:') && !/^node:(net|_http|http|internal\/http)/.test(url);
    const own = nodeOwn && inherited !== OTHER ? inherited : (categoryOf(url) ?? inherited);
    const t = self.get(id) ?? 0;
    if (fn === '(idle)') add('(idle)', t);
    else if (fn === '(garbage collector)') add('garbage collection', t);
    else if (fn === '(program)') add('V8/libuv outside JavaScript', t);
    else add(own, t);
    for (const c of node.children ?? []) stack.push([c, own]);
  }
  return totals;
}

const dir = process.argv[2];
const files = Number(process.argv[3] ?? process.env.DOCEX_BENCH_FILES ?? 2000);
if (!dir) throw new Error('usage: node bench/profile-summary.ts DIR [FILES]');
const names = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort();
const columns = await Promise.all(
  names.map(async (n) => summarize(JSON.parse(await readFile(join(dir, n), 'utf8')) as Profile)),
);
const keys = [...new Set(columns.flatMap((c) => [...c.keys()]))].filter((k) => k !== '(idle)');
const busy = columns.map((c) => [...c].filter(([k]) => k !== '(idle)').reduce((s, [, v]) => s + v, 0));
keys.sort((a, b) => (columns[0]!.get(b) ?? 0) - (columns[0]!.get(a) ?? 0));
const ms = (us: number) => (us / 1000 / files).toFixed(2);
const width = Math.max(...keys.map((k) => k.length), 20);
console.log(`CPU ms per file (${files} files), profiled window only`);
console.log(['category'.padEnd(width), ...names.map((n) => n.split('-')[0]!.padStart(10))].join('  '));
for (const k of keys)
  console.log([k.padEnd(width), ...columns.map((c) => ms(c.get(k) ?? 0).padStart(10))].join('  '));
console.log(['total (busy)'.padEnd(width), ...busy.map((b) => ms(b).padStart(10))].join('  '));
