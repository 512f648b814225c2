/**
 * The contract suite's raw requests (test/contract/support.ts) against a live deployment: they honour
 * 429 + Retry-After (seconds and HTTP date) and repeat resets of idempotent requests, like the client.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { raw } from '../contract/support.ts';
import { KEY, localServer, type LocalServer } from '../support/client.ts';

const servers: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server that answers with `script[n]` to its n-th request (the last one from then on). */
async function scripted(script: Array<'reset' | { status: number; headers?: Record<string, string> }>) {
  const seen: string[] = [];
  const s = await localServer((req, res) => {
    const step = script[Math.min(seen.length, script.length - 1)]!;
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    if (step === 'reset') return void req.socket.destroy();
    res.writeHead(step.status, { 'content-type': 'application/json', ...step.headers });
    res.end(JSON.stringify({ detail: step.status === 200 ? 'ok' : 'slow down' }));
  });
  servers.push(s);
  return { target: { baseUrl: s.url, apiKey: KEY }, seen };
}

describe('raw requests of the contract suite', () => {
  test('429 with Retry-After in seconds, then as an HTTP date, is waited out and repeated', async () => {
    // An HTTP date is whole seconds; the wait is that moment less the one the 429 arrived at.
    const dateMs = Math.floor((Date.now() + 10_000) / 1000) * 1000;
    const date = new Date(dateMs).toUTCString();
    const { target, seen } = await scripted([
      { status: 429, headers: { 'retry-after': '2' } },
      { status: 429, headers: { 'retry-after': date } },
      { status: 200 },
    ]);
    const waits: number[] = [];
    const before = Date.now();
    const answer = await raw(target, 'POST', '/v1/create_field/', {
      body: { name: 'x' },
      sleep: async (ms) => void waits.push(ms),
    });
    const after = Date.now();
    expect(answer.status).toBe(200);
    expect(seen).toHaveLength(3);
    expect(waits[0]).toBe(2000);
    // Bounded by when the request went out and when the answer was in, not by a guess at how long
    // that took (a guess of 1 s failed on a loaded machine).
    expect(waits[1]).toBeGreaterThanOrEqual(dateMs - after);
    expect(waits[1]).toBeLessThanOrEqual(dateMs - before);
  });

  test('a Retry-After beyond maxWaitMs, or retries used up, returns the 429 as it is', async () => {
    const { target, seen } = await scripted([{ status: 429, headers: { 'retry-after': '3600' } }]);
    const answer = await raw(target, 'GET', '/v1/fetch_folder/', { sleep: async () => {} });
    expect(answer.status).toBe(429);
    expect(seen).toHaveLength(1);
    const again = await scripted([{ status: 429 }]);
    expect((await raw(again.target, 'GET', '/x', { retries: 2, sleep: async () => {} })).status).toBe(429);
    expect(again.seen).toHaveLength(3);
  });

  test('a reset is repeated for an idempotent method, never for a POST', async () => {
    const get = await scripted(['reset', { status: 200 }]);
    expect((await raw(get.target, 'GET', '/v1/fetch_folder/', { sleep: async () => {} })).status).toBe(200);
    expect(get.seen).toHaveLength(2);
    const post = await scripted(['reset', { status: 200 }]);
    await expect(
      raw(post.target, 'POST', '/v1/create_folder/', { body: {}, sleep: async () => {} }),
    ).rejects.toThrow();
    expect(post.seen).toHaveLength(1);
  });
});
