/**
 * What the release tests share: an emulator with a folder and a template, a config that watches
 * one folder (with the status page on a free port), and a run of an installed `docex-sync run`
 * until a dropped file is processed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename, join } from 'node:path';
import { createNodeClient } from '@docex/shared/node';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { until } from '../daemon/helpers.ts';
import { templateWithField } from '../support/templates.ts';

export const KEY = 'sk-release-key-0042';

export interface ServiceWorld {
  emulator: Emulator;
  templateId: number;
  stop(): Promise<void>;
}

/** The emulator on 127.0.0.1 (a chroot and a chroot-isolated container share this network). */
export async function serviceWorld(): Promise<ServiceWorld> {
  const emulator = await startEmulator({
    port: 0,
    host: '127.0.0.1',
    taskDelayMs: 30,
    companies: [{ name: 'Ops', apiKey: KEY }],
  });
  const client = createNodeClient({ baseUrl: emulator.url, apiKey: KEY });
  const folder = await client.createFolder({ name: 'AP' });
  const template = await templateWithField(client, folder.id, 'Invoice');
  return { emulator, templateId: template.id, stop: () => emulator.stop() };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A config watching `<base>/inbox` (paths as the process that reads it sees them). */
export function watchConfig(base: string, templateId: number, extra: string[] = []): string {
  return [
    `state_db: ${base}/state/sync.db`,
    'poll: { interval_ms: 100, max_interval_ms: 500 }',
    'watch:',
    `  - { path: ${base}/inbox, template_id: ${templateId}, output: ${base}/results, processed_dir: ${base}/processed, failed_dir: ${base}/failed, stable_ms: 200 }`,
    ...extra,
    '',
  ].join('\n');
}

export async function makeFolders(base: string) {
  // Writable by anyone: a container's or the package's service user writes into them.
  for (const dir of ['inbox', 'results', 'processed', 'failed', 'state']) {
    await mkdir(join(base, dir), { recursive: true });
    await chmod(join(base, dir), 0o777);
  }
}

export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end without blocking this process (the emulator answers from it). */
export function runToEnd(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
) {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

export interface Running {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<number | null>;
}

export function start(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; detached?: boolean } = {},
): Running {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stdout!.on('data', (d) => (stderr += d));
  child.stderr!.on('data', (d) => (stderr += d));
  // On 'close', not 'exit': 'exit' may come before the last of the output (the "stopped" line).
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, stderr: () => stderr, exited };
}

/**
 * Drops a file into `<hostBase>/inbox` and waits until it is in processed/ with its result written.
 * With the daemon's `running`, a failure says what the daemon printed up to then, and a daemon that
 * ends first (a config it refuses, a port in use) fails the wait at once with its exit code.
 */
export async function dropAndAwait(
  hostBase: string,
  name: string,
  number: string,
  running?: Running,
  results = join(hostBase, 'results'),
) {
  let ended: { code: number | null } | undefined;
  void running?.exited.then((code) => (ended = { code }));
  const output = () => (running ? `; its output:\n${running.stderr().slice(-3000)}` : '');
  await writeFile(join(hostBase, 'inbox', name), `Invoice number: ${number}\n`);
  await until(
    `${name} processed`,
    async () => {
      if ((await readdir(join(hostBase, 'processed')).catch((): string[] => [])).includes(name)) return true;
      if (ended)
        throw new Error(`the daemon ended (exit ${ended.code}) before ${name} was processed${output()}`);
      return false;
    },
    120_000,
  ).catch((error: unknown) => {
    if (error instanceof Error && error.message.startsWith('timed out')) error.message += output();
    throw error;
  });
  const json = (await readdir(results)).find(
    (f) => f.startsWith(name.replace(/\.[^.]+$/, '')) && f.endsWith('.json'),
  );
  if (!json) throw new Error(`no result JSON for ${name} in ${results}`);
  return JSON.parse(await readFile(join(results, json), 'utf8')) as { document: unknown };
}

/**
 * Sends `signal` to the node processes started under `wrapperPid` (children, grandchildren...), not
 * to the wrapper: a wrapper between (chroot's runuser, `buildah run`) ends its child by itself when
 * it is signalled (buildah with SIGKILL), where the daemon must get SIGTERM to stop cleanly. The
 * tree is followed by parent PIDs, not by process group: a wrapper may start its child in a session
 * of its own (setsid), out of the group the test made. The daemon's exit code then comes back
 * through the wrapper.
 */
export function signalNodeIn(wrapperPid: number, signal: NodeJS.Signals): number[] {
  const parentOf = new Map<number, number>();
  // The program each process runs, not its comm: Node 24 names its main thread "MainThread".
  const programOf = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      programOf.set(Number(entry), basename(readlinkSync(`/proc/${entry}/exe`)));
    } catch {
      // gone meanwhile, or a kernel thread (no exe)
    }
  }
  const under = (pid: number): boolean => {
    for (let at = parentOf.get(pid); at !== undefined && at > 1; at = parentOf.get(at))
      if (at === wrapperPid) return true;
    return false;
  };
  const pids = [...programOf]
    .filter(([pid, program]) => program === 'node' && under(pid))
    .map(([pid]) => pid);
  // None left: the daemon already ended (its exit code and output tell why, checked by the caller).
  for (const pid of pids) process.kill(pid, signal);
  return pids;
}
