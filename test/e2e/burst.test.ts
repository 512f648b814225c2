/**
 * Issue #43: a burst of webhook executions sharing one credential against a service that allows 10
 * requests a second. A real n8n runs the workflow "Webhook (4 files) -> Extract" (default
 * options) 50 times at once against the emulator limited to 10 requests/s (test/e2e/burst.ts says
 * how each figure is counted). Every execution must succeed, leave no document behind that no
 * execution returned, and at most 1 % of the requests may be refused with 429. Throughput is the
 * bench's concern (bench/burst.bench.ts), not asserted here: it depends on the machine's load.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeBurst, measureBurst } from './burst.ts';
import { prepareN8n, type RealN8n } from './real-n8n.ts';

let n8n: RealN8n;

beforeAll(async () => {
  n8n = await prepareN8n();
}, 900_000);

afterAll(async () => {
  await n8n?.cleanup();
});

describe('a burst of executions against a rate-limited service (issue #43)', () => {
  it('50 webhook executions of 4 files at once, 10 requests/s allowed: all succeed, no orphan documents, at most 1 % 429s', async () => {
    const figures = await measureBurst(n8n, { executions: 50, filesPerExecution: 4, perSecond: 10 });
    const report = describeBurst(figures);
    console.log(report);
    expect(figures.succeeded, report).toBe(50);
    expect(figures.orphans, report).toEqual([]);
    expect(figures.refusedShare, report).toBeLessThanOrEqual(0.01);
  });
});
