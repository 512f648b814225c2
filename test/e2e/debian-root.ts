/**
 * A Debian 12 root file system made from Debian's packages (mmdebstrap, minbase plus systemd for
 * `systemd-analyze verify` and `systemctl enable`), kept as a tarball in ~/.cache/docex/debian: it
 * takes minutes to make and never changes. The Debian package test unpacks it and installs into it
 * with chroot; the container test imports it as the image's base (docs/real-parts-offline.md).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordInstall, timed } from '../support/timing.ts';
import { ensureDebianPackage, onPath } from './services.ts';
import { runToEnd, start, type Ran, type Running } from './release-world.ts';

const docexCache =
  process.env.DOCEX_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'docex');
const cacheDir = join(docexCache, 'debian');
/** lintian's clean verdicts, by the SHA-256 of the packages it checked (debian-package.test.ts). */
export const LINTIAN_CACHE = join(docexCache, 'lintian');
export const ROOT_TARBALL = join(cacheDir, 'bookworm-minbase-systemd.tar');

/** Why a Debian root cannot be made or used here, or undefined when it can. */
export function debianRootUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux';
  if (process.getuid?.() !== 0) return 'needs root (chroot, mmdebstrap, dpkg in a root of its own)';
  if (!onPath('apt-get'))
    return 'no apt-get on this machine (not Debian-based): mmdebstrap cannot be installed';
  return undefined;
}

/** The cached tarball, made with mmdebstrap the first time (installed from Debian's packages if missing). */
export function debianRootTarball(): string {
  if (existsSync(ROOT_TARBALL)) return ROOT_TARBALL;
  ensureDebianPackage('mmdebstrap', () => onPath('mmdebstrap'));
  execFileSync('mkdir', ['-p', cacheDir]);
  const partial = `${ROOT_TARBALL}.${process.pid}.tar`;
  const started = Date.now();
  const made = spawnSync(
    'mmdebstrap',
    [
      '--variant=minbase',
      '--include=systemd',
      // This machine's apt settings: its mirror's Release files may be older than apt would accept.
      '--aptopt=Acquire::Check-Valid-Until "false"',
      '--aptopt=Acquire::Check-Date "false"',
      'bookworm',
      partial,
      'deb http://deb.debian.org/debian bookworm main',
      'deb http://deb.debian.org/debian-security bookworm-security main',
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  if (made.status !== 0)
    throw new Error(`mmdebstrap failed (exit ${made.status}):\n${made.stderr.slice(-3000)}`);
  execFileSync('mv', [partial, ROOT_TARBALL]);
  recordInstall('Debian root (mmdebstrap)', Date.now() - started);
  console.log(
    `debian root: made ${ROOT_TARBALL} in ${((Date.now() - started) / 1000).toFixed(0)} s (cached for later runs)`,
  );
  return ROOT_TARBALL;
}

export interface DebianRoot {
  dir: string;
  /**
   * Runs a command inside the root (chroot) to its end, without blocking this process (the
   * emulator the command may talk to answers from it).
   */
  run(command: string[], options?: { env?: Record<string, string> }): Promise<Ran>;
  /** Starts a long-running command inside the root, in a process group of its own. */
  start(command: string[], options?: { env?: Record<string, string> }): Running;
  /** Unmounts /proc and deletes the root (never crossing into another file system). */
  remove(): Promise<void>;
}

/** Runs a command to its end without blocking this process; fails with its output unless it exits 0. */
export async function mustRun(command: string, args: string[]): Promise<Ran> {
  const ran = await runToEnd(command, args);
  if (ran.status !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (exit ${ran.status}):\n${ran.stderr.slice(-3000)}`);
  return ran;
}

/**
 * A fresh root unpacked from the cached tarball, /proc mounted. The unpack does not block this
 * process, so that a test file can do it while it waits for something else (the release).
 */
export async function unpackDebianRoot(): Promise<DebianRoot> {
  const tarball = await timed('Debian root tarball (made once with mmdebstrap, or its check)', () =>
    debianRootTarball(),
  );
  const dir = await mkdtemp(join(tmpdir(), 'docex-debian-root-'));
  await timed('Debian root unpacked from its tarball', () => mustRun('tar', ['-xf', tarball, '-C', dir]));
  await mkdir(join(dir, 'proc'), { recursive: true });
  await mustRun('mount', ['-t', 'proc', 'proc', join(dir, 'proc')]);
  const env = {
    PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: '/root',
    LANG: 'C.UTF-8',
    DEBIAN_FRONTEND: 'noninteractive',
  };
  return {
    dir,
    run: (command, options = {}) =>
      runToEnd('chroot', [dir, ...command], { env: { ...env, ...options.env } }),
    start: (command, options = {}) =>
      start('chroot', [dir, ...command], { env: { ...env, ...options.env }, detached: true }),
    async remove() {
      spawnSync('umount', ['-l', join(dir, 'proc')]);
      execFileSync('rm', ['-rf', '--one-file-system', dir]);
    },
  };
}
