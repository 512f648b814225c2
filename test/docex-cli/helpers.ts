/** docex as a process, and an emulator with two accounts (companies) for it to talk to. */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll } from 'vitest';
import { main, type Io } from '../../cli/src/docex.ts';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { createNodeClient } from '@docex/shared/node';

export const ACME_KEY = 'sk-acme-secret-4711';
export const GLOBEX_KEY = 'sk-globex-secret-0815';
export const CLI = join(import.meta.dirname, '../../cli/src/docex.ts');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** DOCEX_API_KEY (default: Acme's; null: not set). */
  key?: string | null;
  env?: Record<string, string>;
}

export interface CliWorld {
  emulator: Emulator;
  dir: string;
  /** Spawns `node cli/src/docex.ts ...args` with the account's key in DOCEX_API_KEY (stdout is a pipe). */
  docex(args: string[], options?: RunOptions): Promise<Run>;
  /** The same in this process (main() with a pipe as stdout): for checks that need no process of their own. */
  run(args: string[], options?: RunOptions): Promise<Run>;
  client(key: string): ReturnType<typeof createNodeClient>;
}

/** Starts one emulator for the file's tests (taskDelayMs 30) and a scratch folder; both are removed after. */
export function useCliWorld(): CliWorld {
  const world = {} as CliWorld;
  beforeAll(async () => {
    world.emulator = await startEmulator({
      port: 0,
      taskDelayMs: 30,
      companies: [
        { name: 'Acme', apiKey: ACME_KEY },
        { name: 'Globex', apiKey: GLOBEX_KEY },
      ],
    });
    world.dir = await mkdtemp(join(tmpdir(), 'docex-cli-test-'));
    world.client = (key) =>
      createNodeClient({ baseUrl: world.emulator.url, apiKey: key, retry: { maxRetries: 0 } });
    const envFor = (options: RunOptions) => {
      const env: Record<string, string | undefined> = {
        ...process.env,
        // No config file of the machine's user: the test's own, or none.
        XDG_CONFIG_HOME: join(world.dir, 'no-config'),
        DOCEX_CONFIG: undefined,
        DOCEX_PROFILE: undefined,
        DOCEX_BASE_URL: world.emulator.url,
        DOCEX_API_KEY: options.key === null ? undefined : (options.key ?? ACME_KEY),
        ...options.env,
      };
      return Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<
        string,
        string
      >;
    };
    world.run = (args, options = {}) => inProcess(args, { env: envFor(options) });
    world.docex = (args, options = {}) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        cwd: world.dir,
        env: envFor(options),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      return new Promise((resolve, reject) => {
        child.once('error', reject);
        child.once('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      });
    };
  });
  afterAll(async () => {
    await world.emulator?.stop();
    if (world.dir) await rm(world.dir, { recursive: true, force: true });
  });
  return world;
}

/** main() in this process, with a fake terminal (or pipe) as stdout. */
export async function inProcess(
  args: string[],
  options: { tty?: boolean; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        append(String(chunk));
        done();
      },
    });
  const io: Io = {
    stdout: Object.assign(
      sink((s) => (stdout += s)),
      { isTTY: options.tty ?? false },
    ),
    stderr: sink((s) => (stderr += s)),
    // The machine user's ~/.config/docex is never read by a test.
    env: { XDG_CONFIG_HOME: join(tmpdir(), 'docex-test-no-config'), ...options.env },
  };
  const code = await main(args, io);
  return { code, stdout, stderr };
}
