/**
 * Throttling, measured at a local server: requests in flight (counted by the server between the
 * request's arrival and the end of its answer) and arrival times. The assertions are on the limits,
 * not on how long anything took.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterEach, describe, expect, test } from 'vitest';
import { readAll } from '@docex/shared';
import { bytes, localServer, nodeClient, type LocalServer } from '../support/client.ts';
import { maxInWindow } from '../support/windows.ts';

interface Stats {
  inFlight: number;
  maxInFlight: number;
  arrivals: number[];
  paths: string[];
}

const servers: LocalServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A server that holds every answer for `holdMs` and counts what is in flight. */
async function countingServer(holdMs: number) {
  const stats: Stats = { inFlight: 0, maxInFlight: 0, arrivals: [], paths: [] };
  const s = await localServer((req: IncomingMessage, res: ServerResponse) => {
    stats.arrivals.push(performance.now());
    stats.paths.push(req.url!.split('?')[0]!);
    stats.inFlight++;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    req.resume();
    req.on('end', () => {
      setTimeout(() => {
        const path = req.url!;
        const body = path.includes('fetch_file')
          ? 'x'.repeat(1000)
          : path.includes('fetch_tasks_results')
            ? JSON.stringify({ status: 'DONE', status_message: '' })
            : path.includes('upload_file')
              ? JSON.stringify({ task_id: 't' })
              : JSON.stringify({ id: 1 });
        res.on('finish', () => stats.inFlight--);
        res.end(body);
      }, holdMs);
    });
  });
  servers.push(s);
  return { url: s.url, stats };
}

describe('concurrency', () => {
  test('never more requests in flight than `concurrency`, across every kind of call of one client', async () => {
    const { url, stats } = await countingServer(25);
    const client = nodeClient({ baseUrl: url, concurrency: 3 });
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 6; i++) {
      calls.push(client.fetchFolder({ folder_id: i + 1 }));
      calls.push(client.call('update_folder', { folder_id: i + 1, name: 'n' }));
      calls.push(client.uploadFile({ files: [{ data: bytes('x'.repeat(1000)), fileName: 'a.pdf' }] }));
      calls.push(client.fetchFile({ document_id: i + 1 }).then((f) => readAll(f.body)));
      calls.push(client.waitForTask(`t-${i}`));
    }
    await Promise.all(calls);
    expect(stats.arrivals).toHaveLength(30);
    expect(stats.maxInFlight).toBeLessThanOrEqual(3);
    expect(stats.maxInFlight).toBe(3); // the limit was reached, so the check above means something
  });

  test('a download holds its slot until its body is read', async () => {
    const { url, stats } = await countingServer(0);
    const client = nodeClient({ baseUrl: url, concurrency: 1 });
    const file = await client.fetchFile({ document_id: 1 });
    let second = false;
    const next = client.fetchFolder({ folder_id: 1 }).then(() => (second = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(stats.arrivals).toHaveLength(1);
    expect(second).toBe(false);
    expect((await readAll(file.body)).byteLength).toBe(1000);
    await next;
    expect(stats.arrivals).toHaveLength(2);
  });

  test('a reader that stops early frees the slot too', async () => {
    const { url } = await countingServer(0);
    const client = nodeClient({ baseUrl: url, concurrency: 1 });
    const file = await client.fetchFile({ document_id: 1 });
    for await (const chunk of file.body) {
      expect(chunk.byteLength).toBeGreaterThan(0);
      break;
    }
    await expect(client.fetchFolder({ folder_id: 1 })).resolves.toMatchObject({ id: 1 });
  });

  test('a request with a higher priority goes before those waiting longer; equal ones in order', async () => {
    const { url, stats } = await countingServer(0);
    const client = nodeClient({ baseUrl: url, concurrency: 1 });
    const file = await client.fetchFile({ document_id: 1 }); // holds the only slot until read
    const queue = client.transport.queue;
    const threeWaiting = new Promise<void>((resolve) => {
      const check = () => queue.size === 3 && (queue.removeEventListener('add', check), resolve());
      queue.addEventListener('add', check);
    });
    const calls = [
      client.fetchFolder({ folder_id: 1 }),
      client.fetchTasksResults({ task_id: 't' }),
      client.uploadFile({ files: [{ data: bytes('x'), fileName: 'a.pdf' }] }, { priority: 1 }),
    ];
    await threeWaiting;
    await readAll(file.body);
    await Promise.all(calls);
    expect(stats.paths.map((p) => p.replace(/^\/v1\/|\/$/g, ''))).toEqual([
      'fetch_file',
      'upload_file',
      'fetch_folder',
      'fetch_tasks_results',
    ]);
  });

  test('two clients have separate queues', async () => {
    const { url, stats } = await countingServer(25);
    const a = nodeClient({ baseUrl: url, concurrency: 1 });
    const b = nodeClient({ baseUrl: url, concurrency: 1 });
    await Promise.all(
      [1, 2, 3, 4].flatMap((i) => [a.fetchFolder({ folder_id: i }), b.fetchFolder({ folder_id: i })]),
    );
    expect(stats.maxInFlight).toBe(2);
  });
});

describe('intervalCap', () => {
  test('never more than intervalCap requests arrive in any intervalMs (sliding), spaced, not in bursts', async () => {
    const { url, stats } = await countingServer(0);
    const intervalMs = 400;
    const client = nodeClient({
      baseUrl: url,
      concurrency: 10,
      intervalCap: 2,
      intervalMs,
      rateMarginMs: 100, // above the loopback jitter of a loaded CI machine
    });
    const started = performance.now();
    await Promise.all([
      ...[1, 2, 3].map((i) => client.fetchFolder({ folder_id: i })),
      ...[1, 2].map((i) => client.fetchFile({ document_id: i }).then((f) => readAll(f.body))),
      client.uploadFile({ files: [{ data: bytes('x'), fileName: 'a.pdf' }] }),
      client.waitForTask('t'),
    ]);
    expect(stats.arrivals).toHaveLength(7);
    // Counted at the server over the whole window, as a server's own limiter counts. A limiter that
    // lets `intervalCap` requests go at once (p-queue's interval) puts 2 within a few ms of each other.
    expect(maxInWindow(stats.arrivals, intervalMs)).toBeLessThanOrEqual(2);
    const sorted = [...stats.arrivals].sort((a, b) => a - b);
    const gaps = sorted.slice(1).map((t, i) => t - sorted[i]!);
    expect(Math.min(...gaps)).toBeGreaterThan(100); // spaced one every (400 + 100) / 2 = 250 ms
    // 7 requests, one every 250 ms
    expect(performance.now() - started).toBeGreaterThanOrEqual(6 * 250 - 20);
  });

  test('intervalCap and concurrency together', async () => {
    const { url, stats } = await countingServer(40);
    const client = nodeClient({ baseUrl: url, concurrency: 2, intervalCap: 3, intervalMs: 250 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => client.fetchFolder({ folder_id: i + 1 })));
    expect(stats.maxInFlight).toBeLessThanOrEqual(2);
    // Concurrency alone would let about 2 per 40 ms arrive, 8 in the window: the cap is what holds.
    expect(maxInWindow(stats.arrivals, 170)).toBeLessThanOrEqual(3);
  });
});
