/**
 * The send-rate limiter: its invariant under a simulated clock with random send delays, and the
 * limit as the emulator counts it (sliding one-second window of arrivals), through a proxy that adds
 * latency jitter on the way in, with uploads, new connections and a busy event loop; with the
 * emulator's own limit set to exactly the configured rate, no request gets a 429.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { jitterProxy } from '../support/jitter-proxy.ts';
import { startEmulator, DEFAULT_COMPANIES, type Emulator } from '../../emulator/index.ts';
import { SendRateLimiter, type SendTicket } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { simulatedClock } from '../support/simulated-clock.ts';
import { maxInWindow } from '../support/windows.ts';

describe('SendRateLimiter (simulated clock)', () => {
  test('spaces requests evenly: one every (window + margin) / limit', async () => {
    const clock = simulatedClock();
    const limiter = new SendRateLimiter({ limit: 10, windowMs: 1000, marginMs: 50, ...clock });
    const admitted: number[] = [];
    const all = Promise.all(
      Array.from({ length: 25 }, async () => {
        const ticket = await limiter.acquire();
        admitted.push(clock.now());
        ticket.sent();
      }),
    );
    await clock.drain();
    await all;
    const gaps = admitted.slice(1).map((t, i) => t - admitted[i]!);
    expect(Math.min(...gaps)).toBeCloseTo(105, 6);
    expect(maxInWindow(admitted, 1000)).toBe(10);
  });

  test('counts at the moment of sending: random send delays never put more than `limit` in a window', async () => {
    // Each request reaches the wire 0-400 ms after it was admitted (a slow connect, a file opening,
    // a busy event loop); some never do (refused). Concurrency 6.
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const clock = simulatedClock();
    const limiter = new SendRateLimiter({ limit: 5, windowMs: 1000, marginMs: 0, ...clock });
    const sentAt: number[] = [];
    let next = 0;
    const worker = async () => {
      while (next++ < 150) {
        const ticket: SendTicket = await limiter.acquire();
        await clock.sleep(random() * 400);
        if (random() < 0.1) ticket.cancel();
        else {
          ticket.sent();
          sentAt.push(clock.now());
        }
        await clock.sleep(random() * 50);
      }
    };
    const all = Promise.all(Array.from({ length: 6 }, worker));
    await clock.drain();
    await all;
    expect(sentAt.length).toBeGreaterThan(120);
    expect(maxInWindow(sentAt, 1000)).toBeLessThanOrEqual(5);
    // A limiter counting at admission (p-queue's interval) lets these delays bunch sends together:
    // the same admissions, counted at admission time, say nothing about the sends.
  });

  test('the node client spaces by (window + rateMarginMs) / intervalCap, 50 ms margin by default', () => {
    const base = { baseUrl: 'http://127.0.0.1:1', apiKey: 'k', intervalCap: 10 };
    expect(createNodeClient(base).transport.limiter!.spanMs).toBe(1050);
    expect(createNodeClient({ ...base, rateMarginMs: 200 }).transport.limiter!.spanMs).toBe(1200);
    expect(createNodeClient({ ...base, rateMarginMs: 0 }).transport.limiter!.spacingMs).toBe(100);
  });

  test('an abort while waiting rejects without taking a place', async () => {
    const clock = simulatedClock();
    const limiter = new SendRateLimiter({ limit: 1, windowMs: 1000, marginMs: 0, ...clock });
    (await limiter.acquire()).sent();
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal, 'fetch_folder');
    controller.abort();
    await expect(waiting).rejects.toThrow('fetch_folder: aborted');
    expect(limiter.delayMs(clock.now())).toBeCloseTo(1000, 6);
  });
});

describe('at the server: the emulator limited to exactly the configured rate', () => {
  let emu: Emulator;
  let proxy: Awaited<ReturnType<typeof jitterProxy>>;
  let dir: string;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0, taskDelayMs: 20 });
    proxy = await jitterProxy(new URL(emu.url), 40);
    dir = await mkdtemp(join(tmpdir(), 'docex-rate-'));
  });
  afterAll(async () => {
    await proxy?.close();
    await emu?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('reads, uploads and new connections, 40 ms of wire jitter, a busy event loop, a 100 ms margin: never above the rate, no 429', async () => {
    const rate = 12;
    emu.resetStats();
    emu.faults.set({ rateLimit: { perSecond: rate, retryAfterSeconds: 1 }, latencyMs: [0, 60] });
    const client = createNodeClient({
      baseUrl: proxy.url,
      apiKey: DEFAULT_COMPANIES[0]!.apiKey,
      concurrency: 8,
      intervalCap: rate,
      intervalMs: 1000,
      // The margin covers the path's jitter: the proxy's 40 ms plus up to 30 ms more when the busy
      // loop below (same process as proxy and emulator) holds a forwarded chunk back.
      rateMarginMs: 100,
      retry: { maxRetries: 0 }, // a 429 would fail the call instead of hiding behind a retry
    });
    const paths = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const path = join(dir, `scan-${i}.pdf`);
        await writeFile(path, Buffer.alloc(200_000 + i * 50_000, i));
        return path;
      }),
    );
    // The event loop is blocked for 30 ms every 90 ms, as a daemon hashing files would.
    const busy = setInterval(() => {
      const until = performance.now() + 30;
      while (performance.now() < until);
    }, 90);
    const calls: Array<Promise<unknown>> = [];
    try {
      for (let i = 0; i < 60; i++) {
        if (i % 10 === 3) calls.push(client.uploadFile({ files: [{ path: paths[i % paths.length]! }] }));
        else if (i % 2 === 0) calls.push(client.fetchAllFolders());
        else calls.push(client.checkApiKey());
      }
      const results = await Promise.allSettled(calls);
      const failed = results.filter((r) => r.status === 'rejected');
      expect(failed.map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    } finally {
      clearInterval(busy);
      emu.faults.clear();
    }
    const stats = emu.stats();
    expect(stats.totalRequests).toBe(60);
    expect(stats.maxRequestsInOneSecond).toBeLessThanOrEqual(rate);
    // That the limiter lets the whole rate through (spaced, not starved) is proven on a simulated
    // clock above; counted here it would time the machine: at a load of 20 it sent 8 in a second.
  }, 30_000);
});
