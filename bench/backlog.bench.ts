/**
 * A backlog as large as the share (issue #42): docex-sync starts on a tree of DOCEX_BENCH_BACKLOG_FILES
 * existing files (default 100,000; 100 folders of 1,000, as bench/scale.bench.ts writes them) with
 * the default settings (stable_ms 2 s, 4 uploads at once of up to 10 files, 10 requests per second),
 * so stability checks and uploads start while the start-up scan still records. It runs against the
 * emulator (its own process, tasks of DOCEX_BENCH_BACKLOG_TASK_MS) for DOCEX_BENCH_BACKLOG_S
 * seconds (default 60; the note's figure is 600 at 1,000,000), and the daemon's VmRSS is sampled
 * every second from outside (/proc/PID/status), with VmHWM at the end: the peak over the window.
 * Printed: peak RSS, files recorded, uploaded (a task id stored) and done (archived or failed),
 * the upload requests the emulator answered, and the bare walk's RSS on the same tree as the
 * baseline (scale.bench's `walk`: a readdir and lstat per file, one fs.watch per folder, nothing kept).
 *
 * The daemon runs from the sources in a child process with the installed binary's heap flag
 * (--max-semi-space-size=16, daemon/CHANGELOG.md), the emulator in another (its memory is not the
 * daemon's); DOCEX_BENCH_BACKLOG_NODE_FLAGS replaces the flag. DOCEX_BENCH_BACKLOG_TREE reuses a
 * tree written before (its files are moved back after the run: processed_dir and failed_dir are
 * outside it); otherwise one is written and removed.
 * DOCEX_BENCH_BACKLOG_SNAPSHOT_MB=N writes a heap snapshot (into the temporary folder) when the
 * daemon's RSS first passes N MB: what holds the memory.
 */
import { fork, type ChildProcess } from 'node:child_process';
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './run.ts';

const FILES = Number(process.env.DOCEX_BENCH_BACKLOG_FILES ?? 100_000);
const SECONDS = Number(process.env.DOCEX_BENCH_BACKLOG_S ?? 60);
const TASK_MS = Number(process.env.DOCEX_BENCH_BACKLOG_TASK_MS ?? 2000);
const SNAPSHOT_MB = Number(process.env.DOCEX_BENCH_BACKLOG_SNAPSHOT_MB ?? 0);
const PER_DIR = 1000;
const KEY = 'bench-backlog-key-0123456789';
/** The daemon's Node flags: the installed binary's heap flag unless DOCEX_BENCH_BACKLOG_NODE_FLAGS says (empty: none). */
const NODE_FLAGS = (process.env.DOCEX_BENCH_BACKLOG_NODE_FLAGS ?? '--max-semi-space-size=16')
  .split(' ')
  .filter(Boolean);
const MB = 1024 * 1024;

type Counts = Record<string, number>;
type Message =
  | { kind: 'emulator'; url: string; templateId: number }
  | { kind: 'uploads'; requests: number }
  | { kind: 'walk'; peakRssMb: number; found: number };

const send = (m: Message) => process.send!(m);

/** The emulator, in its own process: its stored uploads are not the daemon's memory. */
async function emulatorRole() {
  const { startEmulator } = await import('../emulator/index.ts');
  const { createNodeClient } = await import('@docex/shared/node');
  const { templateWithField } = await import('../test/support/templates.ts');
  const emulator = await startEmulator({
    port: 0,
    taskDelayMs: TASK_MS,
    companies: [{ name: 'B', apiKey: KEY }],
  });
  const setup = createNodeClient({ baseUrl: emulator.url, apiKey: KEY });
  const folder = await setup.createFolder({ name: 'Backlog' });
  const template = await templateWithField(setup, folder.id, 'Backlog');
  emulator.resetStats();
  process.on('message', () =>
    send({ kind: 'uploads', requests: emulator.stats().requestsByOperation.upload_file ?? 0 }),
  );
  send({ kind: 'emulator', url: emulator.url, templateId: template.id });
  process.on('disconnect', () => void emulator.stop().then(() => process.exit(0)));
}

/** docex-sync with the default settings on the tree, until the parent disconnects. */
async function daemonRole(tree: string, url: string, templateId: number) {
  const { startDaemon } = await import('../daemon/src/app/daemon.ts');
  const { daemonParts } = await import('./parts.ts');
  const dir = process.env.DOCEX_BENCH_BACKLOG_DIR!;
  const file = join(dir, 'docex-sync.yaml');
  await writeFile(
    file,
    [
      'state_db: ./state/sync.db',
      `api: { base_url: "${url}" }`,
      'watch:',
      `  - path: ${tree}`,
      '    recursive: true',
      `    template_id: ${templateId}`,
      '    output: ./results',
      '    processed_dir: ./processed',
      '    failed_dir: ./failed',
      'log_level: warn',
    ].join('\n'),
  );
  const { config, log, client } = await daemonParts(file, url, KEY);
  if (SNAPSHOT_MB > 0) {
    const { writeHeapSnapshot } = await import('node:v8');
    const watchRss = setInterval(() => {
      if (process.memoryUsage().rss / MB < SNAPSHOT_MB) return;
      clearInterval(watchRss);
      const { rss, heapTotal, heapUsed, external, arrayBuffers } = process.memoryUsage();
      const mb = (n: number) => (n / MB).toFixed(0);
      const file = writeHeapSnapshot(join(tmpdir(), `docex-backlog-${process.pid}.heapsnapshot`));
      console.error(
        `backlog bench: heap snapshot at ${mb(rss)} MB RSS (heap ${mb(heapUsed)} used of ${mb(heapTotal)}, external ${mb(external)}, array buffers ${mb(arrayBuffers)}): ${file}`,
      );
    }, 250);
  }
  const running = startDaemon(config, client, log);
  process.on('disconnect', () => void running.then((r) => r.stop()).then(() => process.exit(0)));
}

/** scale.bench's bare walk: readdir, lstat in batches of 64, one fs.watch per folder; its peak RSS. */
async function walkRole(tree: string) {
  const { bareWalk } = await import('./parts.ts');
  let peak = process.memoryUsage().rss;
  const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const { found, watchers } = await bareWalk(tree);
  clearInterval(sample);
  for (const w of watchers) w.close();
  send({ kind: 'walk', peakRssMb: Math.max(peak, process.memoryUsage().rss) / MB, found });
  process.disconnect();
}

const role = process.env.DOCEX_BENCH_BACKLOG_ROLE;
if (role && process.send) {
  if (role === 'emulator') await emulatorRole();
  else if (role === 'walk') await walkRole(process.env.DOCEX_BENCH_BACKLOG_TREE!);
  else
    await daemonRole(
      process.env.DOCEX_BENCH_BACKLOG_TREE!,
      process.env.DOCEX_BENCH_BACKLOG_URL!,
      Number(process.env.DOCEX_BENCH_BACKLOG_TEMPLATE),
    );
}

function child(role: string, env: Record<string, string>, execArgv: string[] = []) {
  return fork(fileURLToPath(import.meta.url), [], {
    env: { ...process.env, ...env, DOCEX_BENCH_BACKLOG_ROLE: role },
    execArgv,
  });
}

const next = (c: ChildProcess, kind: Message['kind']) =>
  new Promise<Message>((resolve, reject) => {
    const on = (m: Message) => m.kind === kind && (c.off('message', on), resolve(m));
    c.on('message', on);
    c.once('exit', (code) => reject(new Error(`backlog bench: ${kind} child exited with ${code}`)));
  });

/** VmRSS and VmHWM of a process, in MB. */
function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** Rows per state, read after the daemon stopped (as store/file-counts.ts counts them). */
function countsOf(file: string): Counts {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT state, COUNT(*) AS n FROM files
         WHERE state IN ('discovered','stable','uploading','uploaded','done') GROUP BY state
         UNION ALL SELECT state, SUM(n) FROM rest_tallies GROUP BY state`,
      )
      .all() as Array<{ state: string; n: number }>;
    const counts: Counts = {};
    for (const r of rows) counts[r.state] = (counts[r.state] ?? 0) + r.n;
    return counts;
  } finally {
    db.close();
  }
}

/** Files the run moved out of the tree (processed_dir, failed_dir) go back, so the tree can be reused. */
async function moveBack(from: string, tree: string) {
  if (!existsSync(from)) return;
  for (const entry of await readdir(from, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const target = join(tree, relative(from, path));
    mkdirSync(dirname(target), { recursive: true });
    await rename(path, target);
  }
}

export default async function backlogBench(): Promise<BenchRow[]> {
  const given = process.env.DOCEX_BENCH_BACKLOG_TREE;
  const tree = given ?? (await mkdtemp(join(tmpdir(), 'docex-backlog-tree-')));
  const dir = await mkdtemp(join(tmpdir(), 'docex-backlog-'));
  const emulator = child('emulator', {});
  let daemon: ChildProcess | undefined;
  try {
    if (!given)
      for (let i = 0; i < FILES; i++) {
        const sub = join(tree, `d${Math.floor(i / PER_DIR)}`);
        if (i % PER_DIR === 0) mkdirSync(sub);
        writeFileSync(join(sub, `f${i}.txt`), `file ${i}\n`);
      }
    const walker = child('walk', { DOCEX_BENCH_BACKLOG_TREE: tree });
    const walk = (await next(walker, 'walk')) as Extract<Message, { kind: 'walk' }>;
    if (walk.found !== FILES)
      throw new Error(`the tree holds ${walk.found} files, not ${FILES} (DOCEX_BENCH_BACKLOG_FILES)`);
    const { url, templateId } = (await next(emulator, 'emulator')) as Extract<Message, { kind: 'emulator' }>;
    daemon = child(
      'daemon',
      {
        DOCEX_BENCH_BACKLOG_TREE: tree,
        DOCEX_BENCH_BACKLOG_URL: url,
        DOCEX_BENCH_BACKLOG_TEMPLATE: String(templateId),
        DOCEX_BENCH_BACKLOG_DIR: dir,
      },
      NODE_FLAGS,
    );
    daemon.stderr?.pipe(process.stderr);
    const pid = daemon.pid!;
    let peakRss = 0;
    const t0 = performance.now();
    // Sampled from outside every second (VmHWM catches what falls between samples).
    while (performance.now() - t0 < SECONDS * 1000) {
      peakRss = Math.max(peakRss, memoryOf(pid).rss);
      await delay(1000);
    }
    const { hwm } = memoryOf(pid);
    const stopped = new Promise((resolve) => daemon!.once('exit', resolve));
    daemon.disconnect();
    await stopped;
    const counts = countsOf(join(dir, 'state', 'sync.db'));
    emulator.send('uploads');
    const { requests } = (await next(emulator, 'uploads')) as Extract<Message, { kind: 'uploads' }>;
    const sum = (...states: string[]) => states.reduce((n, s) => n + (counts[s] ?? 0), 0);
    const n = FILES.toLocaleString('en');
    return [
      {
        measure: `docex-sync: peak RSS over the first ${SECONDS} s, ${n} files waiting, default settings`,
        value: Math.max(hwm, peakRss),
        unit: 'MB',
        note: `goal < 300 (at 1,000,000, over 600 s); VmHWM ${hwm.toFixed(0)}, sampled VmRSS peak ${peakRss.toFixed(0)}; ${(Math.max(hwm, peakRss) / walk.peakRssMb).toFixed(1)}x the bare walk; node flags: ${NODE_FLAGS.join(' ') || 'none'}`,
      },
      {
        measure: 'bare walk + fs.watch per folder: peak RSS (the baseline)',
        value: walk.peakRssMb,
        unit: 'MB',
      },
      {
        measure: '  files recorded',
        value: sum('discovered', 'stable', 'uploading', 'uploaded', 'done', 'archived', 'failed'),
        unit: 'files',
      },
      {
        measure: '  files uploaded (a task id stored)',
        value: sum('uploaded', 'done', 'archived'),
        unit: 'files',
      },
      { measure: '  files done (archived or failed)', value: sum('archived', 'failed'), unit: 'files' },
      { measure: '  upload requests answered', value: requests, unit: 'req' },
    ];
  } finally {
    daemon?.kill('SIGKILL');
    if (emulator.connected) emulator.disconnect();
    await moveBack(join(dir, 'processed'), tree);
    await moveBack(join(dir, 'failed'), tree);
    await rm(dir, { recursive: true, force: true });
    if (!given) await rm(tree, { recursive: true, force: true });
  }
}
