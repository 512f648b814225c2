/**
 * The release (scripts/release.ts) made once per run for the tests that need it: release.test.ts,
 * debian-package.test.ts and container.test.ts. The e2e global set-up makes it (`makeRelease`, on
 * the run's start when one of its files calls `releaseOnce`), and each file waits for that one
 * (`releaseOnce`): made in each file, two files in two workers built the same release at the same
 * time, each blocking its worker. It is made from a copy of its sources (`copyInputs`): made in
 * the checkout, it rewrote daemon/dist and cli/dist while test/docex-cli/startup.test.ts built and
 * ran them.
 *
 * It is kept in the system's temp folder under a hash of everything that goes into it, so a run
 * whose sources did not change (another worktree's, a fresh clone's) reuses the archives and
 * packages made before. Made with --fast (the least compression): the same files, in the same
 * formats, minutes sooner; `npm run release` compresses best.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { timed } from '../support/timing.ts';
import { until } from './services.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');

/**
 * What scripts/release.ts and scripts/build.ts read, but the installed modules: a change to any of
 * them makes another release. The release is made from a copy of these files only, so one missing
 * here fails the build instead of going unnoticed (tsconfig.json: esbuild reads its compiler options;
 * package.json: "type": "module" for the scripts; shared/package.json: @docex/shared's exports).
 */
const INPUTS = [
  'package.json',
  'tsconfig.json',
  'cli/src',
  'cli/bin',
  'cli/package.json',
  'cli-kit/src',
  'cli-kit/package.json',
  'daemon/src',
  'daemon/bin',
  'daemon/man',
  'daemon/package.json',
  'daemon/README.md',
  'daemon/CHANGELOG.md',
  'shared/src',
  'shared/package.json',
  'scripts/build.ts',
  'scripts/defer-intl.ts',
  'scripts/eager-modules.ts',
  'scripts/release.ts',
  'scripts/release-layout.ts',
  'examples/docex-sync.yaml',
  'examples/docex-sync.service',
  'package-lock.json',
];

/**
 * The release's inputs copied into `into` (the files of INPUTS that git tracks or would track), and
 * the hash of what was copied: the release is made from this copy, so that it is made from exactly
 * the files its hash names, and never reads or writes the checkout's daemon/dist or cli/dist while a
 * test builds or runs them (test/docex-cli/startup.test.ts builds the bundles in the checkout).
 */
async function copyInputs(into: string): Promise<string> {
  const { stdout } = await run(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...INPUTS],
    { cwd: repo, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  const files = stdout.split('\0').filter(Boolean).sort();
  const hash = createHash('sha256');
  for (const file of files) {
    const content = await readFile(join(repo, file)).catch(() => undefined);
    hash.update(file);
    hash.update(content ?? 'deleted');
    if (!content) continue; // deleted, not yet committed
    const mode = (await stat(join(repo, file))).mode & 0o777;
    await mkdir(dirname(join(into, file)), { recursive: true });
    await writeFile(join(into, file), content, { mode });
  }
  hash.update(process.version);
  return hash.digest('hex').slice(0, 16);
}

/**
 * The checkout's installed modules in the copy, hard-linked (one `cp -al`: about 2 s of CPU, only
 * when a release is made). Not symbolic links: esbuild names a bundled module by its real path
 * relative to the build's folder, so packages linked from outside the copy would put this machine's
 * paths into the bundles. The workspace's own packages are relative links (docex -> ../cli): copied
 * as links, they lead into the copy, as they do in the checkout. A workspace's nested node_modules
 * (daemon/node_modules) comes too: esbuild resolves from there first. Dot entries (npm's bins, vite's
 * and vitest's caches, written while the suite runs) are left out: the release reads none of them.
 */
async function linkInstalledModules(copy: string) {
  for (const folder of ['', 'cli', 'cli-kit', 'daemon', 'shared']) {
    const from = join(repo, folder, 'node_modules');
    if (!existsSync(from)) continue;
    const entries = (await readdir(from)).filter((name) => !name.startsWith('.'));
    await mkdir(join(copy, folder, 'node_modules'), { recursive: true });
    if (entries.length)
      await run('cp', [
        '-al',
        ...entries.map((name) => join(from, name)),
        join(copy, folder, 'node_modules'),
      ]);
  }
}

/** A made release as the global set-up hands it to the files (JSON). */
export interface MadeRelease {
  dir: string;
  version: string;
  /** file name -> bytes */
  sizes: Record<string, number>;
}

export interface Release extends MadeRelease {
  file(name: string): string;
}

const COMPLETE = '.complete';

/** The timing report's name for making the release (or finding it made). */
export const RELEASE_PHASE = 'release, scripts/release.ts --fast (made once for these sources, or its check)';

/**
 * Two days unused. A run marks its release used (the stamp's time); a run of an older checkout
 * only reads the folder, which moves its access time at least once a day (relatime): a folder read
 * within the last day is never older than this.
 */
const UNUSED_MS = 2 * 24 * 3600 * 1000;

/**
 * Removes the releases of other sources (280 MB each) that no run has used for two days, and the
 * scratch folders and source copies of builds cut short as long ago: every commit that changes the
 * release's inputs leaves one in the temp folder.
 */
async function removeUnusedReleases(kept: string) {
  for (const name of await readdir(tmpdir())) {
    if (!/^docex-release-(?:[0-9a-f]{16}|sources)(\.\d+)?$/.test(name)) continue;
    const path = join(tmpdir(), name);
    if (path === kept) continue;
    const [folder, stamp] = await Promise.all([
      stat(path).catch(() => undefined),
      stat(join(path, COMPLETE)).catch(() => undefined),
    ]);
    if (!folder) continue;
    const lastUsed = Math.max(folder.atimeMs, folder.mtimeMs, stamp?.mtimeMs ?? 0);
    if (Date.now() - lastUsed > UNUSED_MS) await rm(path, { recursive: true, force: true });
  }
}

/**
 * The release of the current sources: the one made from the same inputs before, or made now by
 * scripts/release.ts in a child process (this process's event loop stays free: the global set-up
 * answers the files from it). Another process (another run, another worktree) may make the same
 * one at the same time: the first to finish keeps its folder, the other's is thrown away, and a
 * complete folder is never removed or replaced, since a test may be reading it.
 */
export async function makeRelease(): Promise<MadeRelease> {
  const copy = join(tmpdir(), `docex-release-sources.${process.pid}`);
  await rm(copy, { recursive: true, force: true });
  try {
    const dir = join(tmpdir(), `docex-release-${await copyInputs(copy)}`);
    if (!existsSync(join(dir, COMPLETE))) await releaseFromCopy(copy, dir);
    // Its stamp says when it was last used: releases of other sources unused for two days are removed.
    const now = new Date();
    await utimes(join(dir, COMPLETE), now, now);
    await removeUnusedReleases(dir);
    const { version } = JSON.parse(await readFile(join(copy, 'daemon/package.json'), 'utf8')) as {
      version: string;
    };
    const sizes: Record<string, number> = {};
    for (const name of await readdir(dir))
      if (!name.startsWith('.') && name !== 'SHA256SUMS') sizes[name] = (await stat(join(dir, name))).size;
    return { dir, version, sizes };
  } finally {
    await rm(copy, { recursive: true, force: true });
  }
}

/** scripts/release.ts of the copy (its `repo` is the copy: it builds the bundles there), into `dir`. */
async function releaseFromCopy(copy: string, dir: string) {
  await linkInstalledModules(copy);
  const scratch = `${dir}.${process.pid}`;
  await rm(scratch, { recursive: true, force: true });
  // The project's Node runs the script (it is this process's).
  await run(process.execPath, [join(copy, 'scripts/release.ts'), '--fast', '--out', scratch], {
    cwd: copy,
    maxBuffer: 64 * 1024 * 1024,
  }).catch(async (error: unknown) => {
    await rm(scratch, { recursive: true, force: true });
    throw error;
  });
  await writeFile(join(scratch, COMPLETE), '');
  // A folder left without its stamp (a run cut short in an older layout) is not a release.
  if (existsSync(dir) && !existsSync(join(dir, COMPLETE))) await rm(dir, { recursive: true, force: true });
  await rename(scratch, dir).catch(async (error: NodeJS.ErrnoException) => {
    // Another process finished the same release first: its folder is the one.
    if (!existsSync(join(dir, COMPLETE))) throw error;
    await rm(scratch, { recursive: true, force: true });
  });
}

/** How long a file waits for the release at most: on a loaded machine it takes minutes. */
const RELEASE_WAIT_MS = 1_800_000;

let asked: Promise<Release> | undefined;

/**
 * The release of the current sources, made once for the run by the e2e global set-up (GET /release
 * of its endpoint, the protocol of test/e2e/shared.ts: 202 while it is being made); made here, in
 * this process, when the file runs without that set-up.
 */
export function releaseOnce(): Promise<Release> {
  asked ??= (async () => {
    // Imported here: the global set-up imports this module in vitest's main process.
    const { inject } = await import('vitest');
    const broker = inject('docexE2eBroker');
    const made = broker
      ? await timed('waiting for the shared release', () =>
          until(
            'the e2e global set-up to make the release (scripts/release.ts --fast)',
            async () => {
              const response = await fetch(`${broker}/release`).catch(() => undefined);
              if (!response || response.status === 202) return undefined;
              const text = await response.text();
              if (response.status !== 200)
                throw new Error(`the e2e global set-up failed to make the release:\n${text}`);
              return JSON.parse(text) as MadeRelease;
            },
            RELEASE_WAIT_MS,
          ),
        )
      : await timed(RELEASE_PHASE, makeRelease);
    return { ...made, file: (name: string) => join(made.dir, name) };
  })();
  return asked;
}
