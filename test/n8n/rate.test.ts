/**
 * The node's send rate (issue #43), in n8n-core's real contexts over real HTTP:
 * - executions of one process that use one credential share its send schedule, at the credential's
 *   "Requests per Second" (the emulator limited to that rate refuses none of them);
 * - a 429 pauses every execution of that credential, and no other credential's;
 * - a call keeps retrying 429s (an upload too: the server refused it) past its 3 retries, for
 *   RATE_LIMIT_BUDGET_MS, then fails with what to change.
 * The retry budget runs on a simulated clock (the client's and the schedule's sleeps return at once
 * and move it); the shared schedule's test runs in real time against the emulator.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DocexRateLimitError, SendSlots } from '@docex/shared';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import {
  DEFAULT_REQUESTS_PER_SECOND,
  docexClient,
  RATE_LIMIT_BUDGET_MS,
  requestsPerSecondOf,
  sendSlotKey,
  type ClientClock,
} from '../../nodes/Docex/transport/index.ts';
import { executeContext, runDocex, type Credentials } from './harness.ts';

let emu: Emulator;

type Answer = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void;

/** A scripted service: each test sets `answer`, which decides every request's reply. */
const scripted: { server: Server | undefined; url: string; answer: Answer } = {
  server: undefined,
  url: '',
  answer: (_req, _body, res) => void res.writeHead(200).end('{}'),
};

beforeAll(async () => {
  emu = await startEmulator({ port: 0, taskDelayMs: 30 });
  scripted.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => scripted.answer(req, Buffer.concat(chunks), res));
  });
  await new Promise<void>((r) => scripted.server!.listen(0, '127.0.0.1', r));
  scripted.url = `http://127.0.0.1:${(scripted.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await emu.stop();
  await new Promise<void>((r) => scripted.server!.close(() => r()));
});
afterEach(() => emu.faults.clear());

/** A clock whose sleeps return at once and move it: minutes of retries in milliseconds. */
function simulated(): ClientClock & { slept: number[] } {
  let t = 0;
  const slept: number[] = [];
  return {
    now: () => t,
    slept,
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
    },
  };
}

const refuse = (res: ServerResponse, retryAfter = '1') =>
  res
    .writeHead(429, { 'content-type': 'application/json', 'retry-after': retryAfter })
    .end(JSON.stringify({ detail: 'Rate limit exceeded' }));

const clientFor = (credentials: Credentials, clock: ClientClock, slots: SendSlots) =>
  docexClient(
    executeContext({ resource: 'account', operation: 'checkApiKey' }, { credentials }),
    clock,
    slots,
  );

describe('one send schedule per credential in an n8n process', () => {
  it('executions using one credential share its Requests per Second: the service limited to that rate refuses none', async () => {
    const rate = 5;
    emu.faults.set({ rateLimit: { perSecond: rate } });
    emu.resetStats();
    const credentials = { baseUrl: emu.url, apiKey: emu.keys[0]!, requestsPerSecond: rate };
    const execution = () =>
      runDocex(
        { resource: 'account', operation: 'checkApiKey', options: { concurrency: 6 } },
        { credentials, items: Array.from({ length: 6 }, () => ({ json: {} })) },
      );
    // Two executions at once, each with six items in parallel: twelve requests want to go now.
    const outputs = await Promise.all([execution(), execution()]);
    expect(outputs.flat()).toHaveLength(12);
    const stats = emu.stats();
    expect(stats.answersByStatus).toEqual({ 200: 12 });
    expect(stats.maxRequestsInOneSecond).toBeLessThanOrEqual(rate);
  });

  it("a 429 pauses the credential's other executions until the pause ends, and no other credential's", async () => {
    const clock = simulated();
    const slots = new SendSlots({ random: () => 0 });
    const arrivals: Array<{ key: string; at: number }> = [];
    let refuseNext = true;
    scripted.answer = (req, _body, res) => {
      arrivals.push({ key: String(req.headers.authorization), at: clock.now() });
      if (refuseNext) {
        refuseNext = false;
        refuse(res, '2');
      } else res.writeHead(200, { 'content-type': 'application/json' }).end('{"valid":true}');
    };
    const one = { baseUrl: scripted.url, apiKey: 'key-one' };
    const first = await clientFor(one, clock, slots);
    const second = await clientFor(one, clock, slots);
    const other = await clientFor({ baseUrl: scripted.url, apiKey: 'key-two' }, clock, slots);
    // The first execution's request is refused; it gives up at once (no retries for this call).
    await expect(
      first.checkApiKey({}, { retry: { maxRetries: 0, rateLimitBudgetMs: 0 } }),
    ).rejects.toBeInstanceOf(DocexRateLimitError);
    const refusedAt = clock.now();
    await other.checkApiKey();
    await second.checkApiKey();
    expect(arrivals.map((a) => [a.key, a.at - refusedAt])).toEqual([
      ['Bearer key-one', 0],
      ['Bearer key-two', 0], // another credential: not paused
      ['Bearer key-one', 2000], // the same credential: after the Retry-After
    ]);
  });
});

describe("a call's retries of 429s", () => {
  it('an upload refused ten times in a row is sent again, the same file each time, until it is taken', async () => {
    const clock = simulated();
    const bodies: string[] = [];
    scripted.answer = (_req, body, res) => {
      bodies.push(body.toString('latin1'));
      if (bodies.length <= 10) refuse(res);
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"task_id":"t-1"}');
    };
    const client = await clientFor({ baseUrl: scripted.url, apiKey: 'key-upload' }, clock, new SendSlots());
    const upload = await client.uploadFile({
      files: [{ data: new TextEncoder().encode('Invoice number: R-1\n'), fileName: 'r1.txt' }],
      template_id: 1,
    });
    expect(upload.task_id).toBe('t-1');
    expect(bodies).toHaveLength(11);
    for (const body of bodies) expect(body).toContain('Invoice number: R-1\n');
    expect(clock.now()).toBeLessThan(RATE_LIMIT_BUDGET_MS);
  });

  it('refused for good: retried for RATE_LIMIT_BUDGET_MS, then the 429 reaches the caller', async () => {
    const clock = simulated();
    const sent: number[] = [];
    scripted.answer = (_req, _body, res) => {
      sent.push(clock.now());
      refuse(res);
    };
    const client = await clientFor({ baseUrl: scripted.url, apiKey: 'key-forever' }, clock, new SendSlots());
    const error = await client.fetchAllFolders().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DocexRateLimitError);
    expect(sent.length).toBeGreaterThan(4); // more than the 3 retries of other failures
    // Each retry starts within the budget (plus the schedule's own pause, at most 30 s and a jitter).
    expect(sent.at(-1)!).toBeLessThanOrEqual(RATE_LIMIT_BUDGET_MS + 31_000);
    expect(clock.now()).toBeGreaterThanOrEqual(RATE_LIMIT_BUDGET_MS - 31_000);
  });

  it('a Retry-After too long to sit out fails the item at once, saying what to change', async () => {
    scripted.answer = (_req, _body, res) => {
      refuse(res, '3600');
    };
    const error = (await runDocex(
      { resource: 'account', operation: 'checkApiKey' },
      { credentials: { baseUrl: scripted.url, apiKey: 'key-quota' } },
    ).then(
      () => expect.fail('a 429 must fail the item'),
      (e: unknown) => e,
    )) as { message: string; description: string; httpCode: string };
    expect(error.httpCode).toBe('429');
    expect(error.message).toMatch(/^check_api_key: HTTP 429 Too Many Requests: Rate limit exceeded/);
    expect(error.description).toMatch(/"Requests per Second" \(default 10\)/);
    expect(error.description).toMatch(/divided by the number of workers/);
  });
});

describe('the credential', () => {
  it('Requests per Second: the default when absent (credentials saved before it), a number, or an error naming it', () => {
    expect(DEFAULT_REQUESTS_PER_SECOND).toBe(10);
    for (const absent of [undefined, null, ''])
      expect(requestsPerSecondOf({ requestsPerSecond: absent })).toBe(10);
    expect(requestsPerSecondOf({ requestsPerSecond: 3.5 })).toBe(3.5);
    expect(requestsPerSecondOf({ requestsPerSecond: '4' })).toBe(4);
    for (const wrong of [0, -1, 'fast'])
      expect(() => requestsPerSecondOf({ requestsPerSecond: wrong })).toThrow(
        /Requests per Second must be a number above 0 .*set it to the rate your Document Extraction Service allows/,
      );
  });

  it('the schedule is keyed by base URL and a digest of the API key, never the key itself', async () => {
    const key = await sendSlotKey('https://docex.example.com/', 'dx_live_SECRET_key_123');
    expect(key).not.toContain('SECRET');
    expect(key).toMatch(/^https:\/\/docex\.example\.com [0-9a-f]{64}$/);
    expect(await sendSlotKey('https://docex.example.com', 'dx_live_SECRET_key_123')).toBe(key);
    expect(await sendSlotKey('https://docex.example.com', 'dx_live_OTHER_key_456')).not.toBe(key);
    expect(await sendSlotKey('https://other.example.com', 'dx_live_SECRET_key_123')).not.toBe(key);
  });
});
