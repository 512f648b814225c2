/**
 * Soak: docex-sync (a child process) runs for DOCEX_BENCH_SOAK_MIN minutes (default 30) while files
 * are dropped into its inbox at DOCEX_BENCH_SOAK_RATE per second (default 8), against the emulator
 * (in this process) answering with light faults (a few 5xx and 429, a few dropped connections).
 * The child reports its RSS, heap and open fds every SAMPLE_S seconds; after the warm-up
 * (DOCEX_BENCH_SOAK_WARMUP_MIN, default a third of the run, at most 5 minutes) the RSS slope is the
 * least-squares line through the samples, in MB per minute (goal < 0.5: flat). Then the drop stops,
 * the inbox drains, and every dropped file must end archived or failed, none uploaded twice.
 *
 * With DOCEX_BENCH_SOAK_SNAPSHOTS=DIR the child writes a V8 heap snapshot to DIR at the end of the
 * warm-up and at the end of the drop (compare the two in Chrome DevTools' Memory tab, "Comparison").
 * Writing a snapshot lifts RSS for good (by ~60 MB in a run of 2026-11-25), so a run with snapshots
 * tells what the heap keeps; its RSS slope means nothing.
 *
 *   DOCEX_BENCH_SOAK_MIN=10 npm run bench soak
 */
import { fork, type ChildProcess } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { writeHeapSnapshot } from 'node:v8';
import type { BenchRow } from './run.ts';
import { daemonNodeFlags } from '../test/support/daemon-heap.ts';

const MINUTES = Number(process.env.DOCEX_BENCH_SOAK_MIN ?? 30);
const RATE = Number(process.env.DOCEX_BENCH_SOAK_RATE ?? 8);
const WARMUP_MIN = Number(process.env.DOCEX_BENCH_SOAK_WARMUP_MIN ?? Math.min(5, MINUTES / 3));
const SAMPLE_S = 10;
const KEY = 'soak-api-key-0123456789';
const MB = 1024 * 1024;

interface Sample {
  /** Seconds since the drop started. */
  t: number;
  rssMb: number;
  heapUsedMb: number;
  externalMb: number;
  fds: number;
  archived: number;
  failed: number;
  /** V8's committed heap (used plus free pages it keeps). */
  heapTotalMb: number;
  /** From /proc/self/smaps_rollup: anonymous memory (V8, malloc) and file-backed or shared pages (code, the SQLite -shm). */
  anonMb: number;
  fileMb: number;
  shmemMb: number;
}

type ToChild = { kind: 'snapshot'; name: string } | { kind: 'stop' };
type FromChild = { kind: 'sample'; sample: Omit<Sample, 't'> } | { kind: 'snapshot-written'; file: string };

/** The child: docex-sync on the config file it is given, reporting samples until told to stop. */
async function child(configFile: string) {
  const { loadConfig } = await import('../daemon/src/config/config.ts');
  const { startDaemon } = await import('../daemon/src/app/daemon.ts');
  const { createLogger } = await import('../daemon/src/common/logging.ts');
  const { createNodeClient } = await import('@docex/shared/node');
  const config = loadConfig(configFile);
  // Warnings and errors only (faults make some), counted and dropped: a log kept in memory would
  // be the leak this measures.
  const log = createLogger('warn', {
    pretty: false,
    destination: new Writable({ write: (_c, _e, cb) => cb() }),
  });
  const client = createNodeClient({ baseUrl: config.api.base_url!, apiKey: KEY, logger: log });
  const running = await startDaemon(config, client, log);
  // After the parent is gone (it stopped early), a sample has nowhere to go.
  const send = (m: FromChild) => void (process.connected && process.send!(m));
  const sample = () => {
    const memory = process.memoryUsage();
    const counts = running.db.fileCounts.counts();
    const rollup = smapsRollup();
    send({
      kind: 'sample',
      sample: {
        rssMb: memory.rss / MB,
        heapUsedMb: memory.heapUsed / MB,
        heapTotalMb: memory.heapTotal / MB,
        externalMb: memory.external / MB,
        anonMb: (rollup.Anonymous ?? NaN) / 1024,
        fileMb: (rollup.Pss_File ?? NaN) / 1024,
        shmemMb: (rollup.Pss_Shmem ?? NaN) / 1024,
        fds: readdirSync('/proc/self/fd').length,
        archived: counts.archived,
        failed: counts.failed,
      },
    });
  };
  const timer = setInterval(sample, SAMPLE_S * 1000);
  sample();
  process.on('message', async (m: ToChild) => {
    if (m.kind === 'snapshot') send({ kind: 'snapshot-written', file: writeHeapSnapshot(m.name) });
    if (m.kind === 'stop') {
      clearInterval(timer);
      sample();
      await running.stop();
      process.disconnect();
    }
  });
}

if (process.env.DOCEX_BENCH_SOAK_CONFIG && process.send) await child(process.env.DOCEX_BENCH_SOAK_CONFIG);

/** The kB figures of /proc/self/smaps_rollup (Linux), by name; empty elsewhere. */
function smapsRollup(): Record<string, number> {
  let text = '';
  try {
    text = readFileSync('/proc/self/smaps_rollup', 'utf8');
  } catch {
    return {};
  }
  const figures: Record<string, number> = {};
  for (const [, name, kb] of text.matchAll(/^(\w+):\s+(\d+) kB$/gm)) figures[name!] = Number(kb);
  return figures;
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const sxy = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return sxy / sxx;
}

async function setUpService() {
  const { startEmulator } = await import('../emulator/index.ts');
  const { createNodeClient } = await import('@docex/shared/node');
  const emulator = await startEmulator({
    port: 0,
    taskDelayMs: 300,
    companies: [{ name: 'Soak', apiKey: KEY }],
  });
  const client = createNodeClient({ baseUrl: emulator.url, apiKey: KEY });
  const folder = await client.createFolder({ name: 'Soak' });
  const template = await client.createTemplate({
    folder_id: folder.id,
    name: 'Invoice',
    number_locale: 'EU',
  });
  const fields = [
    ['Invoice number', 'General fields', 'invoice_number'],
    ['Total', 'General fields', 'total_price'],
    ['Description', 'Line fields', 'text'],
    ['Amount', 'Line fields', 'total_price'],
  ] as const;
  for (const [i, [name, type, format]] of fields.entries())
    await client.createField({ template_id: template.id, name, type, format, position: i + 1 });
  return { emulator, templateId: template.id };
}

export default async function soakBench(): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'docex-soak-'));
  const { emulator, templateId } = await setUpService();
  const snapshots = process.env.DOCEX_BENCH_SOAK_SNAPSHOTS;
  let sync: ChildProcess | undefined;
  let exited: Promise<number | null> | undefined;
  try {
    for (const d of ['inbox', 'staging']) await mkdir(join(dir, d));
    const configFile = join(dir, 'docex-sync.yaml');
    await writeFile(
      configFile,
      [
        'state_db: ./state/sync.db',
        `api: { base_url: "${emulator.url}", concurrency: 4, requests_per_second: 50 }`,
        'poll: { interval_ms: 250, max_interval_ms: 2000 }',
        'upload: { retry_base_ms: 200, retry_max_ms: 5000 }',
        'watch:',
        '  - path: ./inbox',
        `    template_id: ${templateId}`,
        '    output: ./results',
        '    processed_dir: ./processed',
        '    failed_dir: ./failed',
        '    stable_ms: 500',
        'log_level: warn',
      ].join('\n'),
    );
    // Light faults: 2 % errors (5xx and 429), 0.5 % connections dropped without an answer.
    emulator.faults.set({ errorRate: 0.02, statuses: [500, 502, 503, 429], dropRate: 0.005 });

    const daemonProcess = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, DOCEX_BENCH_SOAK_CONFIG: configFile },
      cwd: dir,
      // As the installed `docex-sync run` starts (daemon/bin/daemon-heap.js): young generation
      // capped, unless NODE_OPTIONS gives a size (e.g. =64 to see Node 24's uncapped growth).
      execArgv: daemonNodeFlags(process.env.NODE_OPTIONS),
    });
    sync = daemonProcess;
    exited = new Promise<number | null>((r) => daemonProcess.once('exit', r));
    const samples: Sample[] = [];
    let started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    const snapshotsWritten: string[] = [];
    // DOCEX_BENCH_SOAK_SAMPLES=FILE keeps every sample as a JSON line, to see where memory goes.
    const samplesFile = process.env.DOCEX_BENCH_SOAK_SAMPLES;
    daemonProcess.on('message', (m: FromChild) => {
      if (m.kind === 'sample') {
        samples.push({ t: elapsed(), ...m.sample });
        if (samplesFile) appendFileSync(samplesFile, `${JSON.stringify(samples.at(-1))}\n`);
      } else snapshotsWritten.push(m.file);
    });
    await new Promise<void>((resolve, reject) => {
      daemonProcess.once('message', () => resolve());
      daemonProcess.once('exit', (code) =>
        reject(new Error(`docex-sync exited with ${code} before it started`)),
      );
    });

    started = performance.now();
    samples.length = 0;
    const body = 'Invoice number: S-{n}\nTotal: 10,00\nWidget | 4,00\nGadget | 6,00\n'.padEnd(2048, '.');
    let dropped = 0;
    let warmedUp = false;
    const seconds = MINUTES * 60;
    const lastReport = { at: 0 };
    while (elapsed() < seconds) {
      // Keep to the rate on average: catch up after a stall instead of drifting.
      const due = Math.floor(elapsed() * RATE);
      for (; dropped < due; dropped++) {
        const name = `f${dropped}.txt`;
        await writeFile(
          join(dir, 'staging', name),
          `${body.replace('{n}', String(dropped))}\n${Math.random()}`,
        );
        await rename(join(dir, 'staging', name), join(dir, 'inbox', name));
      }
      if (!warmedUp && elapsed() >= WARMUP_MIN * 60) {
        warmedUp = true;
        if (snapshots)
          daemonProcess.send({
            kind: 'snapshot',
            name: join(snapshots, `soak-warm-${Date.now()}.heapsnapshot`),
          });
      }
      if (elapsed() - lastReport.at >= 60) {
        lastReport.at = elapsed();
        const s = samples.at(-1);
        if (s)
          process.stderr.write(
            `soak: ${Math.round(elapsed() / 60)} min, ${dropped} dropped, ${s.archived} archived, ${s.failed} failed, RSS ${s.rssMb.toFixed(1)} MB (anon ${s.anonMb.toFixed(1)}, file ${s.fileMb.toFixed(1)}, shmem ${s.shmemMb.toFixed(1)}), heap ${s.heapUsedMb.toFixed(1)} of ${s.heapTotalMb.toFixed(1)} MB, ${s.fds} fds\n`,
          );
      }
      await delay(1000 / RATE);
    }
    const dropEnd = elapsed();
    if (snapshots) {
      daemonProcess.send({ kind: 'snapshot', name: join(snapshots, `soak-end-${Date.now()}.heapsnapshot`) });
      while (snapshotsWritten.length < 2) await delay(500);
    }
    // Drain: every dropped file archived or failed (faults end in retries, not in lost files).
    emulator.faults.clear();
    const drainStart = elapsed();
    while ((samples.at(-1)?.archived ?? 0) + (samples.at(-1)?.failed ?? 0) < dropped) {
      if (elapsed() - drainStart > 300)
        throw new Error(
          `soak: only ${samples.at(-1)?.archived} of ${dropped} archived 5 minutes after the drop`,
        );
      await delay(1000);
    }
    daemonProcess.send({ kind: 'stop' });
    await exited;

    const measured = samples.filter((s) => s.t >= WARMUP_MIN * 60 && s.t <= dropEnd);
    const rssSlope = slope(measured.map((s) => [s.t / 60, s.rssMb]));
    const heapSlope = slope(measured.map((s) => [s.t / 60, s.heapUsedMb]));
    const fdSlope = slope(measured.map((s) => [s.t / 60, s.fds]));
    const externalSlope = slope(measured.map((s) => [s.t / 60, s.externalMb]));
    const uploads = Object.values(emulator.stats().uploadsByHash);
    const last = samples.at(-1)!;
    const first = measured[0] ?? last;
    const peak = Math.max(...samples.map((s) => s.rssMb));
    return [
      {
        measure: `RSS slope after ${WARMUP_MIN.toFixed(1)} min warm-up, ${MINUTES} min at ${RATE} files/s with faults`,
        value: rssSlope,
        unit: 'MB/min',
        note: 'goal < 0.5',
      },
      { measure: 'heap used slope, same window', value: heapSlope, unit: 'MB/min' },
      {
        measure: 'V8 heap committed slope, same window',
        value: slope(measured.map((s) => [s.t / 60, s.heapTotalMb])),
        unit: 'MB/min',
      },
      {
        measure: 'anonymous memory slope (V8, malloc), same window',
        value: slope(measured.map((s) => [s.t / 60, s.anonMb])),
        unit: 'MB/min',
      },
      {
        measure: 'file-backed + shared memory slope (code, SQLite -shm), same window',
        value: slope(measured.map((s) => [s.t / 60, s.fileMb + s.shmemMb])),
        unit: 'MB/min',
      },
      { measure: 'external memory (buffers) slope, same window', value: externalSlope, unit: 'MB/min' },
      { measure: 'open fds slope, same window', value: fdSlope, unit: 'fds/min', note: 'goal 0' },
      { measure: 'RSS at the end of the warm-up', value: first.rssMb, unit: 'MB' },
      { measure: 'RSS at the end', value: last.rssMb, unit: 'MB' },
      { measure: 'peak RSS (samples)', value: peak, unit: 'MB' },
      { measure: 'files dropped', value: dropped, unit: 'files' },
      { measure: 'files archived', value: last.archived, unit: 'files' },
      { measure: 'files failed', value: last.failed, unit: 'files', note: 'goal 0' },
      {
        measure: 'files uploaded more than once',
        value: uploads.filter((n) => n > 1).length,
        unit: 'files',
        note: 'goal 0',
      },
      { measure: 'samples in the slope', value: measured.length, unit: `(every ${SAMPLE_S} s)` },
    ];
  } finally {
    // A bench that stops early (a drain that never ends) stops its docex-sync before removing the
    // folders it writes to.
    if (sync && sync.exitCode === null && sync.signalCode === null) {
      sync.kill('SIGKILL');
      await exited;
    }
    await emulator.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
