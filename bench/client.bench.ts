/**
 * The client against a local server (bench/server.ts, a child process), each case in a fresh child
 * process of its own so that its memory is measured from a clean start:
 *
 * - upload of a 1 GB file from a path: MB/s and peak RSS increase, against a naive upload of a
 *   256 MB file (readFile + Blob + FormData + fetch) measured in the same run;
 * - download of 1 GB with fetchFile + saveBinary: MB/s and peak RSS increase;
 * - small JSON requests (fetch_folder): requests/s of client.call against raw got, one at a time and
 *   8 at a time.
 *
 * No timing is asserted anywhere; this prints figures.
 */
import { fork } from 'node:child_process';
import { open, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import got from 'got';
import { createNodeClient, saveBinary } from '../shared/src/node/index.ts';
import type { BenchRow } from './run.ts';

const MB = 1024 * 1024;
const KEY = 'bench-api-key-0123456789';
const CLIENT_UPLOAD_MB = 1024;
const NAIVE_UPLOAD_MB = 256;
const DOWNLOAD_MB = 1024;
const REQUESTS = 3000;
const WARMUP = 300;

interface CaseResult {
  seconds: number;
  bytes?: number;
  rssMb?: number;
  requests?: number;
}

/** Peak RSS over the start, sampled every 10 ms. */
function rssPeak() {
  const start = process.memoryUsage().rss;
  let peak = start;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  return () => {
    clearInterval(timer);
    return (Math.max(peak, process.memoryUsage().rss) - start) / MB;
  };
}

async function sparseFile(path: string, mb: number) {
  const fh = await open(path, 'w');
  await fh.truncate(mb * MB);
  await fh.close();
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await fn();
  return [value, (performance.now() - started) / 1000];
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

const CASES: Record<string, (url: string, dir: string) => Promise<CaseResult>> = {
  async 'upload-client'(url, dir) {
    const path = join(dir, 'client.pdf');
    await sparseFile(path, CLIENT_UPLOAD_MB);
    const client = createNodeClient({ baseUrl: url, apiKey: KEY });
    const stop = rssPeak();
    const [result, seconds] = await timed(() => client.uploadFile({ files: [{ path }] }));
    const rssMb = stop();
    await rm(path);
    return { seconds, rssMb, bytes: (result.raw as { bytes: number }).bytes };
  },

  async 'upload-naive'(url, dir) {
    const path = join(dir, 'naive.pdf');
    await sparseFile(path, NAIVE_UPLOAD_MB);
    const stop = rssPeak();
    const [answer, seconds] = await timed(async () => {
      const form = new FormData();
      form.append('files', new Blob([await readFile(path)], { type: 'application/pdf' }), 'naive.pdf');
      const res = await fetch(`${url}/v1/upload_file/`, {
        method: 'POST',
        body: form,
        headers: { authorization: `Bearer ${KEY}` },
      });
      return (await res.json()) as { bytes: number };
    });
    const rssMb = stop();
    await rm(path);
    return { seconds, rssMb, bytes: answer.bytes };
  },

  async 'download-client'(url, dir) {
    const client = createNodeClient({ baseUrl: url, apiKey: KEY });
    const path = join(dir, 'download.bin');
    const stop = rssPeak();
    const [bytes, seconds] = await timed(async () =>
      saveBinary(await client.fetchFile({ document_id: DOWNLOAD_MB }), path),
    );
    const rssMb = stop();
    await rm(path);
    return { seconds, rssMb, bytes };
  },

  async 'requests-client-1'(url) {
    return requests(url, 1, 'client');
  },
  async 'requests-got-1'(url) {
    return requests(url, 1, 'got');
  },
  async 'requests-client-8'(url) {
    return requests(url, 8, 'client');
  },
  async 'requests-got-8'(url) {
    return requests(url, 8, 'got');
  },
};

async function requests(url: string, workers: number, via: 'client' | 'got'): Promise<CaseResult> {
  const client = createNodeClient({ baseUrl: url, apiKey: KEY, concurrency: workers });
  const one =
    via === 'client'
      ? () => client.call('fetch_folder', { folder_id: 1 })
      : () =>
          got(`${url}/v1/fetch_folder/`, {
            searchParams: { folder_id: 1 },
            headers: { authorization: `Bearer ${KEY}`, accept: 'application/json' },
            retry: { limit: 0 },
          }).json();
  await hammer(WARMUP, workers, one);
  const [, seconds] = await timed(() => hammer(REQUESTS, workers, one));
  return { seconds, requests: REQUESTS };
}

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

export default async function clientBench(): Promise<BenchRow[]> {
  const server = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], { execArgv: [] });
  const port = await new Promise<number>((resolve) => server.once('message', (m) => resolve(m as number)));
  const url = `http://127.0.0.1:${port}`;
  const dir = tmpdir();
  const r: Record<string, CaseResult> = {};
  try {
    for (const name of Object.keys(CASES)) r[name] = await inChild(name, url, dir);
  } finally {
    server.kill();
  }
  const mbps = (c: CaseResult) => c.bytes! / MB / c.seconds;
  const rps = (c: CaseResult) => c.requests! / c.seconds;
  const up = r['upload-client']!;
  const naive = r['upload-naive']!;
  const down = r['download-client']!;
  const rows: BenchRow[] = [
    { measure: `upload ${CLIENT_UPLOAD_MB} MB from a path (client)`, value: mbps(up), unit: 'MB/s' },
    { measure: '  peak RSS increase', value: up.rssMb!, unit: 'MB' },
    {
      measure: `upload ${NAIVE_UPLOAD_MB} MB naive (readFile + Blob + fetch)`,
      value: mbps(naive),
      unit: 'MB/s',
    },
    { measure: '  peak RSS increase', value: naive.rssMb!, unit: 'MB' },
    { measure: 'upload throughput, client / naive', value: mbps(up) / mbps(naive), unit: 'x' },
    {
      measure: 'peak RSS per uploaded MB, naive / client',
      value: naive.rssMb! / NAIVE_UPLOAD_MB / (up.rssMb! / CLIENT_UPLOAD_MB),
      unit: 'x',
      note: 'client uploads 4x more bytes',
    },
    {
      measure: `download ${DOWNLOAD_MB} MB to disk (fetchFile + saveBinary)`,
      value: mbps(down),
      unit: 'MB/s',
    },
    {
      measure: '  peak RSS increase',
      value: down.rssMb!,
      unit: 'MB',
      note: 'V8 frees socket buffers in 64 MB steps',
    },
  ];
  for (const workers of [1, 8]) {
    const c = r[`requests-client-${workers}`]!;
    const g = r[`requests-got-${workers}`]!;
    rows.push(
      { measure: `fetch_folder, ${workers} in flight: client.call`, value: rps(c), unit: 'req/s' },
      { measure: `fetch_folder, ${workers} in flight: raw got`, value: rps(g), unit: 'req/s' },
      { measure: `  client.call / raw got`, value: rps(c) / rps(g), unit: 'x' },
      ...(workers === 1
        ? [{ measure: '  added latency per call', value: (1 / rps(c) - 1 / rps(g)) * 1e6, unit: 'µs' }]
        : []),
    );
  }
  return rows;
}

const caseName = process.env.DOCEX_BENCH_CASE;
if (caseName && process.send) {
  const result = await CASES[caseName]!(process.env.DOCEX_BENCH_URL!, process.env.DOCEX_BENCH_DIR!);
  process.send(result, () => process.exit(0));
}
