/**
 * Scratch that killed test runs left in the temp folder. A run removes its own folders (afterAll,
 * the global set-ups' stops); a run killed midway (a second Ctrl-C, a session's end, CI's time
 * limit) cannot, and they add up: a packed clone is about 1 GB, a Debian root keeps a /proc mounted
 * in it, an n8n user folder is 50 MB. Killed runs filled this machine's disk once. So each run, as
 * it starts (vitest.config.ts), removes what no run has touched for longer than any run lasts.
 *
 * Not touched: the cached releases (`docex-release-<hash>`, test/e2e/release-build.ts keeps them by
 * their own rule), the demo's folder (`npm run demo` prints it for the user to look at), and
 * anything not named by these tests.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** mkdtemp's folders of the tests (a 6-character suffix) and the runs' timing files. */
const SCRATCH = /^docex-[a-z0-9-]+-[A-Za-z0-9]{6}$|^docex-timings-\d+\.jsonl$/;
const KEPT = /^docex-demo-/;

/** Longer than any test run lasts (CI gives one 90 minutes): nothing of a live run is this old. */
export const STALE_AFTER_MS = 6 * 3600_000;

/** Whether `name`, last touched at `lastTouchedMs`, is a killed run's scratch at `nowMs`. */
export function isStaleScratch(name: string, lastTouchedMs: number, nowMs: number): boolean {
  return SCRATCH.test(name) && !KEPT.test(name) && nowMs - lastTouchedMs > STALE_AFTER_MS;
}

/**
 * The latest change to a folder or its direct entries (a live n8n writes below its top folder).
 * A mount point's time is its file system's (a /proc mounted at the run's start), not the run's.
 */
function lastTouched(path: string, mounts: readonly string[]): number {
  const own = statSync(path);
  if (!own.isDirectory()) return own.mtimeMs;
  let latest = own.mtimeMs;
  for (const entry of readdirSync(path)) {
    if (mounts.includes(join(path, entry))) continue;
    const at = statSync(join(path, entry), { throwIfNoEntry: false })?.mtimeMs ?? 0;
    latest = Math.max(latest, at);
  }
  return latest;
}

/** The machine's mount points, as /proc/mounts lists them. */
function mountPoints(): string[] {
  return (
    readFileSync('/proc/mounts', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[1])
      .filter((point): point is string => point !== undefined)
      // /proc/mounts writes a space, tab, newline or backslash of a path as \ooo.
      .map((point) =>
        point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))),
      )
  );
}

/** The mount points inside `path` (a Debian root's /proc), deepest first. */
const mountsInside = (path: string, mounts: readonly string[]) =>
  mounts.filter((point) => point.startsWith(`${path}/`)).sort((a, b) => b.length - a.length);

/**
 * Removes the stale scratch in `dir` and returns the names removed. A folder with a mount inside
 * is unmounted first and left alone if that fails; the removal never crosses into another file
 * system.
 */
export function removeStaleScratch(dir = tmpdir(), nowMs = Date.now()): string[] {
  const removed: string[] = [];
  const names = readdirSync(dir).filter((name) => SCRATCH.test(name));
  if (names.length === 0) return removed;
  const machineMounts = mountPoints();
  for (const name of names) {
    const path = join(dir, name);
    const mounts = mountsInside(path, machineMounts);
    try {
      if (!isStaleScratch(name, lastTouched(path, mounts), nowMs)) continue;
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    const unmounted = mounts.every(
      (point) => spawnSync('umount', ['-l', point], { stdio: 'ignore' }).status === 0,
    );
    if (!unmounted) continue;
    if (spawnSync('rm', ['-rf', '--one-file-system', path], { stdio: 'ignore' }).status === 0)
      removed.push(name);
  }
  return removed;
}
