/**
 * Requests per document through the client (the n8n node's Extract path), where the service's rate
 * is the bound: DOCEX_BENCH_FILES files (default 200) whose tasks take DOCEX_BENCH_TASK_MS (default
 * 10,000), at 10 requests per second, polls from 2 s (the node's default), against the emulator in
 * this process. Two paths over the same files:
 *
 * - per file (today's): uploadAndWait for each file, all files at once (the client's queue and
 *   rate limit pace them): an upload and a poll per round per file;
 * - batched: extractMany (shared/src/core/batch.ts, follow.ts): 20 files per upload, one
 *   fetch_documents?updated_since per round, a poll per task when its document shows.
 *
 * A mixed run adds 5 % unreadable files (FAILED) and 5 % repeats (DUPLICATE). Printed with the goal
 * of issue #42 (<= 1.6 requests per document) and files/s against the bound the requests per
 * document imply at that rate. Timing is never asserted anywhere.
 */
import { createNodeClient } from '@docex/shared/node';
import type { DocexClient, FileInput } from '@docex/shared';
import { startEmulator } from '../emulator/index.ts';
import { templateWithField } from '../test/support/templates.ts';
import type { BenchRow } from './run.ts';

const FILES = Number(process.env.DOCEX_BENCH_FILES ?? 200);
const TASK_MS = Number(process.env.DOCEX_BENCH_TASK_MS ?? 10_000);
const KEY = 'bench-batch-key-0123456789';
const RATE = 10;
const GOAL = 1.6;

type Path = 'per file' | 'batched';

function filesFor(mixed: boolean): FileInput[] {
  return Array.from({ length: FILES }, (_, i) => {
    const text =
      mixed && i % 20 === 7
        ? '\u0000\u0001\u0002' // unreadable: FAILED
        : mixed && i % 20 === 13
          ? `%PDF-1.4 bench document ${i - 13}\n` // the bytes of an earlier file: DUPLICATE
          : `%PDF-1.4 bench document ${i}\n`;
    return { data: new TextEncoder().encode(text), fileName: `doc-${i}.pdf`, contentType: 'application/pdf' };
  });
}

async function once(path: Path, mixed: boolean) {
  const emulator = await startEmulator({
    port: 0,
    taskDelayMs: TASK_MS,
    companies: [{ name: 'B', apiKey: KEY }],
  });
  try {
    const client: DocexClient = createNodeClient({
      baseUrl: emulator.url,
      apiKey: KEY,
      concurrency: 4,
      intervalCap: RATE,
      intervalMs: 1000,
    });
    const folder = await client.createFolder({ name: 'Bench' });
    const template = await templateWithField(client, folder.id, 'Bench');
    const files = filesFor(mixed);
    emulator.resetStats();
    const started = performance.now();
    let outcomes: string[];
    if (path === 'per file') {
      outcomes = await Promise.all(
        files.map(async (file) => {
          try {
            const { tasks } = await client.uploadAndWait(
              { files: [file], template_id: template.id },
              { intervalMs: 2000 },
            );
            return tasks.map((t) => t.status).join(',');
          } catch (error) {
            return `error ${(error as Error).name}`;
          }
        }),
      );
    } else {
      const { files: ends } = await client.extractMany(
        files,
        { template_id: template.id },
        { intervalMs: 2000 },
      );
      outcomes = ends.map((e) =>
        'results' in e ? e.results.map((r) => r.status).join(',') : `error ${e.error.name}`,
      );
    }
    const seconds = (performance.now() - started) / 1000;
    const stats = emulator.stats();
    const tally: Record<string, number> = {};
    for (const o of outcomes) tally[o] = (tally[o] ?? 0) + 1;
    return { requests: stats.totalRequests, byOperation: stats.requestsByOperation, seconds, tally };
  } finally {
    await emulator.stop();
  }
}

export default async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const what = `${FILES} files, ${TASK_MS / 1000}-s tasks, ${RATE} req/s`;
  for (const mixed of [false, true]) {
    for (const path of ['per file', 'batched'] as const) {
      const run = await once(path, mixed);
      const perDoc = run.requests / FILES;
      const bound = RATE / perDoc;
      const filesPerSecond = FILES / run.seconds;
      const label = `${path}${mixed ? ', mixed (5 % FAILED, 5 % DUPLICATE)' : ''}`;
      rows.push(
        {
          measure: `requests per document, ${label} (${what})`,
          value: perDoc,
          unit: 'req',
          note: `goal <= ${GOAL}: ${perDoc <= GOAL ? 'met' : 'missed'}`,
        },
        {
          measure: '  requests by operation',
          value: run.requests,
          unit: 'req',
          note: Object.entries(run.byOperation)
            .map(([op, n]) => `${op} ${n}`)
            .join(', '),
        },
        {
          measure: '  outcomes',
          value: FILES,
          unit: 'files',
          note: Object.entries(run.tally)
            .map(([o, n]) => `${o} ${n}`)
            .join(', '),
        },
        {
          measure: '  files per second',
          value: filesPerSecond,
          unit: 'files/s',
          note: `${(filesPerSecond / bound).toFixed(2)}x the bound ${bound.toFixed(2)} files/s its requests per document imply (the window includes the last task's ${TASK_MS / 1000} s)`,
        },
      );
    }
  }
  return rows;
}
