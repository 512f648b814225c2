/**
 * The parts of a real n8n that need no test context, so that the e2e global set-up (the main
 * vitest process) and the test files share them: the install (scripts/n8n-install.sh), a fresh user
 * folder with the packed n8n-nodes-docex installed the way users install it, and n8n's environment.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { recordInstall } from '../support/timing.ts';
import { freePort } from './services.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');

/**
 * The n8n versions the e2e suite knows (docs/n8n.md, "Compatibility"): every file runs on
 * N8N_VERSION (DOCEX_N8N_VERSION picks it), and a smoke set (test/e2e/oldest.test.ts, the registry
 * test) on the oldest the docs support. The default is the newest, since the whole suite passed on
 * it; DOCEX_N8N_VERSION=2.40.7 runs the whole suite on the oldest. (n8n 2.41.3, npm's latest, does
 * not install from the registry here: two of its @n8n packages are missing.)
 */
export const NEWEST_N8N = '2.41.1';
export const OLDEST_N8N = '2.40.7';
export const N8N_VERSION = process.env.DOCEX_N8N_VERSION || NEWEST_N8N;

/**
 * n8n's optional modules that no headless test uses (n8n's module list, the same on 2.40.7 and
 * 2.41.1; an unknown name stops n8n at its start). Each one loaded costs CPU at the boot and adds
 * timers, database reads and buffers that run while n8n idles. Kept: community-packages (the
 * registry test installs through it), policy-infrastructure, encryption-key-manager and
 * runtime-credentials (credentials, the core's own paths). (`agents` is n8n's own agent product,
 * not the AI Agent node agent.test.ts runs.) Measured with bench/n8n-idle.ts (n8n 2.41.1, headless,
 * 60 s idle, interleaved, load 13-23): idle 1.02 and 1.22 CPU-s a minute against 1.41 and 1.91;
 * the boot the same (17.6 and 19.2 CPU-s against 19.2 and 18.8). Not for the editor's n8n or the UI
 * install's: a browser shows what the modules add.
 */
const UNUSED_N8N_MODULES = [
  'insights',
  'external-secrets',
  'data-table',
  'oauth-server',
  'mcp',
  'provisioning',
  'breaking-changes',
  'source-control',
  'dynamic-credentials',
  'chat-hub',
  'sso-oidc',
  'sso-saml',
  'log-streaming',
  'ldap',
  'quick-connect',
  'workflow-builder',
  'favorites',
  'redaction',
  'instance-registry',
  'otel',
  'token-exchange',
  'instance-version-history',
  'oauth-jwe',
  'n8n-packages',
  'mcp-registry',
  'workflow-reviews',
  'instance-ai',
  'agents',
];

/**
 * The settings of an n8n no browser opens (every e2e n8n but the editor test's and the UI install's):
 * no editor UI. At each start n8n copies its editor's 29 MB of scripts through five text
 * replacements into the user folder; without the UI it skips that, and nothing a test drives
 * through the REST API, webhooks or the CLI depends on it. A boot of n8n 2.41.1 to readiness took
 * 16.0 and 19.5 CPU-s headless against 22.2-23.8 with the UI (4 boots; bench/n8n-idle.ts, load 6-8).
 */
// And without the optional modules no test uses (UNUSED_N8N_MODULES): less CPU while it idles.
export const HEADLESS_N8N: NodeJS.ProcessEnv = {
  N8N_DISABLE_UI: 'true',
  N8N_DISABLED_MODULES: UNUSED_N8N_MODULES.join(','),
};

/**
 * Installs n8n `version` into the user cache (~/.cache/docex/n8n-<version>) when missing (minutes,
 * once per version); the path of its binary.
 */
export async function installN8n(version: string = N8N_VERSION): Promise<string> {
  const { stdout } = await run('bash', [join(repo, 'scripts/n8n-install.sh'), version], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

/** n8n's install folder (its node_modules hold n8n's own dependencies: flatted, pg). */
export const installDirOf = (bin: string) => dirname(dirname(dirname(bin)));

/**
 * The user folder (`home`) whose SQLite database n8n `bin` has migrated: made once per n8n version,
 * beside its install (~/.cache/docex/n8n-<version>/migrated-sqlite), and copied into every user
 * folder of that version (`prepareUserFolder`). A fresh n8n runs its 266 migrations on an empty
 * database at every boot; a copy of a migrated one skips them: n8n 2.41.1's `start` took 18.6 s of
 * CPU to readiness on a copy against 23.0 s on an empty folder (3 boots each, load 7-12; wall 47 s
 * against 60 s on average). It holds .n8n/database.sqlite only: no owner (each instance sets up
 * its own) and no `config` (each instance makes its own encryption key).
 *
 * `n8n list:workflow` migrates and exits: no server start. Two runs making it at once (two
 * engineers, two checkouts) each migrate a folder of their own; the first rename wins.
 */
export async function migratedSqliteFolder(bin: string): Promise<string> {
  const folder = join(installDirOf(bin), 'migrated-sqlite');
  if (existsSync(join(folder, '.n8n', 'database.sqlite'))) return folder;
  const started = performance.now();
  // In the install folder, so that the rename into place stays on one file system.
  const home = await mkdtemp(join(installDirOf(bin), '.migrating-'));
  try {
    await mkdir(join(home, 'files'));
    await run(bin, ['list:workflow'], { env: await n8nEnvironment(home), maxBuffer: 64 * 1024 * 1024 });
    await intoOneFile(bin, join(home, '.n8n', 'database.sqlite'));
    // Only the database: the encryption key, event log and crash journal are each instance's own.
    for (const file of await readdir(join(home, '.n8n')))
      if (!file.startsWith('database.sqlite'))
        await rm(join(home, '.n8n', file), { recursive: true, force: true });
    await rm(join(home, 'files'), { recursive: true, force: true });
    await rename(home, folder).catch((error: NodeJS.ErrnoException) => {
      // Another run put its own there first: the same migrations, keep theirs.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
    });
    // A one-time step, like the install: the timing report counts it in a first run's time.
    recordInstall(
      `${basename(installDirOf(bin)).replace('-', ' ')} migrated database`,
      performance.now() - started,
    );
  } finally {
    await rm(home, { recursive: true, force: true });
  }
  return folder;
}

/**
 * Folds the database's write-ahead log into the file (n8n leaves one behind) with n8n's own sqlite3,
 * so that the copies start from one plain file; n8n turns WAL on again at its start.
 */
async function intoOneFile(bin: string, database: string): Promise<void> {
  const sqlite = createRequire(join(installDirOf(bin), 'node_modules', 'n8n', 'package.json'))('sqlite3') as {
    Database: new (file: string) => {
      exec(sql: string, done: (error: Error | null) => void): void;
      close(done: (error: Error | null) => void): void;
    };
  };
  const db = new sqlite.Database(database);
  const settled = (resolve: () => void, reject: (e: Error) => void) => (error: Error | null) =>
    error ? reject(error) : resolve();
  await new Promise<void>((resolve, reject) =>
    db.exec('PRAGMA journal_mode=DELETE', settled(resolve, reject)),
  );
  await new Promise<void>((resolve, reject) => db.close(settled(resolve, reject)));
}

/**
 * Puts a copy of n8n `bin`'s migrated database (migratedSqliteFolder) in the user folder `home`:
 * n8n skips its migrations at the boot and starts empty (no owner, no package, no key), its own copy.
 */
export async function copyMigratedDatabase(bin: string, home: string): Promise<void> {
  await cp(join(await migratedSqliteFolder(bin), '.n8n'), join(home, '.n8n'), { recursive: true });
}

/**
 * A fresh user folder (`home`, N8N_USER_FOLDER) with the n8n-nodes-docex tarball installed in
 * ~/.n8n/nodes as n8n's community-package install lays it out, and an empty `files` folder, the only
 * one n8n may read and write (N8N_RESTRICT_FILE_ACCESS_TO). With `migrated` (migratedSqliteFolder),
 * its database is a copy of that already migrated one: this folder's own, nothing shared.
 */
export async function prepareUserFolder(tarball: string, migrated?: string): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'docex-n8n-e2e-'));
  if (migrated) await cp(join(migrated, '.n8n'), join(home, '.n8n'), { recursive: true });
  const nodesDir = join(home, '.n8n', 'nodes');
  await mkdir(join(nodesDir, 'node_modules'), { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', home]);
  await rename(join(home, 'package'), join(nodesDir, 'node_modules', 'n8n-nodes-docex'));
  await writeFile(
    join(nodesDir, 'package.json'),
    JSON.stringify({ dependencies: { 'n8n-nodes-docex': '0.1.0' } }),
  );
  await mkdir(join(home, 'files'));
  return home;
}

/** The environment of every n8n command and server on the user folder `home`. */
export async function n8nEnvironment(
  home: string,
  extra: NodeJS.ProcessEnv = {},
): Promise<NodeJS.ProcessEnv> {
  // vitest sets NODE_ENV=test and VITEST*: n8n must not run in its own test mode.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith('VITEST') && k !== 'NODE_ENV' && k !== 'TEST' && !k.startsWith('DOCEX_TIMINGS'),
    ),
  );
  return {
    ...inherited,
    NODE_ENV: 'production',
    N8N_USER_FOLDER: home,
    N8N_DIAGNOSTICS_ENABLED: 'false',
    N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
    N8N_RUNNERS_ENABLED: 'false',
    // `n8n execute` binds its task broker's port even with runners off (default 5679): two test
    // runs on one machine collided there ("n8n Task Broker's port 5679 is already in use").
    N8N_RUNNERS_BROKER_PORT: String(await freePort()),
    N8N_RESTRICT_FILE_ACCESS_TO: join(home, 'files'),
    N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
    ...extra,
  };
}
