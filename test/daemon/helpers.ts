import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import Database from 'better-sqlite3';
import { setTimeout as delay } from 'node:timers/promises';
import { vi } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../emulator/index.ts';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { invoiceTemplate } from '../support/templates.ts';
import { ConfigSchema, loadConfig, type Config, type WatchConfig } from '../../daemon/src/config/config.ts';
import { startDaemon, type RunningDaemon, type StartOptions } from '../../daemon/src/app/daemon.ts';
import { createLogger } from '../../daemon/src/common/logging.ts';
import { main as syncMain } from '../../daemon/src/commands/docex-sync.ts';
import type { SyncIo } from '../../daemon/src/commands/io.ts';

export const SECRET = 'sk-docex-very-secret-4711';

export interface World {
  dir: string;
  emulator: Emulator;
  templateId: number;
  configFile: string;
  logs: string[];
  config(): Config;
  start(options?: { apiKey?: string; client?: DocexClient; daemon?: StartOptions }): Promise<RunningDaemon>;
  cleanup(): Promise<void>;
}

export async function makeWorld(
  options: {
    taskDelayMs?: number;
    extraYaml?: string;
    watchYaml?: string;
    /** More for the emulator (a port, HTTPS with `tls` and `urlHost`). */
    emulator?: EmulatorOptions;
    /** The CA the test's own set-up client trusts (an emulator over HTTPS with a private CA). */
    caFile?: string;
    /** More keys of the config's `upload` mapping (flow style, e.g. `batch_files: 1`). */
    uploadYaml?: string;
    /** More keys of the config's `api` mapping (flow style, e.g. `proxy: "...", ca_file: "..."`), base_url among them to replace the emulator's URL. */
    apiYaml?: string;
  } = {},
): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'docex-sync-test-'));
  await mkdir(join(dir, 'inbox'));
  const emulator = await startEmulator({
    port: 0,
    taskDelayMs: options.taskDelayMs ?? 30,
    companies: [
      { name: 'Acme', apiKey: SECRET },
      { name: 'Other', apiKey: 'other-key' },
    ],
    ...options.emulator,
  });
  const client = createNodeClient({ baseUrl: emulator.url, apiKey: SECRET, caFile: options.caFile });
  const folder = await client.createFolder({ name: 'AP' });
  const template = await invoiceTemplate(client, folder.id, 'Invoice');
  const configFile = join(dir, 'docex-sync.yaml');
  await writeFile(
    configFile,
    [
      'state_db: ./state/sync.db',
      `api: { ${/\bbase_url:/.test(options.apiYaml ?? '') ? '' : `base_url: "${emulator.url}", `}concurrency: 4, ${/\brequests_per_second:/.test(options.apiYaml ?? '') ? '' : 'requests_per_second: 200, '}max_retries: 2${options.apiYaml ? `, ${options.apiYaml}` : ''} }`,
      'poll: { interval_ms: 50, max_interval_ms: 200 }',
      `upload: { retry_base_ms: 50, retry_max_ms: 200, max_attempts: 20${options.uploadYaml ? `, ${options.uploadYaml}` : ''} }`,
      'watch:',
      '  - path: ./inbox',
      `    template_id: ${template.id}`,
      '    output: ./results',
      '    processed_dir: ./processed',
      '    failed_dir: ./failed',
      '    stable_ms: 200',
      '    rescan_interval_ms: 1000',
      options.watchYaml ?? '',
      options.extraYaml ?? '',
      '',
    ].join('\n'),
  );
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  let running: RunningDaemon | undefined;
  return {
    dir,
    emulator,
    templateId: template.id,
    configFile,
    logs,
    config: () => loadConfig(configFile),
    async start(startOptions = {}) {
      const config = loadConfig(configFile);
      const log = createLogger('debug', { pretty: false, destination: sink });
      const syncClient =
        startOptions.client ??
        createNodeClient({
          baseUrl: emulator.url,
          apiKey: startOptions.apiKey ?? SECRET,
          logger: log,
          retry: { initialDelayMs: 20, maxRetries: 2 },
        });
      running = await startDaemon(config, syncClient, log, startOptions.daemon);
      return running;
    },
    async cleanup() {
      await running?.stop().catch(() => undefined);
      await emulator.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The least time a wait is given: raised by calibrate() from a measured process start, so that a
 * machine busy with other work gets the time it needs instead of a limit guessed on an idle one.
 */
let waitFloorMs = 0;

/**
 * Measures how long the docex-sync CLI takes to start and answer `--version` here and now, and
 * derives the time limits of tests that run it as a process from that: every wait at least 40
 * starts (a restart cycle is a few starts plus the work), every test at least three such waits.
 * Await it at the top of a file whose tests spawn the CLI, before they are collected.
 */
export async function calibrate(): Promise<number> {
  const started = performance.now();
  const exit = await new Promise<number | null>((resolve) =>
    spawn(process.execPath, [cli, '--version'], { stdio: 'ignore' }).once('exit', resolve),
  );
  if (exit !== 0) throw new Error(`docex-sync --version exited ${exit}`);
  const startMs = performance.now() - started;
  waitFloorMs = Math.round(startMs * 40);
  vi.setConfig({
    testTimeout: Math.max(20_000, waitFloorMs * 3),
    hookTimeout: Math.max(30_000, waitFloorMs * 3),
  });
  return startMs;
}

/**
 * A test's time limit: `ms`, or three of calibrate()'s waits where this machine is slower now. A
 * fixed limit given to `it` replaces the one calibrate() set, so files that calibrate pass theirs
 * through this (test/lint/test-projects.test.ts).
 */
export const testLimit = (ms: number) => Math.max(ms, waitFloorMs * 3);

export async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + Math.max(timeoutMs, waitFloorMs);
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(25);
  }
}

export const invoice = (n: string, total = '10,00') =>
  `Invoice number: ${n}\nTotal: ${total}\nWidget | 4,00\nGadget | 6,00\n`;

const cli = join(import.meta.dirname, '../../daemon/src/commands/docex-sync.ts');
const children: ChildProcess[] = [];
/** Kills every docex-sync process a test started with runCli and left running (call in afterEach). */
export function stopCliChildren() {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
}

/** `terminal`: stdin, stdout and stderr on a pseudo-terminal (util-linux `script`), as an operator's shell. */
export function runCli(args: string[], env: Record<string, string> = {}, { terminal = false } = {}) {
  const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, cli, ...args];
  const [file, ...argv] = terminal ? ['script', '-qfec', command.map(quote).join(' '), '/dev/null'] : command;
  const child = spawn(file!, argv, {
    detached: terminal, // its own process group: the test stops `script` and the daemon together
    env: { ...process.env, DOCEX_API_KEY: SECRET, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => ((output += d), (stdout += d)));
  child.stderr!.on('data', (d) => ((output += d), (stderr += d)));
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
  return { child, exited, output: () => output, stdout: () => stdout, stderr: () => stderr };
}

/** The state of the newest row whose path ends with `name`, read from the DB file (as another process). */
export const stateOf = (world: World, name: string) => {
  try {
    const db = new Database(join(world.dir, 'state', 'sync.db'), { readonly: true, fileMustExist: true });
    try {
      return (
        db.prepare('SELECT state FROM files WHERE path LIKE ? ORDER BY id DESC').get(`%${name}`) as
          { state: string } | undefined
      )?.state;
    } finally {
      db.close();
    }
  } catch {
    return undefined;
  }
};

/** docex-sync's main() in this process: what it printed and its exit code (stdin and stderr not terminals unless `tty`). */
export async function syncInProcess(
  args: string[],
  options: { env?: Record<string, string>; tty?: boolean; io?: Partial<SyncIo> } = {},
) {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) =>
    Object.assign(
      new Writable({
        write(chunk, _encoding, done) {
          append(String(chunk));
          done();
        },
      }),
      { isTTY: options.tty ?? false },
    );
  const code = await syncMain(args, {
    stdout: sink((s) => (stdout += s)),
    stderr: sink((s) => (stderr += s)),
    stdin: Object.assign(new PassThrough(), { isTTY: options.tty ?? false }),
    env: { DOCEX_API_KEY: SECRET, NO_COLOR: '', ...options.env },
    ...options.io,
  });
  return { code, stdout, stderr };
}

/** Every file below `dir`, relative to it, '/'-separated and sorted ([] when it does not exist). */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split('\\').join('/'))
    .sort();
}

/** A watch of `root` as the watcher tests run it (no service; outputs beside it in `base`; rescans an hour apart). */
export function watchIn(base: string, root: string, watch: Record<string, unknown> = {}): WatchConfig {
  return ConfigSchema.parse({
    state_db: join(base, 'sync.db'),
    watch: [
      {
        path: root,
        template_id: 1,
        output: join(base, 'results'),
        failed_dir: join(base, 'failed'),
        rescan_interval_ms: 3_600_000,
        ...watch,
      },
    ],
  }).watch[0]!;
}
