/**
 * Issue #43's burst, measured in a real n8n 2.40.7 (installed into the user cache on first use, as
 * the end-to-end tests do): the workflow "Webhook (4 files) -> Extract" (default options) called 50
 * times at once against the emulator limited to 10 requests/s. Prints the succeeded executions, the
 * 429 share, the orphan documents, and the files per second against the bound the rate allows
 * (test/e2e/burst.ts says how each is counted). Nothing is asserted; test/e2e/burst.test.ts asserts
 * the outcome. DOCEX_BENCH_BURST_EXECUTIONS, _FILES and _RATE change the shape.
 */
import { describeBurst, measureBurst } from '../test/e2e/burst.ts';
import { prepareN8n } from '../test/e2e/real-n8n.ts';
import type { BenchRow } from './run.ts';

const EXECUTIONS = Number(process.env.DOCEX_BENCH_BURST_EXECUTIONS ?? 50);
const FILES = Number(process.env.DOCEX_BENCH_BURST_FILES ?? 4);
const RATE = Number(process.env.DOCEX_BENCH_BURST_RATE ?? 10);

export default async function burst(): Promise<BenchRow[]> {
  const n8n = await prepareN8n();
  try {
    const f = await measureBurst(n8n, { executions: EXECUTIONS, filesPerExecution: FILES, perSecond: RATE });
    const failures = Object.entries(f.failures)
      .map(([why, n]) => `${n} x ${why}`)
      .join('; ');
    return [
      { measure: 'executions succeeded', value: f.succeeded, unit: `of ${f.executions}`, note: failures },
      {
        measure: 'requests answered 429',
        value: f.refusedShare * 100,
        unit: '%',
        note: `${f.refused} of ${f.requests}`,
      },
      {
        measure: 'most requests in one second',
        value: f.maxRequestsInOneSecond,
        unit: 'req',
        note: `limit ${RATE}/s`,
      },
      {
        measure: 'orphan documents',
        value: f.orphans.length,
        unit: 'docs',
        note: `of ${f.documents} on the service`,
      },
      {
        measure: 'files per second',
        value: f.filesPerSecond,
        unit: 'files/s',
        note: `${f.files} files in ${f.seconds.toFixed(1)} s`,
      },
      {
        measure: 'bound the rate allows',
        value: f.boundFilesPerSecond,
        unit: 'files/s',
        note: `${RATE} req/s / ${f.answeredRequestsPerFile.toFixed(2)} answered requests per file`,
      },
      {
        measure: 'ratio to the bound',
        value: f.ratioToBound,
        unit: 'x',
        note: describeBurst(f).split('\n')[0],
      },
    ];
  } finally {
    await n8n.cleanup();
  }
}
