/**
 * Ingest: N small files dropped into a watched folder until every result is written and the file
 * is moved, docex-sync against a plain `fetch` loop doing the same work (upload, poll, fetch the
 * data, write JSON + two CSV, move the file) at the same concurrency, against the same fast local
 * server (bench/api-server.ts), and against that loop with the guarantees added (see baseline()).
 * Each run is a fresh child process; the three take turns, REPS times (DOCEX_BENCH_ONLY=daemon,durable
 * runs only those). Timed from the first file dropped to the last one moved; CPU is the child's own.
 */
import { fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { daemonNodeFlags } from '../test/support/daemon-heap.ts';
import type { BenchRow } from './run.ts';

const FILES = Number(process.env.DOCEX_BENCH_FILES ?? 2000);
const REPS = Number(process.env.DOCEX_BENCH_REPS ?? 3);
const CONCURRENCY = 4;
const KEY = 'bench-api-key-0123456789';

interface RunResult {
  seconds: number;
  cpuMs: number;
}

/**
 * With DOCEX_BENCH_PROFILE=dir, a CPU profile of the measured window only (from the drop to the
 * last file moved; not staging, start-up or stop) is written to dir/<case>-<pid>.cpuprofile.
 */
async function profiler() {
  const dir = process.env.DOCEX_BENCH_PROFILE;
  if (!dir) return { stop: async () => undefined };
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      await mkdir(dir, { recursive: true });
      const name = `${process.env.DOCEX_BENCH_CASE}-${process.pid}.cpuprofile`;
      await writeFile(join(dir, name), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

async function stage(dir: string) {
  await mkdir(join(dir, 'staging'), { recursive: true });
  for (const d of ['inbox', 'results', 'processed', 'failed']) await mkdir(join(dir, d), { recursive: true });
  const body = 'Invoice number: 1\nTotal: 10,00\n'.padEnd(2048, '.');
  for (let i = 0; i < FILES; i++) await writeFile(join(dir, 'staging', `f${i}.txt`), `${i}\n${body}`);
}

/** Moves every staged file into the inbox (the "drop"). */
async function drop(dir: string) {
  for (const name of await readdir(join(dir, 'staging')))
    await rename(join(dir, 'staging', name), join(dir, 'inbox', name));
}

/**
 * The plain loop. With `durable`, the same loop plus the least a program needs for docex-sync's
 * guarantees (docs/reference/results.md, "The delivery guarantee"), written as plainly: a SQLite row per file
 * (WAL, synchronous=NORMAL) committed as `uploading` before the upload leaves, the task id committed
 * when it comes, `archived` committed after the move; the file hashed (the same bytes are uploaded
 * once); each result file written to a temp file, fsynced and renamed. What this costs over the
 * plain loop is the price of the guarantees, not of docex-sync.
 */
async function baseline(dir: string, url: string, durable: boolean) {
  const { generalCsv, linesCsv } = await import('../daemon/src/outputs/results.ts');
  const state = durable ? await durableState(dir) : undefined;
  const write = durable ? writeDurably : writeFile;
  const headers = { authorization: `Bearer ${KEY}` };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- a plain loop, as users write it
  const getJson = async (path: string): Promise<any> => (await fetch(`${url}${path}`, { headers })).json();
  const inbox = join(dir, 'inbox');
  const one = async (name: string) => {
    const source = join(inbox, name);
    const bytes = await readFile(source);
    const id = state?.uploading(source, createHash('sha256').update(bytes).digest('hex'));
    const form = new FormData();
    form.append('files', new Blob([bytes]), name);
    const up = (await (
      await fetch(`${url}/v1/upload_file/?template_id=1`, { method: 'POST', body: form, headers })
    ).json()) as { task_id: string };
    if (id !== undefined) state?.uploaded(id, up.task_id);
    let task;
    for (;;) {
      task = await getJson(`/v1/fetch_tasks_results/?task_id=${up.task_id}`);
      if (task.status !== 'IN PROGRESS') break;
      await new Promise((r) => setTimeout(r, 1));
    }
    const doc = await getJson(`/v1/fetch_document_data/?document_id=${task.document_id}`);
    const base = join(dir, 'results', `${name}.doc-${doc.document_id}`);
    await write(`${base}.fields.csv`, generalCsv(doc, source, { verdict: null, score: null }));
    let lines = '';
    for await (const piece of linesCsv(doc)) lines += piece;
    await write(`${base}.lines.csv`, lines);
    await write(`${base}.json`, JSON.stringify({ document: doc, task, source_file: source }, null, 2));
    await rename(source, join(dir, 'processed', name));
    if (id !== undefined) state?.archived(id, doc.document_id);
  };
  const profile = await profiler();
  const started = performance.now();
  const cpu = process.cpuUsage();
  await drop(dir);
  const names = await readdir(inbox);
  let next = 0;
  const worker = async () => {
    while (next < names.length) await one(names[next++]!);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const result = finish(started, cpu);
  await profile.stop();
  state?.close();
  return result;
}

async function durableState(dir: string) {
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(join(dir, 'loop.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT NOT NULL, sha256 TEXT, state TEXT NOT NULL,
    task_id TEXT, document_id INTEGER, updated_at INTEGER NOT NULL)`);
  const insert = db.prepare(
    `INSERT INTO files (path, sha256, state, updated_at) VALUES (?, ?, 'uploading', ?)`,
  );
  const uploaded = db.prepare(
    `UPDATE files SET state = 'uploaded', task_id = ?, updated_at = ? WHERE id = ?`,
  );
  const archived = db.prepare(
    `UPDATE files SET state = 'archived', document_id = ?, updated_at = ? WHERE id = ?`,
  );
  return {
    uploading: (path: string, sha256: string) => Number(insert.run(path, sha256, Date.now()).lastInsertRowid),
    uploaded: (id: number, taskId: string) => void uploaded.run(taskId, Date.now(), id),
    archived: (id: number, documentId: number) => void archived.run(documentId, Date.now(), id),
    close: () => db.close(),
  };
}

async function writeDurably(path: string, data: string) {
  const temp = `${path}.tmp`;
  const handle = await open(temp, 'w');
  try {
    await handle.writeFile(data);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temp, path);
}

async function daemon(dir: string, url: string) {
  const { startDaemon } = await import('../daemon/src/app/daemon.ts');
  const { daemonParts } = await import('./parts.ts');
  const configFile = join(dir, 'docex-sync.yaml');
  await writeFile(
    configFile,
    [
      'state_db: ./state/sync.db',
      `api: { base_url: "${url}", concurrency: ${CONCURRENCY}, requests_per_second: 1000000, timeout_ms: 30000 }`,
      'poll: { interval_ms: 1, max_interval_ms: 10 }',
      'watch:',
      '  - path: ./inbox',
      '    template_id: 1',
      '    output: ./results',
      '    processed_dir: ./processed',
      '    failed_dir: ./failed',
      '    stable_ms: 0',
      '    rescan_interval_ms: 3600000',
      'log_level: warn',
    ].join('\n'),
  );
  const { config, log, client } = await daemonParts(configFile, url, KEY);
  const running = await startDaemon(config, client, log);
  let archived = 0;
  const all = new Promise<void>((resolve) =>
    running.pipeline.on('file-archived', () => ++archived === FILES && resolve()),
  );
  const failed = new Promise<never>((_, reject) =>
    running.pipeline.on('file-failed', (row) => reject(new Error(`${row.path}: ${row.reason}`))),
  );
  const profile = await profiler();
  const started = performance.now();
  const cpu = process.cpuUsage();
  await drop(dir);
  await Promise.race([all, failed]);
  const result = finish(started, cpu);
  await profile.stop();
  await running.stop();
  return result;
}

function finish(started: number, cpu: NodeJS.CpuUsage): RunResult {
  const used = process.cpuUsage(cpu);
  return { seconds: (performance.now() - started) / 1000, cpuMs: (used.user + used.system) / 1000 };
}

type Case = 'baseline' | 'durable' | 'daemon';
const LABELS: Record<Case, string> = {
  baseline: 'plain fetch loop',
  durable: 'plain loop + the guarantees',
  daemon: 'docex-sync',
};

function inChild(name: Case, url: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, DOCEX_BENCH_CASE: name, DOCEX_BENCH_URL: url },
      // The daemon with the young-generation cap the installed `docex-sync run` starts with
      // (daemon/bin/daemon-heap.js); the loops as Node starts them.
      execArgv: name === 'daemon' ? daemonNodeFlags(process.env.NODE_OPTIONS) : [],
    });
    child.once('message', (m) => resolve(m as RunResult));
    child.once('error', reject);
    child.once('exit', (code) => code !== 0 && reject(new Error(`ingest ${name} exited with ${code}`)));
  });
}

if (process.env.DOCEX_BENCH_CASE && process.send) {
  const dir = await mkdtemp(join(tmpdir(), 'docex-ingest-'));
  try {
    await stage(dir);
    const url = process.env.DOCEX_BENCH_URL!;
    const which = process.env.DOCEX_BENCH_CASE as Case;
    const result =
      which === 'daemon' ? await daemon(dir, url) : await baseline(dir, url, which === 'durable');
    const done = (await readdir(join(dir, 'processed'))).length;
    if (done !== FILES) throw new Error(`only ${done} of ${FILES} files processed`);
    process.send(result);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.disconnect();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export default async function ingestBench(): Promise<BenchRow[]> {
  const server = fork(fileURLToPath(new URL('./api-server.ts', import.meta.url)), [], { execArgv: [] });
  const port = await new Promise<number>((resolve) => server.once('message', (m) => resolve(m as number)));
  const url = `http://127.0.0.1:${port}`;
  const cases: Case[] = ['baseline', 'durable', 'daemon'];
  const runs: Record<Case, RunResult[]> = { baseline: [], durable: [], daemon: [] };
  const only = process.env.DOCEX_BENCH_ONLY?.split(',');
  try {
    for (let i = 0; i < REPS; i++) {
      // A different case goes first in each repetition, so none always runs on a cold or warm machine.
      const order = cases.map((_, k) => cases[(k + i) % cases.length]!);
      for (const name of order) if (!only || only.includes(name)) runs[name].push(await inChild(name, url));
    }
  } finally {
    server.kill();
  }
  const rate = (r: RunResult) => FILES / r.seconds;
  const rows: BenchRow[] = [];
  for (const name of cases) {
    if (runs[name].length === 0) continue;
    const rates = runs[name].map(rate);
    rows.push(
      {
        measure: `${LABELS[name]}: files/s, median`,
        value: median(rates),
        unit: 'files/s',
        note: `${runs[name].length} runs of ${FILES} files, concurrency ${CONCURRENCY}`,
      },
      { measure: `${LABELS[name]}: files/s, min`, value: Math.min(...rates), unit: 'files/s' },
      {
        measure: `${LABELS[name]}: CPU per file, median`,
        value: median(runs[name].map((r) => r.cpuMs / FILES)),
        unit: 'ms',
      },
    );
  }
  const ratio = (a: Case, b: Case, measure: string, note?: string) => {
    if (runs[a].length && runs[b].length)
      rows.push({ measure, value: median(runs[a].map(rate)) / median(runs[b].map(rate)), unit: 'x', note });
  };
  const verdict = (met: boolean) => (met ? 'met' : 'missed');
  if (runs.daemon.length && runs.baseline.length) {
    const files = median(runs.daemon.map(rate)) / median(runs.baseline.map(rate));
    rows.push({
      measure: 'docex-sync / plain loop (median files/s)',
      value: files,
      unit: 'x',
      note: `goal >= 0.90: ${verdict(files >= 0.9)}`,
    });
    const cpu = (c: Case) => median(runs[c].map((r) => r.cpuMs / FILES));
    const cpuRatio = cpu('daemon') / cpu('baseline');
    rows.push({
      measure: 'docex-sync / plain loop (median CPU per file)',
      value: cpuRatio,
      unit: 'x',
      note: `goal <= 2.0: ${verdict(cpuRatio <= 2)}`,
    });
  }
  ratio('durable', 'baseline', 'plain loop + guarantees / plain loop', 'the price of the guarantees alone');
  ratio('daemon', 'durable', 'docex-sync / plain loop + guarantees');
  return rows;
}
