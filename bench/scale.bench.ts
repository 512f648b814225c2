/**
 * Scale: 100,000 files already in a watched folder (100 sub-folders of 1,000) when docex-sync
 * starts. Measured in fresh child processes:
 * - docex-sync: time until every file is recorded in the state DB and watching is ready, peak RSS,
 *   then CPU over IDLE_S seconds with those 100k files waiting (stable_ms is an hour, so nothing
 *   is uploaded) and a rescan every RESCAN_MS, and the peak RSS of the whole run (VmHWM);
 * - bare chokidar on the same tree: time to "ready", peak RSS, CPU over IDLE_S seconds (docex-sync
 *   used it until it kept a tree of every file in memory; polling mode still does);
 * - the least docex-sync's watcher does: a walk (readdir, lstat in batches) with one fs.watch per
 *   folder made before the folder is read, nothing kept per file; the same three figures;
 * - docex-sync idle with 100k archived and 100k failed rows in its DB and an empty inbox;
 * - docex-sync idle with the 100k files at rest in place (`on_success: keep`, archived rows with
 *   their size, mtime and inode), rescans every RESCAN_MS: the rescan's cost when nothing changed.
 * Idle figures are the CPU seconds the measured process consumed over the window (utime + stime of
 * /proc/self/stat: on a shared, loaded machine a percentage of wall-clock time alone says little),
 * and that as a percentage of the window.
 * DOCEX_BENCH_SCALE_CASES=kept,chokidar runs only those cases (record, chokidar, walk, rested, kept).
 * No server is needed: nothing is uploaded.
 */
import { fork } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { BenchRow } from './run.ts';

const FILES = Number(process.env.DOCEX_BENCH_SCALE_FILES ?? 100_000);
const IDLE_S = Number(process.env.DOCEX_BENCH_IDLE_S ?? 60);
const PER_DIR = 1000;
const CASES = process.env.DOCEX_BENCH_SCALE_CASES?.split(',').map((c) => c.trim());
/** kept: seconds between the start-up scan's end and the idle window (the start-up's garbage collected first). */
const SETTLE_S = Number(process.env.DOCEX_BENCH_SETTLE_S ?? 0);
/** Rescans in the idle window: 3 a minute, 3 times the default rate. */
const RESCAN_MS = 20_000;
const MB = 1024 * 1024;

interface CaseResult {
  seconds?: number;
  peakRssMb?: number;
  /** The kernel's high-water mark (VmHWM) at the end of the idle window: peak RSS of the whole run. */
  peakRssWithIdleMb?: number;
  idleCpuPercent: number;
  /** CPU seconds (user + system) the process consumed over the idle window, from /proc/self/stat. */
  idleCpuSeconds: number;
  /** The idle window's length (s). */
  idleSeconds: number;
  /** kept: one rescan that reads every folder, asked for after the idle window (CPU s, wall s). */
  fullRescanCpuSeconds?: number;
  fullRescanSeconds?: number;
}

function rssPeak() {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  return () => {
    clearInterval(timer);
    return Math.max(peak, process.memoryUsage().rss) / MB;
  };
}

function highWaterMb(): number {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return hwm ? Number(hwm[1]) / 1024 : NaN;
}

/** utime + stime of this process in seconds, as the kernel counts them (clock ticks of 10 ms). */
function procCpuSeconds(): number {
  // The command name (field 2) may hold spaces: the fields counted from the closing parenthesis.
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const TICKS_PER_S = 100; // USER_HZ on Linux
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
}

async function idleCpu(): Promise<Pick<CaseResult, 'idleCpuPercent' | 'idleCpuSeconds' | 'idleSeconds'>> {
  const start = procCpuSeconds();
  const t0 = performance.now();
  await delay(IDLE_S * 1000);
  const idleCpuSeconds = procCpuSeconds() - start;
  const idleSeconds = (performance.now() - t0) / 1000;
  return { idleCpuSeconds, idleSeconds, idleCpuPercent: (idleCpuSeconds / idleSeconds) * 100 };
}

async function daemonConfig(dir: string, tree: string, extra: string[] = []) {
  const { loadConfig } = await import('../daemon/src/config/config.ts');
  const file = join(dir, 'docex-sync.yaml');
  await writeFile(
    file,
    [
      'state_db: ./state/sync.db',
      'api: { base_url: "http://127.0.0.1:9" }',
      'watch:',
      `  - path: ${tree}`,
      '    recursive: true',
      '    template_id: 1',
      '    output: ./results',
      '    processed_dir: ./processed',
      '    failed_dir: ./failed',
      '    stable_ms: 3600000',
      `    rescan_interval_ms: ${RESCAN_MS}`,
      ...extra.map((line) => `    ${line}`),
      'log_level: info',
    ].join('\n'),
  );
  return loadConfig(file);
}

const loadModules = () =>
  Promise.all([
    import('../daemon/src/app/daemon.ts'),
    import('../daemon/src/common/logging.ts'),
    import('@docex/shared/node'),
    import('../daemon/src/config/config.ts'),
  ]);

async function startSync(dir: string, tree: string, extra: string[] = [], level = 'info') {
  const { startDaemon } = await import('../daemon/src/app/daemon.ts');
  const { createLogger } = await import('../daemon/src/common/logging.ts');
  const { createNodeClient } = await import('@docex/shared/node');
  const config = await daemonConfig(dir, tree, extra);
  const lines: string[] = [];
  const log = createLogger(level, {
    pretty: false,
    destination: new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }),
  });
  const client = createNodeClient({ baseUrl: config.api.base_url!, apiKey: 'bench-key-0123456789' });
  return { running: await startDaemon(config, client, log), lines };
}

const cases = {
  async record(dir: string, tree: string): Promise<CaseResult> {
    await loadModules(); // loading code is not part of the scan
    const peak = rssPeak();
    const t0 = performance.now();
    const { running, lines } = await startSync(dir, tree);
    const recorded = running.db.fileCounts.counts().discovered;
    const seconds = (performance.now() - t0) / 1000;
    const peakRssMb = peak();
    if (recorded !== FILES) throw new Error(`recorded ${recorded} of ${FILES}`);
    if (lines.length > 20) throw new Error(`${lines.length} log lines at info for a start-up scan`);
    const idle = await idleCpu();
    const peakRssWithIdleMb = highWaterMb();
    await running.stop();
    return { seconds, peakRssMb, peakRssWithIdleMb, ...idle };
  },
  async chokidar(_dir: string, tree: string): Promise<CaseResult> {
    const { default: chokidar } = await import('chokidar');
    const peak = rssPeak();
    const t0 = performance.now();
    let added = 0;
    const watcher = chokidar.watch(tree).on('add', () => added++);
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    const seconds = (performance.now() - t0) / 1000;
    const peakRssMb = peak();
    if (added !== FILES) throw new Error(`chokidar reported ${added} of ${FILES}`);
    const idle = await idleCpu();
    await watcher.close();
    return { seconds, peakRssMb, ...idle };
  },
  async walk(_dir: string, tree: string): Promise<CaseResult> {
    const { bareWalk } = await import('./parts.ts');
    const peak = rssPeak();
    const t0 = performance.now();
    const { found, watchers } = await bareWalk(tree);
    const seconds = (performance.now() - t0) / 1000;
    const peakRssMb = peak();
    if (found !== FILES) throw new Error(`the walk found ${found} of ${FILES}`);
    const idle = await idleCpu();
    for (const w of watchers) w.close();
    return { seconds, peakRssMb, ...idle };
  },
  async rested(dir: string): Promise<CaseResult> {
    const { StateDb } = await import('../daemon/src/store/state.ts');
    const { NEVER } = await import('../daemon/src/domain/lifecycle.ts');
    const empty = join(dir, 'empty-inbox');
    mkdirSync(empty);
    const config = await daemonConfig(dir, empty);
    const db = new StateDb(config.state_db);
    // Inserted in flight, then brought to rest, as the daemon does (the tally of rows at rest counts
    // them on the way: see rest_tallies in store/state.ts).
    const insert = db.db.prepare(
      `INSERT INTO files (watch, path, rel, size, state, outcome, finalized, next_at, discovered_at, updated_at)
       VALUES (?, ?, ?, 10, 'discovered', ?, ?, ${NEVER}, 1, 1)`,
    );
    db.db.transaction(() => {
      for (let i = 0; i < FILES; i++) {
        insert.run(empty, join(dir, 'processed', `a${i}.pdf`), `a${i}.pdf`, 'processed', 0);
        insert.run(empty, join(dir, 'failed', `f${i}.pdf`), `f${i}.pdf`, 'failed', 1);
      }
      db.db.exec(`UPDATE files SET state = CASE outcome WHEN 'processed' THEN 'archived' ELSE 'failed' END`);
    })();
    db.close();
    const { running } = await startSync(dir, empty);
    await delay(1000);
    const idle = await idleCpu();
    await running.stop();
    return idle;
  },
  /** The files kept in place after processing (`on_success: keep`): archived rows that name them. */
  async kept(dir: string, tree: string): Promise<CaseResult> {
    const { NEVER } = await import('../daemon/src/domain/lifecycle.ts');
    await loadModules();
    const keep = ['on_success: keep'];
    // Recorded by a start-up scan (real size, mtime and inode), then brought to rest as processing
    // would: archived, kept in place.
    const first = await startSync(dir, tree, keep);
    if (first.running.db.fileCounts.counts().discovered !== FILES) throw new Error('not every file recorded');
    await first.running.stop();
    const { StateDb } = await import('../daemon/src/store/state.ts');
    const db = new StateDb(join(dir, 'state', 'sync.db'));
    db.db.transaction(() => {
      db.db.exec(`UPDATE files SET outcome = 'kept', next_at = ${NEVER}`);
      db.db.exec(`UPDATE files SET state = 'archived'`);
    })();
    db.close();
    const t0 = performance.now();
    // debug: the rescan's line says whether it read every folder (at info only when it found files).
    const { running, lines } = await startSync(dir, tree, keep, 'debug');
    const seconds = (performance.now() - t0) / 1000;
    const counts = running.db.fileCounts.counts();
    if (counts.archived !== FILES || counts.discovered !== 0)
      throw new Error(`kept files taken as new: ${JSON.stringify(counts)}`);
    await delay(SETTLE_S * 1000);
    const idle = await idleCpu();
    if (running.db.fileCounts.counts().discovered !== 0) throw new Error('a rescan took a kept file as new');
    // What the rescan that reads every folder (once per full_rescan_interval_ms) costs: the end of
    // a disk-full pause asks every watch for one.
    const fullLines = () =>
      lines.filter((l) => l.includes('"msg":"rescan"') && l.includes('"full":true')).length;
    const before = fullLines();
    const cpu0 = procCpuSeconds();
    const wall0 = performance.now();
    running.pipeline.emit('disk-resumed');
    while (fullLines() === before) await delay(50);
    const fullRescanCpuSeconds = procCpuSeconds() - cpu0;
    const fullRescanSeconds = (performance.now() - wall0) / 1000;
    await running.stop();
    return { seconds, ...idle, fullRescanCpuSeconds, fullRescanSeconds };
  },
};
type CaseName = keyof typeof cases;

if (process.env.DOCEX_BENCH_CASE && process.send) {
  const dir = await mkdtemp(join(tmpdir(), 'docex-scale-case-'));
  try {
    const name = process.env.DOCEX_BENCH_CASE as CaseName;
    process.send(await cases[name](dir, process.env.DOCEX_BENCH_TREE!));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.disconnect();
}

function inChild(name: CaseName, tree: string): Promise<CaseResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, DOCEX_BENCH_CASE: name, DOCEX_BENCH_TREE: tree },
      execArgv: [],
    });
    child.once('message', (m) => resolve(m as CaseResult));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`scale ${name} exited with ${code}`)));
  });
}

export default async function scaleBench(): Promise<BenchRow[]> {
  const tree = await mkdtemp(join(tmpdir(), 'docex-scale-'));
  try {
    for (let i = 0; i < FILES; i++) {
      const sub = join(tree, `d${Math.floor(i / PER_DIR)}`);
      if (i % PER_DIR === 0) mkdirSync(sub);
      writeFileSync(join(sub, `f${i}.txt`), `file ${i}\n`);
    }
    const run = (name: CaseName) => (!CASES || CASES.includes(name) ? inChild(name, tree) : undefined);
    const sync = await run('record');
    const bare = await run('chokidar');
    const walk = await run('walk');
    const rested = await run('rested');
    const kept = await run('kept');
    const n = FILES.toLocaleString('en');
    const idleNote = (r: CaseResult) =>
      `${r.idleCpuSeconds.toFixed(2)} CPU s in ${r.idleSeconds.toFixed(0)} s` +
      (bare && r !== bare
        ? `; ${(r.idleCpuSeconds / Math.max(bare.idleCpuSeconds, 0.01)).toFixed(1)}x bare chokidar (${bare.idleCpuSeconds.toFixed(2)} CPU s${bare.idleCpuSeconds < 0.01 ? ', taken as 0.01' : ''})`
        : '');
    const rows: BenchRow[] = [];
    if (sync)
      rows.push(
        {
          measure: `docex-sync: ${n} files recorded, watching ready`,
          value: sync.seconds!,
          unit: 's',
          note: `goal < ${(1.5 * FILES) / 100_000} s (issue #22: 1,000,000 in < 15 s, so linear at 1.5 s per 100,000)`,
        },
        {
          measure: '  seconds per 100,000 files (compare runs at two sizes: linear if it stays put)',
          value: (sync.seconds! * 100_000) / FILES,
          unit: 's',
          note: walk
            ? `the bare walk: ${((walk.seconds! * 100_000) / FILES).toFixed(2)} s; ratio ${(sync.seconds! / walk.seconds!).toFixed(2)}x`
            : undefined,
        },
      );
    if (bare) rows.push({ measure: 'bare chokidar: ready', value: bare.seconds!, unit: 's' });
    if (walk)
      rows.push({ measure: 'bare walk + fs.watch per folder: done', value: walk.seconds!, unit: 's' });
    if (sync)
      rows.push(
        {
          measure: 'docex-sync: peak RSS',
          value: sync.peakRssMb!,
          unit: 'MB',
          note: 'goal < 300 (at 1,000,000)',
        },
        {
          measure: `docex-sync: peak RSS with ${IDLE_S} s of waiting after (a rescan every ${RESCAN_MS / 1000} s)`,
          value: sync.peakRssWithIdleMb!,
          unit: 'MB',
          note: 'goal < 300 (at 1,000,000)',
        },
      );
    if (bare) rows.push({ measure: 'bare chokidar: peak RSS', value: bare.peakRssMb!, unit: 'MB' });
    if (walk)
      rows.push({ measure: 'bare walk + fs.watch per folder: peak RSS', value: walk.peakRssMb!, unit: 'MB' });
    if (sync)
      rows.push({
        measure: `docex-sync: idle CPU over ${IDLE_S} s, ${n} files waiting, rescans included`,
        value: sync.idleCpuPercent,
        unit: '%',
        note: `goal < 1; ${idleNote(sync)}`,
      });
    if (bare)
      rows.push({
        measure: `bare chokidar: idle CPU over ${IDLE_S} s`,
        value: bare.idleCpuPercent,
        unit: '%',
        note: idleNote(bare),
      });
    if (walk)
      rows.push({
        measure: `bare walk + fs.watch per folder: idle CPU over ${IDLE_S} s`,
        value: walk.idleCpuPercent,
        unit: '%',
        note: idleNote(walk),
      });
    if (rested)
      rows.push({
        measure: `docex-sync: idle CPU over ${IDLE_S} s, ${n} archived + ${n} failed rows`,
        value: rested.idleCpuPercent,
        unit: '%',
        note: `goal < 1; ${idleNote(rested)}`,
      });
    if (kept)
      rows.push(
        {
          measure: `docex-sync: ${n} files kept in place (on_success: keep), start-up scan`,
          value: kept.seconds!,
          unit: 's',
        },
        {
          measure: `docex-sync: idle CPU over ${IDLE_S} s, ${n} files kept in place, a rescan every ${RESCAN_MS / 1000} s`,
          value: kept.idleCpuPercent,
          unit: '%',
          note: `goal < 0.2 (at 1,000,000); ${idleNote(kept)}`,
        },
        ...(kept.fullRescanCpuSeconds === undefined
          ? []
          : [
              {
                measure: `docex-sync: one rescan reading every folder, ${n} files kept in place`,
                value: kept.fullRescanCpuSeconds,
                unit: 'CPU s',
                note: `${kept.fullRescanSeconds!.toFixed(1)} s wall; once an hour by default (full_rescan_interval_ms): ${((kept.fullRescanCpuSeconds / 3600) * 100).toFixed(3)} % of an hour`,
              },
            ]),
      );
    return rows;
  } finally {
    await rm(tree, { recursive: true, force: true });
  }
}
