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
