/**
 * Where a test run's time goes, measured where it is spent: the expensive steps of fixtures (an n8n
 * boot, a pack, a browser launch, a wait for a shared server) are wrapped in `timed(phase, fn)`,
 * which appends one line to the run's timings file; test/support/timing-reporter.ts reads it at the
 * end of the run and prints the per-file report.
 *
 * The file is named by DOCEX_TIMINGS_FILE, which vitest.config.ts sets for the run (workers inherit
 * it). Without it (a bench, a script) `timed` only runs `fn`.
 *
 * One-time installs (n8n, Chromium, Debian packages, Node 24, npm ci) also leave their duration in
 * the user cache (`recordInstall`), so that a later run, with everything cached, can still say how
 * long a first run on a new machine takes.
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TimingLine {
  /** The test file that spent the time, or null for the run's shared set-ups (global set-up). */
  file: string | null;
  phase: string;
  ms: number;
  /** When the phase ended (epoch ms). */
  at: number;
}

/** The test file running in this worker: vitest keeps it in expect's state; none in the main process. */
async function currentTestFile(): Promise<string | null> {
  if (!process.env.VITEST_WORKER_ID) return null;
  try {
    const { expect } = await import('vitest');
    return expect.getState().testPath ?? null;
  } catch {
    return null;
  }
}

export function recordTiming(line: TimingLine): void {
  const file = process.env.DOCEX_TIMINGS_FILE;
  if (!file) return;
  // One short line per write: appends of less than a pipe buffer do not interleave between workers.
  appendFileSync(file, `${JSON.stringify(line)}\n`);
}

/**
 * Runs `fn` and records how long it took under `phase` for the current test file (or `ms`, for a
 * phase measured by the caller, such as a server's start measured from its spawn).
 */
export async function timed<T>(phase: string, fn: () => T | Promise<T>, ms?: number): Promise<T> {
  const file = await currentTestFile();
  const started = performance.now();
  try {
    return await fn();
  } finally {
    recordTiming({ file, phase, ms: ms ?? performance.now() - started, at: Date.now() });
  }
}

/** The phase test/support/file-cpu.ts records a file's CPU under (not a part of its wall time). */
export const CPU_PHASE = 'cpu';

/** Parses /proc/<pid>/stat: the parent and the CPU (user + system, its own and its reaped children's) in ms. */
function statOf(pid: number | 'self'): { ppid: number; cpuMs: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which may hold spaces: state, ppid, ...; utime is the 14th
    // field overall, then stime, cutime, cstime, in clock ticks of 10 ms (Linux's USER_HZ).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
    const ticks = fields[11]! + fields[12]! + fields[13]! + fields[14]!;
    return Number.isFinite(ticks) ? { ppid: fields[1]!, cpuMs: ticks * 10 } : undefined;
  } catch {
    return undefined;
  }
}

/** The CPU this process and its reaped children used, in ms. Undefined off Linux. */
export function processCpuMs(): number | undefined {
  return statOf('self')?.cpuMs;
}

/**
 * The CPU of this process and of every process below it, alive or reaped, in ms: its own figure
 * (which holds its reaped children's) plus each live descendant's (which holds theirs). A
 * descendant that exited and was not reaped yet still shows its figure. Undefined off Linux.
 */
export function processTreeCpuMs(): number | undefined {
  const self = statOf('self');
  if (!self) return undefined;
  const parents = new Map<number, { ppid: number; cpuMs: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = statOf(Number(name));
    if (stat) parents.set(Number(name), stat);
  }
  const below = (pid: number, seen: Set<number>): boolean => {
    for (let at = pid; at > 1; at = parents.get(at)?.ppid ?? 0) {
      if (at === process.pid) return true;
      if (seen.has(at)) return false;
      seen.add(at);
    }
    return false;
  };
  let total = self.cpuMs;
  for (const [pid, stat] of parents) if (pid !== process.pid && below(pid, new Set())) total += stat.cpuMs;
  return total;
}

export function readTimings(file: string | undefined): TimingLine[] {
  if (!file) return [];
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TimingLine);
  } catch {
    return [];
  }
}

/** The user cache scripts/env.sh uses (DOCEX_CACHE, else ~/.cache/docex). */
const cacheDir = () =>
  process.env.DOCEX_CACHE ??
  join(process.env.XDG_CACHE_HOME ?? join(process.env.HOME ?? '/root', '.cache'), 'docex');

export interface InstallRecord {
  what: string;
  seconds: number;
  /** When it was installed (epoch seconds). */
  at: number;
}

/**
 * Keeps how long a one-time install took, in the user cache (one file per install, the same format
 * as scripts/env.sh's `record_install`: "<seconds> <epoch seconds>").
 */
export function recordInstall(what: string, ms: number): void {
  const dir = join(cacheDir(), 'install-times');
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, what), `${Math.round(ms / 1000)} ${Math.round(Date.now() / 1000)}\n`);
  } catch {
    // A read-only cache only costs the report its figure.
  }
}

export function readInstalls(): InstallRecord[] {
  const dir = join(cacheDir(), 'install-times');
  try {
    return readdirSync(dir).flatMap((what) => {
      const [seconds, at] = readFileSync(join(dir, what), 'utf8').trim().split(/\s+/).map(Number);
      return Number.isFinite(seconds) && Number.isFinite(at) ? [{ what, seconds: seconds!, at: at! }] : [];
    });
  } catch {
    return [];
  }
}

/** The measured first run on this machine: the whole of a run that made every one-time install. */
export interface FirstRunRecord {
  /** From scripts/run.sh's start (Node 24 and npm ci included) to the report. */
  seconds: number;
  /** When it ended (epoch seconds). */
  at: number;
  /** Its one-time installs' own times added up (they overlap each other and the tests). */
  installSeconds: number;
}

const firstRunFile = () => join(cacheDir(), 'first-run');

export function recordFirstRun(record: FirstRunRecord): void {
  try {
    mkdirSync(cacheDir(), { recursive: true });
    writeFileSync(firstRunFile(), `${record.seconds} ${record.at} ${record.installSeconds}\n`);
  } catch {
    // A read-only cache only costs the report its figure.
  }
}

export function readFirstRun(): FirstRunRecord | undefined {
  try {
    const [seconds, at, installSeconds] = readFileSync(firstRunFile(), 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    return [seconds, at, installSeconds].every(Number.isFinite)
      ? { seconds: seconds!, at: at!, installSeconds: installSeconds! }
      : undefined;
  } catch {
    return undefined;
  }
}
