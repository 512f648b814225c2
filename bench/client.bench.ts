/**
 * The client against its practical limits, each figure next to its baseline measured in the same
 * run, pairs interleaved (baseline and client alternate, the order flipping every repetition), each
 * run in a fresh child process, min and median printed:
 *
 * - small JSON requests (fetch_folder), 1 and 4 in flight: client CPU per request of `client.call`
 *   against a plain `fetch` loop (undici, Node's own HTTP client). Goal: at most 1.5x.
 * - big transfers from and to disk (DOCEX_BENCH_MB, default 1024 MiB; 0 skips them): upload of a file from a path
 *   and download with fetchFile + saveBinary, against curl doing the same (when curl is installed):
 *   throughput, and peak RSS (the process's high-water mark, VmHWM) next to its RSS before the
 *   transfer (what loading the code costs). Goal: peak under 120 MB.
 *
 * The server is a child process of its own (bench/server.ts). No timing is asserted anywhere.
 */
import { execFile, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createNodeClient, saveBinary } from '@docex/shared/node';
import type { BenchRow } from './run.ts';

const MB = 1024 * 1024;
const KEY = 'bench-api-key-0123456789';
const TRANSFER_MB = Number(process.env.DOCEX_BENCH_MB ?? 1024);
const REQUESTS = Number(process.env.DOCEX_BENCH_REQUESTS ?? 2000);
const WARMUP = 300;
const REQUEST_REPS = Number(process.env.DOCEX_BENCH_REPS ?? 5);
const TRANSFER_REPS = 2;
const CPU_GOAL = 1.5;
const RSS_GOAL_MB = 120;

interface CaseResult {
  seconds: number;
  /** CPU time (user + system) of the measured part, in µs. */
  cpuUs?: number;
  requests?: number;
  bytes?: number;
  /** Peak resident memory of the process (VmHWM), MB. */
  peakRssMb?: number;
  /** Resident memory before the measured part, MB. */
  startRssMb?: number;
}

/** The process's peak resident set so far (Linux), MB; RSS now elsewhere. */
function peakRssMb(): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) / 1024;
  } catch {
    /* not Linux */
  }
  return process.memoryUsage().rss / MB;
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
  const startRssMb = process.memoryUsage().rss / MB;
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await fn();
  const used = process.cpuUsage(cpu);
  return {
    ...result,
    seconds: (performance.now() - started) / 1000,
    cpuUs: used.user + used.system,
    startRssMb,
    peakRssMb: peakRssMb(),
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

  async 'upload-client'(url, dir) {
    const path = join(dir, 'upload.pdf');
    const client = createNodeClient({ baseUrl: url, apiKey: KEY });
    return measured(async () => {
      const result = await client.uploadFile({ files: [{ path }] });
      return { bytes: (result.raw as { bytes: number }).bytes };
    });
  },

  async 'download-client'(url, dir) {
    const client = createNodeClient({ baseUrl: url, apiKey: KEY });
    const path = join(dir, `download-${process.pid}.bin`);
    const result = await measured(async () => ({
      bytes: await saveBinary(await client.fetchFile({ document_id: TRANSFER_MB }), path),
    }));
    await rm(path);
    return result;
  },
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

/** curl through /usr/bin/time, which reports its peak RSS (KB) on stderr. */
async function curl(args: string[]): Promise<CaseResult | undefined> {
  try {
    const started = performance.now();
    const { stderr } = await run('/usr/bin/time', [
      '-f',
      'MAXRSS %M',
      'curl',
      '-sS',
      '-o',
      '/dev/null',
      ...args,
    ]);
    const seconds = (performance.now() - started) / 1000;
    const kb = Number(/MAXRSS (\d+)/.exec(stderr)?.[1]);
    return { seconds, peakRssMb: kb / 1024, bytes: TRANSFER_MB * MB };
  } catch {
    return undefined; // curl or /usr/bin/time missing
  }
}

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
    for (let rep = 0; rep < (TRANSFER_MB > 0 ? TRANSFER_REPS : 0); rep++) {
      record('upload-client', await inChild('upload-client', url, dir));
      record(
        'upload-curl',
        await curl(['-F', `files=@${uploadPath};type=application/pdf`, `${url}/v1/upload_file/`]),
      );
      record('download-client', await inChild('download-client', url, dir));
      record('download-curl', await curl([`${url}/v1/fetch_file/?document_id=${TRANSFER_MB}`]));
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
        measure: `  client.call / plain fetch (medians)`,
        value: median(clientCpu) / median(baseCpu),
        unit: 'x',
        note: `mins: ${(Math.min(...clientCpu) / Math.min(...baseCpu)).toFixed(2)}x; goal <= ${CPU_GOAL}x`,
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
    const c = results[clientName]!;
    const k = results[curlName];
    const mbps = (r: CaseResult) => r.bytes! / MB / r.seconds;
    rows.push(
      {
        measure: `${what} ${TRANSFER_MB} MiB: client throughput`,
        value: median(c.map(mbps)),
        unit: 'MB/s',
        note: k ? `curl ${median(k.map(mbps)).toFixed(0)} MB/s` : 'curl not installed',
      },
      {
        measure: `  client peak RSS`,
        value: median(c.map((r) => r.peakRssMb!)),
        unit: 'MB',
        note: `${spread(c.map((r) => r.peakRssMb!))}; ${median(c.map((r) => r.startRssMb!)).toFixed(0)} MB before the transfer; goal < ${RSS_GOAL_MB} MB`,
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
    transfer('upload from a path', 'upload-client', 'upload-curl');
    transfer('download to disk (fetchFile + saveBinary)', 'download-client', 'download-curl');
  }
  return rows;
}

const caseName = process.env.DOCEX_BENCH_CASE;
if (caseName && process.send) {
  const result = await CASES[caseName]!(process.env.DOCEX_BENCH_URL!, process.env.DOCEX_BENCH_DIR!);
  process.send(result, () => process.exit(0));
}
