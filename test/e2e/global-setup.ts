/**
 * Global set-up of the e2e project: what is expensive is done once per run, here in the main vitest
 * process, and handed to the test files that ask for it (test/e2e/shared.ts is their side):
 *
 * - the one-time installs (n8n, N8N_VERSION of n8n-instance.ts, into the user cache, Debian's chromium, redis-server and
 *   postgresql, playwright-core), started at once in the background, one apt-get after another,
 *   with no hook time limit (a first install takes minutes: within a file's beforeAll it timed out);
 * - one `npm pack` of both packages (test/e2e/pack.ts) for the whole run;
 * - one release (scripts/release.ts --fast, test/e2e/release-build.ts) for the files that test it;
 * - one n8n per configuration (its n8n version: the suite's, or the configuration's own), started on the first file's request and shared by every file that
 *   asks for it (test/e2e/shared.ts, `sharedN8n()`); stopped at the end of the run.
 *
 * Each is made on first request, so a run of files that need none of them pays nothing. The files
 * reach them through a small HTTP endpoint on a loopback port (`inject('docexE2eBroker')`): a file
 * runs in a worker process, and vitest's provide() passes only values known before the run.
 * GET /<what> answers 202 while it is being made (the file asks again), 200 with its JSON, or 500
 * with the failure.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { timed } from '../support/timing.ts';
import { makeRelease, RELEASE_PHASE } from './release-build.ts';
import {
  HEADLESS_N8N,
  installDirOf,
  installN8n,
  migratedSqliteFolder,
  n8nEnvironment,
  N8N_VERSION,
  OLDEST_N8N,
  prepareUserFolder,
} from './n8n-instance.ts';
import {
  installDebianPackage,
  n8nReady,
  onPath,
  postgresBin,
  setUpOwner,
  startN8n,
  type Service,
} from './services.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');

declare module 'vitest' {
  export interface ProvidedContext {
    /** The URL of the e2e global set-up's endpoint (test/e2e/shared.ts). */
    docexE2eBroker: string;
  }
}

/** What the global set-up's pack made: the folder (npm config, tarballs) and each tarball. */
export interface SharedPack {
  dir: string;
  tarballs: Record<'n8n-nodes-docex' | 'docex-sync', string>;
}

/** A shared n8n, as a test file gets it. */
export interface SharedN8nInstance {
  configuration: string;
  url: string;
  /** The owner's session cookie (the owner is set up once, as on a fresh n8n's first screen). */
  cookie: string;
  home: string;
  bin: string;
  installDir: string;
  /** The n8n version. */
  version: string;
  /** How long n8n took from its start to its readiness: a measure of this machine's speed at boot. */
  readyMs: number;
}

/**
 * The configurations a file can ask for by name. `default`: SQLite, regular mode, the packed package
 * installed, nothing else. A configuration is only what every file using it can share: a setting
 * that depends on something a file starts for itself (a proxy, a database) makes an n8n of that
 * file's own (real-n8n.ts, `prepareN8n` and services.ts, `startN8n`).
 */
const CONFIGURATIONS: Record<string, { env: NodeJS.ProcessEnv; version?: string }> = {
  // No browser opens it: headless (n8n-instance.ts, HEADLESS_N8N).
  default: { env: HEADLESS_N8N },
  // The same settings with the editor UI, for the editor test alone: its browser steps' time limits
  // derive from its n8n's start-up time, and other files' work on the same n8n (SQLite answering
  // "Database is not ready!", a slower editor) made them miss in a full run.
  editor: { env: {} },
  // The default settings on the oldest n8n the docs support, for the smoke set (oldest.test.ts).
  oldest: { env: HEADLESS_N8N, version: OLDEST_N8N },
};

/**
 * The one-time installs, one apt-get after another (it holds one lock), beside the n8n install of
 * the suite's version (another version is installed when a file first asks for it: `n8nOf`).
 */
function oneTimeInstalls(): {
  n8n: Promise<string>;
  debian: Promise<void>;
  n8nOf: (version: string) => Promise<string>;
} {
  // scripts/n8n-install.sh and scripts/browser-install.sh keep their install's duration in the cache.
  const versions = new Map<string, Promise<string>>();
  const n8nOf = (version: string) => {
    let install = versions.get(version);
    if (!install) {
      // The migrated database is part of the install (made once per version, n8n-instance.ts):
      // a file that has n8n's binary finds it ready to copy.
      install = timed(`n8n ${version} install (or its check)`, () => installN8n(version)).then(
        async (bin) => {
          await timed(`n8n ${version} migrated database (made once, or its check)`, () =>
            migratedSqliteFolder(bin),
          );
          return bin;
        },
      );
      install.catch(() => undefined);
      versions.set(version, install);
    }
    return install;
  };
  const n8n = n8nOf(N8N_VERSION);
  const debian = (async () => {
    const packages: Array<[string, () => boolean]> = [
      ['redis-server', () => onPath('redis-server')],
      ['postgresql', () => postgresBin() !== undefined],
    ];
    for (const [pkg, present] of packages)
      if (!present()) await timed(`install ${pkg}`, () => installDebianPackage(pkg, present));
    // Debian's chromium (apt-get) and the browser driver, playwright-core (user cache).
    await timed('browser install (or its check)', () =>
      run('bash', [join(repo, 'scripts/browser-install.sh')]),
    );
  })();
  // A failure is the asking file's to report: no unhandled rejection here.
  n8n.catch(() => undefined);
  debian.catch(() => undefined);
  return { n8n, debian, n8nOf };
}

/**
 * The release for release.test.ts, debian-package.test.ts and container.test.ts (`releaseOnce()`):
 * made once for the run, by a child process, instead of once per worker that runs one of them.
 */
const releaseForRun = () => timed(RELEASE_PHASE, makeRelease);

/**
 * Both e2e projects (e2e, and e2e-alone for the files that run alone) name this set-up: the first
 * makes the endpoint, the other is handed the same one, so that the run still packs, installs and
 * boots each n8n once. The last to end stops it.
 */
const running = globalThis as typeof globalThis & {
  docexE2eSetup?: {
    url: string;
    users: number;
    stop: () => Promise<void>;
    ask: (paths: string[]) => Promise<void>;
  };
};

export default async function setup(project: TestProject) {
  running.docexE2eSetup ??= await start();
  const shared = running.docexE2eSetup;
  shared.users++;
  project.provide('docexE2eBroker', shared.url);
  await shared.ask(project.vitest.state.getPaths());
  return async () => {
    if (--shared.users > 0) return;
    running.docexE2eSetup = undefined;
    await shared.stop();
  };
}

async function start() {
  const installs = oneTimeInstalls();
  const made = new Map<string, Promise<unknown>>();
  const servers: Service[] = [];
  /**
   * Per shared n8n configuration, the run's files that will still ask for it (read from their text
   * by `ask`). An idle n8n costs CPU every minute (its timers, its database): once the last of them
   * has ended (`/n8n/<configuration>/done`), it is stopped rather than left idle to the run's end.
   */
  const users = new Map<string, Set<string>>();
  const stopping = new Map<string, () => Promise<void>>();
  const stoppedEarly: Array<Promise<void>> = [];
  const cleanups: Array<() => Promise<void>> = [];
  const logs = new Map<string, () => string>();

  const pack = async (): Promise<SharedPack> => {
    const { stdout } = await timed('pack both packages', () =>
      run(process.execPath, [join(import.meta.dirname, 'pack.ts')], {
        cwd: repo,
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      }),
    );
    const packed = JSON.parse(stdout.trim().split('\n').at(-1)!) as SharedPack;
    cleanups.push(() => rm(packed.dir, { recursive: true, force: true }));
    return packed;
  };

  const n8n = async (configuration: string): Promise<SharedN8nInstance> => {
    const wanted = CONFIGURATIONS[configuration];
    if (!wanted)
      throw new Error(
        `no shared n8n configuration "${configuration}": add it to CONFIGURATIONS in test/e2e/global-setup.ts`,
      );
    const version = wanted.version ?? N8N_VERSION;
    const [bin, packed] = await Promise.all([
      installs.n8nOf(version),
      make('pack', pack) as Promise<SharedPack>,
    ]);
    return await timed(`shared n8n (${configuration}): folder, boot, owner`, async () => {
      const home = await prepareUserFolder(
        packed.tarballs['n8n-nodes-docex'],
        await migratedSqliteFolder(bin),
      );
      cleanups.push(() => rm(home, { recursive: true, force: true }));
      const env = await n8nEnvironment(home, wanted.env);
      const server = await startN8n({ bin, env });
      servers.push(server);
      stopping.set(configuration, () => server.stop());
      logs.set(configuration, () => server.output());
      const readyMs = await n8nReady(server);
      const cookie = await setUpOwner(server.url);
      const installDir = installDirOf(bin);
      return { configuration, url: server.url, cookie, home, bin, installDir, version, readyMs };
    });
  };

  function make(what: string, how: () => Promise<unknown>): Promise<unknown> {
    let promise = made.get(what);
    if (!promise) {
      promise = how();
      promise.catch(() => undefined);
      made.set(what, promise);
    }
    return promise;
  }

  const settled = new Map<Promise<unknown>, { value?: unknown; error?: unknown }>();
  const answer = (promise: Promise<unknown>) => {
    if (!settled.has(promise))
      promise.then(
        (value) => settled.set(promise, { value }),
        (error: unknown) => settled.set(promise, { error }),
      );
    return settled.get(promise);
  };

  const broker = createServer((req, res) => {
    const path = new URL(req.url!, 'http://x').pathname;
    let promise: Promise<unknown> | undefined;
    if (path === '/installs/n8n') promise = installs.n8n;
    else if (path.startsWith('/installs/n8n/')) promise = installs.n8nOf(path.slice('/installs/n8n/'.length));
    else if (path === '/installs/debian') promise = installs.debian;
    else if (path === '/pack') promise = make('pack', pack);
    else if (path === '/release') promise = make('release', releaseForRun);
    else if (path.startsWith('/n8n/') && path.endsWith('/done')) {
      res.writeHead(200).end();
      done(path.slice('/n8n/'.length, -'/done'.length), new URL(req.url!, 'http://x').searchParams.get('file'));
      return;
    } else if (path.startsWith('/n8n/') && path.endsWith('/log')) {
      const log = logs.get(path.slice('/n8n/'.length, -'/log'.length));
      res.writeHead(200, { 'content-type': 'text/plain' }).end(log ? log().slice(-3000) : '');
      return;
    } else if (path.startsWith('/n8n/')) {
      const configuration = path.slice('/n8n/'.length);
      promise = make(`n8n ${configuration}`, () => n8n(configuration));
    }
    if (!promise) {
      res.writeHead(404).end(`no ${path} here`);
      return;
    }
    const state = answer(promise);
    if (!state) res.writeHead(202).end();
    else if ('error' in state)
      res
        .writeHead(500, { 'content-type': 'text/plain' })
        .end(String((state.error as Error)?.stack ?? state.error));
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(state.value ?? null));
  });
  await new Promise<void>((resolve) => broker.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(broker.address() as AddressInfo).port}`;

  /**
   * The file `file` is done with the shared n8n `configuration`: when no file of the run that asks
   * for it is left, it stops. A file asking after that (one `ask` did not foresee) boots it again.
   */
  const done = (configuration: string, file: string | null) => {
    const left = users.get(configuration);
    if (!left || !file || !left.delete(file) || left.size > 0) return;
    const stop = stopping.get(configuration);
    if (!stop) return;
    made.delete(`n8n ${configuration}`);
    stopping.delete(configuration);
    stoppedEarly.push(timed(`shared n8n (${configuration}): stopped after its last file`, stop));
  };

  /** What this run's files will ask for starts now (`paths`: the run's test files). */
  const ask = async (paths: string[]) => {
    // What this run's files will ask for starts now, beside the first files, rather than when the
    // first of them asks: the n8n boot and the pack take a minute or more on a loaded machine.
    const e2eFiles = paths.filter((path) => path.startsWith(import.meta.dirname));
    const asked = await Promise.all(e2eFiles.map((path) => readFile(path, 'utf8').catch(() => '')));
    for (const configuration of Object.keys(CONFIGURATIONS)) {
      const pattern =
        configuration === 'default'
          ? /\bsharedN8n\((?![^)]*')/
          : new RegExp(`\\bsharedN8n\\([^)]*'${configuration}'`);
      const askers = e2eFiles.filter((_, i) => pattern.test(asked[i]!));
      if (askers.length === 0) continue;
      const left = users.get(configuration) ?? new Set<string>();
      for (const file of askers) left.add(file);
      users.set(configuration, left);
      void make(`n8n ${configuration}`, () => n8n(configuration));
    }
    if (asked.some((text) => /\b(sharedPack|prepareN8n)\(/.test(text))) void make('pack', pack);
    if (asked.some((text) => /\breleaseOnce\(/.test(text))) void make('release', releaseForRun);
  };

  const stop = async () => {
    broker.closeAllConnections();
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    // A shared n8n stopping after its last file is not sent a second SIGTERM.
    await Promise.allSettled(stoppedEarly);
    await Promise.all(servers.map((s) => s.stop()));
    // An install still running (a run of files that needed none) is waited for, not cut off.
    await Promise.allSettled([installs.n8n, installs.debian, ...made.values()]);
    await Promise.all(cleanups.map((c) => c()));
  };
  return { url, users: 0, stop, ask };
}
