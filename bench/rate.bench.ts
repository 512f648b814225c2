/**
 * The rate limiter's safety margin, measured: the gap between the moment the limiter counts a
 * request as sent (its ticket's `sent()`, when the socket is connected or handed over from the pool)
 * and the request's arrival at the server, per request, under load:
 *
 * - `loopback`: reads only, straight to the server;
 * - `load`: reads and uploads of 0.2-0.45 MB files (a file opened and sized per upload), pooled
 *   connections closed after 50 ms idle (so many requests open a new one), and the client's event
 *   loop blocked 30 ms out of every 90 (a daemon hashing files);
 * - `load + 40 ms jitter`: the same through a TCP proxy that delays each chunk by a random 0-40 ms
 *   (test/support/jitter-proxy.ts, the one the rate-limit test uses).
 *
 * The margin has to cover the spread of that gap (max - min): requests the limiter spaced a window
 * apart then arrive at most that much closer together. Also printed: the most arrivals the server saw
 * in any sliding window with the default margin. Server and client are separate processes; times are
 * `performance.timeOrigin + performance.now()` on one machine. Nothing is asserted.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_RATE_MARGIN_MS } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { jitterProxy } from '../test/support/jitter-proxy.ts';
import type { BenchRow } from './run.ts';
import { maxInWindow } from '../test/support/windows.ts';

const KEY = 'bench-api-key-0123456789';
const RATE = Number(process.env.DOCEX_BENCH_RATE ?? 20);
const REQUESTS = Number(process.env.DOCEX_BENCH_RATE_REQUESTS ?? 160);
const REPS = Number(process.env.DOCEX_BENCH_RATE_REPS ?? 2);
const WINDOW_MS = 1000;

type Scenario = 'loopback' | 'load' | 'load + 40 ms jitter';
const SCENARIOS: Scenario[] = ['loopback', 'load', 'load + 40 ms jitter'];

interface Sample {
  /** Arrival minus the limiter's send time, ms, one per request. */
  gaps: number[];
  /** Arrival minus admission (the limiter letting the request go), ms. */
  fromAdmission: number[];
  /** The most arrivals in any sliding window of WINDOW_MS. */
  maxInWindow: number;
}

const now = () => performance.timeOrigin + performance.now();

/** In the client's child process: REQUESTS calls through the limiter, their send times by id. */
async function clientRun(url: string, scenario: Scenario, dir: string) {
  const client = createNodeClient({
    baseUrl: url,
    apiKey: KEY,
    concurrency: 8,
    intervalCap: RATE,
    intervalMs: WINDOW_MS,
    ...(scenario === 'loopback' ? {} : { keepAliveIdleMs: 50 }),
  });
  const limiter = client.transport.limiter!;
  const ids = new AsyncLocalStorage<string>();
  const sent = new Map<string, { admitted: number; sent?: number }>();
  const acquire = limiter.acquire.bind(limiter);
  // The ticket's sent() runs in the request's own async context (the socket's 'connect' or the
  // request's 'socket' event), so the call's id is known there.
  limiter.acquire = async (signal, operation) => {
    const ticket = await acquire(signal, operation);
    const id = ids.getStore()!;
    sent.set(id, { admitted: now() });
    return {
      sent: () => {
        const entry = sent.get(id)!;
        entry.sent ??= now();
        ticket.sent();
      },
      cancel: () => ticket.cancel(),
    };
  };
  const files = await Promise.all(
    Array.from({ length: 6 }, async (_, i) => {
      const path = join(dir, `scan-${process.pid}-${i}.pdf`);
      await writeFile(path, Buffer.alloc(200_000 + i * 50_000, i));
      return path;
    }),
  );
  const busy =
    scenario === 'loopback'
      ? undefined
      : setInterval(() => {
          const until = performance.now() + 30;
          while (performance.now() < until);
        }, 90);
  try {
    await Promise.all(
      Array.from({ length: REQUESTS }, (_, i) =>
        ids.run(String(i + 1), () =>
          scenario !== 'loopback' && i % 3 === 1
            ? client.uploadFile({ files: [{ path: files[i % files.length]! }], folder_id: i + 1 })
            : client.fetchFolder({ folder_id: i + 1 }),
        ),
      ),
    );
  } finally {
    clearInterval(busy);
    await Promise.all(files.map((f) => rm(f, { force: true })));
  }
  return Object.fromEntries(sent);
}

function inChild(
  url: string,
  scenario: Scenario,
  dir: string,
): Promise<Record<string, { admitted: number; sent?: number }>> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, DOCEX_BENCH_RATE_CASE: scenario, DOCEX_BENCH_URL: url, DOCEX_BENCH_DIR: dir },
      execArgv: [],
    });
    child.once('message', (m) => resolve(m as Record<string, { admitted: number; sent?: number }>));
    child.once('error', reject);
    child.once(
      'exit',
      (code) => code !== 0 && reject(new Error(`rate bench ${scenario} exited with ${code}`)),
    );
  });
}

const quantile = (values: number[], q: number) => {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

export default async function rateBench(): Promise<BenchRow[]> {
  const server = fork(fileURLToPath(new URL('./server.ts', import.meta.url)), [], { execArgv: [] });
  const port = await new Promise<number>((resolve) => server.once('message', (m) => resolve(m as number)));
  const serverUrl = `http://127.0.0.1:${port}`;
  const proxy = await jitterProxy(new URL(serverUrl), 40);
  const dir = await mkdtemp(join(tmpdir(), 'docex-rate-bench-'));
  const samples: Record<string, Sample[]> = {};
  try {
    for (let rep = 0; rep < REPS; rep++) {
      for (const scenario of rep % 2 ? [...SCENARIOS].reverse() : SCENARIOS) {
        const stamps = await inChild(scenario.includes('jitter') ? proxy.url : serverUrl, scenario, dir);
        const arrivals = (await (await fetch(`${serverUrl}/arrivals`)).json()) as Array<[string, number]>;
        const gaps: number[] = [];
        const fromAdmission: number[] = [];
        for (const [id, at] of arrivals) {
          const stamp = stamps[id];
          if (stamp?.sent === undefined)
            throw new Error(`request ${id} arrived but was never counted as sent`);
          gaps.push(at - stamp.sent);
          fromAdmission.push(at - stamp.admitted);
        }
        if (gaps.length !== REQUESTS) throw new Error(`${scenario}: ${gaps.length} of ${REQUESTS} arrived`);
        (samples[scenario] ??= []).push({
          gaps,
          fromAdmission,
          maxInWindow: maxInWindow(
            arrivals.map(([, at]) => at),
            WINDOW_MS,
          ),
        });
      }
    }
  } finally {
    await proxy.close();
    server.kill();
    await rm(dir, { recursive: true, force: true });
  }

  const rows: BenchRow[] = [];
  const ms = (v: number) => `${v.toFixed(1)} ms`;
  for (const scenario of SCENARIOS) {
    const runs = samples[scenario]!;
    const gaps = runs.flatMap((r) => r.gaps);
    const admission = runs.flatMap((r) => r.fromAdmission);
    const spreads = runs.map((r) => Math.max(...r.gaps) - Math.min(...r.gaps));
    rows.push(
      {
        measure: `${scenario}: send -> arrival, p50`,
        value: quantile(gaps, 0.5),
        unit: 'ms',
        note: `p99 ${ms(quantile(gaps, 0.99))}, max ${ms(Math.max(...gaps))}, min ${ms(Math.min(...gaps))} (${gaps.length} requests, ${runs.length} runs)`,
      },
      {
        measure: `  spread (max - min) per run: the margin must cover it`,
        value: Math.max(...spreads),
        unit: 'ms',
        note: `runs: ${spreads.map(ms).join(', ')}; default margin ${DEFAULT_RATE_MARGIN_MS} ms`,
      },
      {
        measure: `  admission -> arrival, p50`,
        value: quantile(admission, 0.5),
        unit: 'ms',
        note: `p99 ${ms(quantile(admission, 0.99))}, max ${ms(Math.max(...admission))}`,
      },
      {
        measure: `  most arrivals in any ${WINDOW_MS} ms at the server`,
        value: Math.max(...runs.map((r) => r.maxInWindow)),
        unit: 'req',
        note: `limit ${RATE}; runs: ${runs.map((r) => r.maxInWindow).join(', ')}`,
      },
    );
  }
  return rows;
}

const scenario = process.env.DOCEX_BENCH_RATE_CASE as Scenario | undefined;
if (scenario && process.send) {
  const result = await clientRun(process.env.DOCEX_BENCH_URL!, scenario, process.env.DOCEX_BENCH_DIR!);
  process.send(result, () => process.exit(0));
}
