/**
 * Peak resident memory of the **installed** package's commands moving a big file (issue #22: under
 * 100 MB for `docex`, under 120 MB for `docex-sync` uploading a 2 GiB file). docex-sync is packed
 * as docs/daemon.md says (test/e2e/pack.ts: a plain `npm pack` of daemon/ in a clean copy) and
 * installed with `npm install --global` into a scratch prefix; the file (DOCEX_BENCH_MB MiB,
 * default 2048, sparse) goes to bench/api-server.ts, which reads and drops what it is sent.
 *
 * - `docex tasks upload FILE`, its peak from /usr/bin/time (VmHWM at exit), beside `node -e 0` and
 *   curl sending the same file;
 * - `docex-sync run` with the file dropped into its watched folder (renamed in whole): hashed,
 *   uploaded, its results written and the file archived; its VmHWM read from /proc once the file is
 *   archived, then it is stopped (SIGTERM, exit 0 expected).
 *
 * DOCEX_BENCH_REPS repetitions (default 1). Nothing is asserted: figures with their goals.
 */
import { execFile, fork, spawn } from 'node:child_process';
import { mkdir, mkdtemp, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { installDocexSync } from './installed.ts';
import type { BenchRow } from './run.ts';

const run = promisify(execFile);
const MB = 1024 * 1024;
const SIZE_MB = Number(process.env.DOCEX_BENCH_MB ?? 2048);
const REPS = Number(process.env.DOCEX_BENCH_REPS ?? 1);
const KEY = 'bench-installed-key-0123456789';

async function sparseFile(path: string, mb: number) {
  const handle = await open(path, 'w');
  await handle.truncate(mb * MB);
  await handle.close();
}

/** A command's peak RSS in MB and its wall time, through /usr/bin/time. */
async function peakOf(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const started = performance.now();
  const { stderr } = await run('/usr/bin/time', ['-f', '%M', command, ...args], {
    env,
    maxBuffer: 16 * MB,
  });
  const kb = Number(stderr.trim().split('\n').at(-1));
  return { peakMb: kb / 1024, seconds: (performance.now() - started) / 1000 };
}

function startServer(): Promise<{ url: string; stop: () => void }> {
  const server = fork(fileURLToPath(new URL('./api-server.ts', import.meta.url)), [], { execArgv: [] });
  return new Promise((resolve, reject) => {
    server.once('message', (port) =>
      resolve({ url: `http://127.0.0.1:${port as number}`, stop: () => server.disconnect() }),
    );
    server.once('error', reject);
  });
}

/** `docex-sync run` on a watched folder; the file dropped in; VmHWM once it is archived. */
async function syncUpload(docexSync: string, dir: string, file: string, env: NodeJS.ProcessEnv) {
  const work = await mkdtemp(join(dir, 'sync-'));
  for (const sub of ['inbox', 'staging', 'processed']) await mkdir(join(work, sub));
  const config = join(work, 'docex-sync.yaml');
  await writeFile(
    config,
    [
      'state_db: ./state/sync.db',
      `api: { base_url: "${env.DOCEX_BASE_URL}" }`,
      'watch:',
      '  - path: ./inbox',
      '    template_id: 1',
      '    output: ./results',
      '    processed_dir: ./processed',
      '    failed_dir: ./failed',
      '    stable_ms: 500',
      'log_level: warn',
      '',
    ].join('\n'),
  );
  const child = spawn(docexSync, ['run', '--config', config], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started = performance.now();
  try {
    const staged = join(work, 'staging', 'big.pdf');
    await rename(file, staged);
    await rename(staged, join(work, 'inbox', 'big.pdf'));
    // A bench, not a test: the folder is looked at every 100 ms until the file is archived.
    while (
      (await readdir(join(work, 'processed'), { recursive: true })).every((n) => !n.endsWith('big.pdf'))
    ) {
      if (child.exitCode !== null) throw new Error(`docex-sync run exited ${child.exitCode}: ${stderr}`);
      await delay(100);
    }
    const seconds = (performance.now() - started) / 1000;
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
    const peakMb = Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
    child.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`docex-sync run exited ${code} on SIGTERM: ${stderr}`);
    // Back where the next repetition expects it.
    const archived = (await readdir(join(work, 'processed'), { recursive: true })).find((n) =>
      n.endsWith('big.pdf'),
    )!;
    await rename(join(work, 'processed', archived), file);
    return { peakMb, seconds };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(work, { recursive: true, force: true });
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const range = (values: number[]) => `${Math.min(...values).toFixed(0)}-${Math.max(...values).toFixed(0)} MB`;

export default async function bench(): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'docex-installed-bench-'));
  const server = await startServer();
  try {
    const installed = installDocexSync(dir);
    const env = {
      ...process.env,
      DOCEX_BASE_URL: server.url,
      DOCEX_API_KEY: KEY,
      XDG_CONFIG_HOME: dir,
      XDG_CACHE_HOME: join(dir, 'cache'),
    };
    const file = join(dir, 'big.pdf');
    await sparseFile(file, SIZE_MB);
    const docex: number[] = [];
    const sync: number[] = [];
    const nodeBare: number[] = [];
    const curl: number[] = [];
    const seconds: { docex: number[]; sync: number[] } = { docex: [], sync: [] };
    for (let i = 0; i < REPS; i++) {
      nodeBare.push((await peakOf(process.execPath, ['-e', '0'], env)).peakMb);
      const upload = await peakOf(installed.docex, ['tasks', 'upload', file, '--template', '1'], env);
      docex.push(upload.peakMb);
      seconds.docex.push(upload.seconds);
      const viaCurl = await peakOf(
        'curl',
        [
          '-sS',
          '-o',
          '/dev/null',
          '-F',
          `files=@${file};type=application/pdf`,
          `${server.url}/v1/upload_file/`,
        ],
        env,
      ).catch(() => undefined);
      if (viaCurl) curl.push(viaCurl.peakMb);
      const daemon = await syncUpload(installed.docexSync, dir, file, env);
      sync.push(daemon.peakMb);
      seconds.sync.push(daemon.seconds);
    }
    const what = `${(SIZE_MB / 1024).toFixed(SIZE_MB % 1024 ? 1 : 0)} GiB`;
    return [
      {
        measure: `installed docex tasks upload, ${what}: peak RSS`,
        value: median(docex),
        unit: 'MB',
        note: `median of ${REPS} (${range(docex)}), ${median(seconds.docex).toFixed(1)} s; goal < 100 MB: ${Math.max(...docex) < 100 ? 'met' : 'missed'}`,
      },
      {
        measure: `installed docex-sync run, ${what} file dropped, hashed, uploaded, archived: peak RSS`,
        value: median(sync),
        unit: 'MB',
        note: `median of ${REPS} (${range(sync)}), ${median(seconds.sync).toFixed(1)} s from the drop; goal < 120 MB: ${Math.max(...sync) < 120 ? 'met' : 'missed'}`,
      },
      { measure: '  node -e 0: peak RSS', value: median(nodeBare), unit: 'MB', note: 'for scale' },
      ...(curl.length
        ? [
            {
              measure: '  curl sending the same file: peak RSS',
              value: median(curl),
              unit: 'MB',
              note: 'for scale',
            },
          ]
        : []),
    ];
  } finally {
    server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
