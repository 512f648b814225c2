/**
 * The client against its practical limits, each figure next to its baseline measured in the same
 * run, pairs interleaved (baseline and client alternate, the order flipping every repetition), each
 * run in a fresh child process, min and median printed:
 *
 * - small JSON requests (fetch_folder), 1 and 4 in flight: client CPU per request of `client.call`
 *   against a plain `fetch` loop (undici, Node's own HTTP client). Goal: at most 1.5x.
 * - big transfers from and to disk (DOCEX_BENCH_MB, default 1024 MiB; 0 skips them) by the built
 *   docex CLI (cli/dist/docex.js, built first), as users run it: `docex tasks upload FILE` and
 *   `docex documents download-file N -o FILE`, against curl doing the same (when installed):
 *   throughput (goal: at least 0.8x curl's), and peak RSS (VmHWM, through /usr/bin/time) next to the
 *   peak of a small command (what loading the code costs). Goal: peak under 120 MB. See
 *   docs/client.md, "Memory".
 *
 * The server is a child process of its own (bench/server.ts). No timing is asserted anywhere.
 */
import { execFile, fork } from 'node:child_process';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createNodeClient } from '@docex/shared/node';
import type { BenchRow } from './run.ts';

const MB = 1024 * 1024;
const KEY = 'bench-api-key-0123456789';
const repo = fileURLToPath(new URL('..', import.meta.url));
const TRANSFER_MB = Number(process.env.DOCEX_BENCH_MB ?? 1024);
const REQUESTS = Number(process.env.DOCEX_BENCH_REQUESTS ?? 2000);
/** Calls before the measured part, so what is measured is the steady state, not V8 compiling got. */
const WARMUP = 1000;
const REQUEST_REPS = Number(process.env.DOCEX_BENCH_REPS ?? 7);
const TRANSFER_REPS = Number(process.env.DOCEX_BENCH_TRANSFER_REPS ?? 3);
const CPU_GOAL = 1.5;
const RSS_GOAL_MB = 120;
/** Upload and download throughput against curl's (issue #22). */
const TRANSFER_GOAL = 0.8;

interface CaseResult {
  seconds: number;
  /** CPU time (user + system) of the measured part, in µs. */
  cpuUs?: number;
  requests?: number;
  bytes?: number;
  /** Peak resident memory of the process (VmHWM, from /usr/bin/time), MB. */
  peakRssMb?: number;
}

async function sparseFile(path: string, mb: number) {
  const fh = await open(path, 'w');
  await fh.truncate(mb * MB);
  await fh.close();
}

/** `workers` loops sharing `total` calls of `fn`. */
async function hammer(total: number, workers: number, fn: () => Promise<unknown>) {
  let left = total;
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (left-- > 0) await fn();
    }),
  );
}

async function measured(fn: () => Promise<Omit<CaseResult, 'seconds' | 'cpuUs'>>): Promise<CaseResult> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await fn();
  const used = process.cpuUsage(cpu);
  return {
    ...result,
    seconds: (performance.now() - started) / 1000,
    cpuUs: used.user + used.system,
  };
}

function fetchFolderLoop(url: string, workers: number, via: 'client' | 'fetch') {
  const client = createNodeClient({ baseUrl: url, apiKey: KEY, concurrency: workers });
  const one =
    via === 'client'
      ? () => client.call('fetch_folder', { folder_id: 1 })
      : async () => {
          const target = new URL(`${url}/v1/fetch_folder/`);
          target.searchParams.set('folder_id', '1');
          const response = await fetch(target, {
            headers: { authorization: `Bearer ${KEY}`, accept: 'application/json' },
          });
          if (!response.ok) throw new Error(`HTTP ${response.status}`);
          return response.json();
        };
  return async () => {
    await hammer(WARMUP, workers, one);
    return measured(async () => {
      await hammer(REQUESTS, workers, one);
      return { requests: REQUESTS };
    });
  };
}

const CASES: Record<string, (url: string, dir: string) => Promise<CaseResult>> = {
  'requests-fetch-1': (url) => fetchFolderLoop(url, 1, 'fetch')(),
  'requests-client-1': (url) => fetchFolderLoop(url, 1, 'client')(),
  'requests-fetch-4': (url) => fetchFolderLoop(url, 4, 'fetch')(),
  'requests-client-4': (url) => fetchFolderLoop(url, 4, 'client')(),
};

function inChild(name: string, url: string, dir: string): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, DOCEX_BENCH_CASE: name, DOCEX_BENCH_URL: url, DOCEX_BENCH_DIR: dir },
      execArgv: [],
    });
    child.once('message', (m) => resolve(m as CaseResult));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`bench case ${name} exited with ${code}`)));
  });
}

const run = promisify(execFile);

/** A command through /usr/bin/time, which reports its peak RSS (KB) on stderr. */
async function peakOf(
  command: string,
  args: string[],
  env?: NodeJS.ProcessEnv,
): Promise<CaseResult | undefined> {
  try {
    const started = performance.now();
    const { stderr } = await run('/usr/bin/time', ['-f', 'MAXRSS %M', command, ...args], { env });
    const seconds = (performance.now() - started) / 1000;
    const kb = Number(/MAXRSS (\d+)/.exec(stderr)?.[1]);
    return { seconds, peakRssMb: kb / 1024, bytes: TRANSFER_MB * MB };
  } catch (error) {
    // /usr/bin/time missing, or the command (curl) missing: exit status 127.
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 127) return undefined;
    throw error;
  }
}

const curl = (args: string[], output = '/dev/null') => peakOf('curl', ['-sS', '-o', output, ...args]);

const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const spread = (values: number[], digits = 0) =>
  `min ${Math.min(...values).toFixed(digits)}, median ${median(values).toFixed(digits)} (${values.length} runs)`;

export default async function clientBench(): Promise<BenchRow[]> {
  const server = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], { execArgv: [] });
  const port = await new Promise<number>((resolve) => server.once('message', (m) => resolve(m as number)));
  const url = `http://127.0.0.1:${port}`;
  const dir = await mkdtemp(join(tmpdir(), 'docex-bench-'));
  const results: Record<string, CaseResult[]> = {};
  const record = (name: string, r: CaseResult | undefined) => r && (results[name] ??= []).push(r);
  try {
    for (let rep = 0; rep < REQUEST_REPS; rep++) {
      for (const workers of [1, 4]) {
        const pair = [`requests-fetch-${workers}`, `requests-client-${workers}`];
        for (const name of rep % 2 ? pair.reverse() : pair) record(name, await inChild(name, url, dir));
      }
    }
    const uploadPath = join(dir, 'upload.pdf');
    await sparseFile(uploadPath, TRANSFER_MB);
    if (TRANSFER_MB > 0) await run(process.execPath, ['scripts/build.ts', 'docex'], { cwd: repo });
    // The built docex CLI, as installed: `docex tasks upload FILE`, `docex documents download-file N -o FILE`.
    const env = { ...process.env, DOCEX_BASE_URL: url, DOCEX_API_KEY: KEY, XDG_CONFIG_HOME: dir };
    const docex = (...args: string[]) =>
      peakOf(process.execPath, [join(repo, 'cli/dist/docex.js'), ...args], env);
    const downloaded = join(dir, 'download.bin');
    const cases: Record<string, () => Promise<CaseResult | undefined>> = {
      'start-docex': () => docex('folders', 'get', '1'),
      'upload-docex': () => docex('tasks', 'upload', uploadPath),
      'upload-curl': () =>
        curl(['-F', `files=@${uploadPath};type=application/pdf`, `${url}/v1/upload_file/`]),
      'download-docex': async () => {
        const result = await docex('documents', 'download-file', String(TRANSFER_MB), '-o', downloaded);
        if ((await stat(downloaded)).size !== TRANSFER_MB * MB) throw new Error('the download is incomplete');
        await rm(downloaded);
        return result;
      },
      // To disk too, as docex does.
      'download-curl': async () => {
        const result = await curl([`${url}/v1/fetch_file/?document_id=${TRANSFER_MB}`], downloaded);
        await rm(downloaded, { force: true });
        return result;
      },
    };
    const names = Object.keys(cases);
    for (let rep = 0; rep < (TRANSFER_MB > 0 ? TRANSFER_REPS : 0); rep++) {
      for (const name of rep % 2 ? [...names].reverse() : names) record(name, await cases[name]!());
    }
    if ((await stat(uploadPath)).size !== TRANSFER_MB * MB) throw new Error('the upload file changed');
  } finally {
    server.kill();
    await rm(dir, { recursive: true, force: true });
  }

  const rows: BenchRow[] = [];
  const cpuPerRequest = (r: CaseResult) => r.cpuUs! / r.requests!;
  const rps = (r: CaseResult) => r.requests! / r.seconds;
  for (const workers of [1, 4]) {
    const base = results[`requests-fetch-${workers}`]!;
    const client = results[`requests-client-${workers}`]!;
    const baseCpu = base.map(cpuPerRequest);
    const clientCpu = client.map(cpuPerRequest);
    const pairedRatios = clientCpu.map((c, i) => c / baseCpu[i]!);
    rows.push(
      {
        measure: `fetch_folder, ${workers} in flight: CPU per request, plain fetch`,
        value: median(baseCpu),
        unit: 'µs',
        note: spread(baseCpu),
      },
      {
        measure: `fetch_folder, ${workers} in flight: CPU per request, client.call`,
        value: median(clientCpu),
        unit: 'µs',
        note: spread(clientCpu),
      },
      {
        // Each repetition's pair ran back to back under the same load: their ratio is far steadier
        // on a shared machine than the ratio of medians taken across repetitions.
        measure: `  client.call / plain fetch, paired by repetition`,
        value: median(pairedRatios),
        unit: 'x',
        note: `median; ${spread(pairedRatios, 2).replace(' runs', ' pairs')}; ratio of the mins ${(Math.min(...clientCpu) / Math.min(...baseCpu)).toFixed(2)}x; goal <= ${CPU_GOAL}x`,
      },
      {
        measure: `  requests/s, plain fetch / client.call`,
        value: median(base.map(rps)),
        unit: 'req/s',
        note: `client.call ${median(client.map(rps)).toFixed(0)} req/s (medians)`,
      },
    );
  }
  const transfer = (what: string, clientName: string, curlName: string) => {
    const c = results[clientName];
    const k = results[curlName];
    if (!c) return void rows.push({ measure: `${what}: /usr/bin/time missing`, value: NaN, unit: '' });
    const mbps = (r: CaseResult) => r.bytes! / MB / r.seconds;
    const againstCurl = (docex: number[], curl: number[]): BenchRow => {
      const ratio = median(docex) / median(curl);
      return {
        measure: `  docex / curl throughput (medians)`,
        value: ratio,
        unit: 'x',
        note: `goal >= ${TRANSFER_GOAL}x: ${ratio >= TRANSFER_GOAL ? 'met' : 'missed'}; best runs ${(Math.max(...docex) / Math.max(...curl)).toFixed(2)}x`,
      };
    };
    const start = results['start-docex'] ?? [];
    rows.push(
      {
        measure: `${what} ${TRANSFER_MB} MiB: throughput`,
        value: median(c.map(mbps)),
        unit: 'MB/s',
        note: k ? `curl ${median(k.map(mbps)).toFixed(0)} MB/s` : 'curl not installed',
      },
      ...(k ? [againstCurl(c.map(mbps), k.map(mbps))] : []),
      {
        measure: `  docex peak RSS`,
        value: median(c.map((r) => r.peakRssMb!)),
        unit: 'MB',
        note: `${spread(c.map((r) => r.peakRssMb!))}; goal < ${RSS_GOAL_MB} MB; a small command (folders get) peaks at ${median(start.map((r) => r.peakRssMb!)).toFixed(0)} MB`,
      },
      ...(k
        ? [
            {
              measure: `  curl peak RSS`,
              value: median(k.map((r) => r.peakRssMb!)),
              unit: 'MB',
              note: spread(
                k.map((r) => r.peakRssMb!),
                1,
              ),
            },
          ]
        : []),
    );
  };
  if (TRANSFER_MB > 0) {
    transfer('docex tasks upload FILE', 'upload-docex', 'upload-curl');
    transfer('docex documents download-file N -o FILE', 'download-docex', 'download-curl');
  }
  return rows;
}

const caseName = process.env.DOCEX_BENCH_CASE;
if (caseName && process.send) {
  const result = await CASES[caseName]!(process.env.DOCEX_BENCH_URL!, process.env.DOCEX_BENCH_DIR!);
  process.send(result, () => process.exit(0));
}
