/**
 * Services an end-to-end test starts for itself on free loopback ports and stops after: Redis and
 * PostgreSQL from Debian's packages (installed by the set-up when missing, like
 * scripts/n8n-install.sh installs n8n), and long-running n8n processes.
 */
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { recordInstall, timed } from '../support/timing.ts';

const run = promisify(execFile);

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/**
 * Polls `probe` every `everyMs` (250 ms) until it gives a value; `context` says what was seen, for
 * the time-out's message. A wait for something that comes once a minute (n8n's polls) probes less
 * often: an expensive probe 240 times a minute is CPU the run has not got.
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
  context: () => string = () => '',
  everyMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${context()}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

// Test files run in parallel and several install packages on a fresh machine: each apt-get waits
// for another's dpkg lock instead of failing on it.
const APT_WAIT = ['-o', 'DPkg::Lock::Timeout=600'];
const aptInstallArgs = (pkg: string) => [...APT_WAIT, 'install', '-y', '--no-install-recommends', pkg];
const aptEnv = () => ({ ...process.env, DEBIAN_FRONTEND: 'noninteractive' });
const installFailed = (pkg: string, stderr: string) =>
  new Error(
    `docex e2e: could not install ${pkg} with apt-get (run "apt-get install -y ${pkg}" as root):\n${stderr}`,
  );

/** Installs a Debian package when `present()` says it is missing; fails with a clear message. */
export function ensureDebianPackage(pkg: string, present: () => boolean): void {
  if (present()) return;
  process.stderr.write(`docex e2e: installing the Debian package ${pkg} (first run only)\n`);
  const started = performance.now();
  const install = () =>
    spawnSync('apt-get', aptInstallArgs(pkg), {
      env: aptEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
  let result = install();
  if (result.status !== 0) {
    spawnSync('apt-get', [...APT_WAIT, 'update'], { stdio: 'ignore' });
    result = install();
  }
  if (result.status !== 0 || !present()) throw installFailed(pkg, result.stderr);
  recordInstall(pkg, performance.now() - started);
}

/**
 * ensureDebianPackage without blocking the process: for the e2e global set-up, whose process also
 * runs the reporters and answers the test files.
 */
export async function installDebianPackage(pkg: string, present: () => boolean): Promise<void> {
  if (present()) return;
  process.stderr.write(`docex e2e: installing the Debian package ${pkg} (first run only)\n`);
  const started = performance.now();
  const install = () =>
    run('apt-get', aptInstallArgs(pkg), { env: aptEnv(), encoding: 'utf8' }).then(
      () => '',
      (error: { stderr?: string }) => error.stderr ?? String(error),
    );
  let failure = await install();
  if (failure) {
    await run('apt-get', [...APT_WAIT, 'update']).catch(() => undefined);
    failure = await install();
  }
  if (failure || !present()) throw installFailed(pkg, failure);
  recordInstall(pkg, performance.now() - started);
}

export const onPath = (command: string) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;

/** A process started by a test, with its output kept for failure messages. */
export interface Service {
  readonly process: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export function startProcess(command: string, args: string[], env?: NodeJS.ProcessEnv): Service {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  return {
    process: child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `n8n start` on a free loopback port, with its own task-broker port (n8n's default 5679 may be taken by another n8n). */
export async function startN8n(
  n8n: { bin: string; env: NodeJS.ProcessEnv },
  env: NodeJS.ProcessEnv = {},
): Promise<Service & { url: string; startedAt: number }> {
  const port = await freePort();
  const service = startProcess(n8n.bin, ['start'], {
    ...n8n.env,
    ...env,
    N8N_PORT: String(port),
    N8N_LISTEN_ADDRESS: '127.0.0.1',
    N8N_RUNNERS_BROKER_PORT: String(await freePort()),
  });
  return { ...service, url: `http://127.0.0.1:${port}`, startedAt: performance.now() };
}

/**
 * Waits for n8n's own readiness signal (GET /healthz/readiness answers 200 once its database is
 * connected and migrated) and returns how long n8n took from its start: a measure of how fast this
 * machine is right now, from which a test derives its limits for later steps.
 */
export async function n8nReady(server: Service & { url: string; startedAt: number }): Promise<number> {
  await until(
    'n8n to be ready (/healthz/readiness)',
    async () => {
      if (server.process.exitCode !== null) throw new Error(`n8n exited:\n${server.output().slice(-3000)}`);
      const response = await fetch(`${server.url}/healthz/readiness`).catch(() => undefined);
      return response?.status === 200 ? true : undefined;
    },
    // Only a bound for a hung start; how long a start takes is measured, not assumed.
    600_000,
    () => server.output().slice(-3000),
  );
  const readyMs = performance.now() - server.startedAt;
  await timed('n8n boot', () => undefined, readyMs);
  return readyMs;
}

/** The owner a test sets up in a fresh n8n (POST /rest/owner/setup), and signs in as in the editor. */
export const OWNER = { email: 'owner@docex.test', firstName: 'Doc', lastName: 'Ex', password: 'Docex-e2e-1' };

/** Sets up a fresh n8n's owner through its REST API, as the first-run screen does; the session cookie. */
export async function setUpOwner(base: string): Promise<string> {
  // n8n answers 503 "Database is not ready!" while its database check lags (seen on a loaded
  // machine just after /healthz/readiness said 200): wait for it to pass, as for readiness.
  const owner = await until(
    'n8n to accept the owner set-up (not 503)',
    async () => {
      const response = await fetch(`${base}/rest/owner/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(OWNER),
      });
      return response.status === 503 ? undefined : response;
    },
    600_000,
  );
  if (owner.status !== 200)
    throw new Error(`n8n's owner set-up answered ${owner.status}: ${await owner.text()}`);
  return owner.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
}

export async function startRedis(): Promise<Service & { port: number }> {
  ensureDebianPackage('redis-server', () => onPath('redis-server'));
  const port = await freePort();
  const redis = startProcess('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  await until(
    'Redis to accept connections',
    () => (/Ready to accept connections/.test(redis.output()) ? true : undefined),
    30_000,
    redis.output,
  );
  return { ...redis, port };
}

/** The newest PostgreSQL server's bin folder of Debian's layout (/usr/lib/postgresql/<major>/bin). */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'postgres')));
  const newest = majors.sort((a, b) => Number(b) - Number(a))[0];
  return newest ? join(root, newest, 'bin') : undefined;
}

/**
 * A throw-away PostgreSQL cluster on a free port, trust authentication for user `postgres`, with a
 * database `database`. PostgreSQL refuses to run as root: it runs as the `postgres` user the Debian
 * package creates.
 */
export async function startPostgres(database: string): Promise<Service & { port: number }> {
  ensureDebianPackage('postgresql', () => postgresBin() !== undefined);
  const bin = postgresBin()!;
  const dir = await mkdtemp(join(tmpdir(), 'docex-pg-'));
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  await chown(dir, uid, gid);
  const asPostgres = (command: string, args: string[]) =>
    execFileSync('runuser', ['-u', 'postgres', '--', join(bin, command), ...args], { stdio: 'pipe' });
  asPostgres('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync']);
  const port = await freePort();
  const server = startProcess('runuser', [
    '-u',
    'postgres',
    '--',
    join(bin, 'postgres'),
    '-D',
    join(dir, 'data'),
    '-p',
    String(port),
    '-h',
    '127.0.0.1',
    '-k',
    dir,
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
  ]);
  await until(
    'PostgreSQL to accept connections',
    () =>
      spawnSync(join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)]).status === 0
        ? true
        : undefined,
    60_000,
    server.output,
  );
  asPostgres('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', database]);
  return {
    ...server,
    port,
    async stop() {
      // A fast shutdown through pg_ctl: runuser does not pass its own SIGTERM on.
      spawnSync(
        'runuser',
        ['-u', 'postgres', '--', join(bin, 'pg_ctl'), 'stop', '-D', join(dir, 'data'), '-m', 'fast'],
        {
          stdio: 'ignore',
        },
      );
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
