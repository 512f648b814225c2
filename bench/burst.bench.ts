/**
 * Issue #43's burst, measured in a real n8n (the suite's version, installed into the user cache on
 * first use, as the end-to-end tests do): the workflow "Webhook (4 files) -> Extract" (default
 * options) called 50 times at once against the emulator limited to 10 requests/s, the credential at
 * its default rate.
 * Prints the succeeded executions, the 429 share, the orphan documents, and the files per second
 * against the bound the rate allows (test/e2e/burst.ts says how each is counted).
 *
 * For scale, the same burst with no limit anywhere (the emulator unlimited, the credential at 1000
 * requests/s): how fast this n8n on this machine gets through it at all. When that is below the
 * bound, the machine, not the rate, sets the pace, and the ratio to the bound says little.
 * Nothing is asserted; test/e2e/burst.test.ts asserts the outcome. DOCEX_BENCH_BURST_EXECUTIONS,
 * _FILES and _RATE change the shape.
 */
import { describeBurst, measureBurst } from '../test/e2e/burst.ts';
import { installN8n } from '../test/e2e/n8n-instance.ts';
import { packAsDocumented } from '../test/e2e/pack.ts';
import { prepareN8n } from '../test/e2e/real-n8n.ts';
import type { BenchRow } from './run.ts';

const EXECUTIONS = Number(process.env.DOCEX_BENCH_BURST_EXECUTIONS ?? 50);
const FILES = Number(process.env.DOCEX_BENCH_BURST_FILES ?? 4);
const RATE = Number(process.env.DOCEX_BENCH_BURST_RATE ?? 10);

export default async function burst(): Promise<BenchRow[]> {
  // Its own pack and the cached n8n: outside vitest there is no e2e global set-up to hand them over.
  const packed = packAsDocumented(['n8n-nodes-docex']);
  const n8n = await prepareN8n(
    {},
    { parts: { bin: await installN8n(), tarball: packed.tarballs['n8n-nodes-docex']! } },
  ).catch((error: unknown) => {
    packed.remove();
    throw error;
  });
  try {
    const shape = { executions: EXECUTIONS, filesPerExecution: FILES };
    const f = await measureBurst(n8n, { ...shape, perSecond: RATE });
    console.log(describeBurst(f));
    const free = await measureBurst(n8n, {
      ...shape,
      perSecond: Number.POSITIVE_INFINITY,
      credentialRequestsPerSecond: 1000,
    });
    console.log(describeBurst(free));
    const failures = Object.entries({ ...f.failures, ...f.executionErrors })
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
      { measure: 'ratio to the bound', value: f.ratioToBound, unit: 'x' },
      {
        measure: 'ratio while requests flowed',
        value: f.ratioWhileFlowing,
        unit: 'x',
        note: `answered requests/s / ${RATE} over ${f.requestSpanSeconds.toFixed(1)} s from the first to the last arrival`,
      },
      {
        measure: 'ratio once every execution ran',
        value: f.ratioOnceStarted,
        unit: 'x',
        note: `requests/s / ${RATE} over ${f.secondsOnceStarted.toFixed(1)} s after n8n had begun every execution's Extract (${f.timeline.lastExtractStarted.toFixed(1)} s after the first call)`,
      },
      {
        measure: 'no limit anywhere: files per second',
        value: free.filesPerSecond,
        unit: 'files/s',
        note: `${free.succeeded}/${free.executions} succeeded in ${free.seconds.toFixed(1)} s: this n8n's own pace here`,
      },
    ];
  } finally {
    await n8n.cleanup();
    packed.remove();
  }
}
