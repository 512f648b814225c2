/**
 * The parts of a real n8n that need no test context, so that the e2e global set-up (the main
 * vitest process) and the test files share them: the install (scripts/n8n-install.sh), a fresh user
 * folder with the packed n8n-nodes-docex installed the way users install it, and n8n's environment.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
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
 * A fresh user folder (`home`, N8N_USER_FOLDER) with the n8n-nodes-docex tarball installed in
 * ~/.n8n/nodes as n8n's community-package install lays it out, and an empty `files` folder, the only
 * one n8n may read and write (N8N_RESTRICT_FILE_ACCESS_TO).
 */
export async function prepareUserFolder(tarball: string): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), 'docex-n8n-e2e-'));
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
