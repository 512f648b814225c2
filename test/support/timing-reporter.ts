/**
 * The timing report printed at the end of a test run (vitest.config.ts adds it after the default
 * reporter): the run's wall time against the files' own times (what running files side by side
 * saved), the shared set-ups done once for the run, the one-time installs (this run's, and what a
 * first run on a new machine adds, from the durations kept in the user cache), and the slowest 20
 * files with where their time went:
 *
 * - import: loading the file and what it imports (vitest's collect time);
 * - hooks: beforeAll/afterAll, i.e. set-up and teardown of servers (the module's time less its tests');
 * - tests: the tests themselves;
 * - phases: what the fixtures measured with `timed()` (test/support/timing.ts): an n8n boot, a pack,
 *   a browser launch, waiting for a shared n8n another file is booting.
 *
 * Times are wall-clock: on a shared or loaded machine they stretch, and a file that waits for a
 * shared set-up shows the wait under its phases, not the set-up's own time.
 */
import { availableParallelism } from 'node:os';
import { relative } from 'node:path';
import type { Reporter, TestModule, Vitest } from 'vitest/node';
import {
  CPU_PHASE,
  processCpuMs,
  processTreeCpuMs,
  readFirstRun,
  readInstalls,
  readTimings,
  recordFirstRun,
  type FirstRunRecord,
  type InstallRecord,
  type TimingLine,
} from './timing.ts';

const s = (ms: number) => `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;

const sumSeconds = (records: readonly InstallRecord[]) => records.reduce((n, i) => n + i.seconds, 0);
const installList = (records: readonly InstallRecord[]) =>
  [...records]
    .sort((a, b) => b.seconds - a.seconds)
    .map((i) => `${i.what} ${i.seconds} s`)
    .join(', ');

/**
 * The report's two install lines: this run's one-time installs, and how long a first run on a new
 * machine takes. That is the first run measured here when there was one (the installs overlap each
 * other and the tests, so their own times add up to more than they cost); otherwise an upper bound,
 * this run with every install of the cache's records one after another.
 */
export function installLines(run: {
  installs: readonly InstallRecord[];
  thisRun: readonly InstallRecord[];
  firstRun: FirstRunRecord | undefined;
  wallMs: number;
}): string[] {
  const { installs, thisRun, firstRun, wallMs } = run;
  const first = firstRun
    ? `  a first run on a new machine takes about ${s(firstRun.seconds * 1000)}: measured here on ` +
      `${new Date(firstRun.at * 1000).toISOString().slice(0, 10)}, from \`npm test\` to this report, with its ` +
      `one-time installs (${firstRun.installSeconds} s of their own, beside each other and the tests); this run ${s(wallMs)}`
    : installs.length
      ? `  a first run on a new machine takes at most about ${s(wallMs + (sumSeconds(installs) - sumSeconds(thisRun)) * 1000)}: ` +
        `this run plus the one-time installs last measured here, one after another (${installList(installs)})`
      : '  a first run on a new machine: no one-time install was measured on this machine yet';
  return [
    thisRun.length
      ? `  one-time installs in this run: ${installList(thisRun)} (${sumSeconds(thisRun)} s)`
      : '  one-time installs in this run: none (everything was cached)',
    first,
  ];
}

interface FileRow {
  file: string;
  project: string;
  wallMs: number;
  importMs: number;
  hooksMs: number;
  testsMs: number;
  tests: number;
  /** CPU of the file's worker and the processes it reaped (test/support/file-cpu.ts); 0 if unknown. */
  cpuMs: number;
  phases: TimingLine[];
}

/** Adds up the lines of one phase name (a file may boot or wait more than once). */
function byPhase(lines: TimingLine[]): Array<[string, number, number]> {
  const sums = new Map<string, [number, number]>();
  for (const line of lines) {
    const [ms, count] = sums.get(line.phase) ?? [0, 0];
    sums.set(line.phase, [ms + line.ms, count + 1]);
  }
  return [...sums].map(([phase, [ms, count]]) => [phase, ms, count] as [string, number, number]);
}

const phaseList = (lines: TimingLine[]) =>
  byPhase(lines)
    .sort((a, b) => b[1] - a[1])
    .map(([phase, ms, count]) => `${phase} ${s(ms)}${count > 1 ? ` (${count}×)` : ''}`)
    .join(', ');

export default class TimingReporter implements Reporter {
  private ctx!: Vitest;
  private startedAt = performance.now();
  /** The process's CPU when the run began (scripts/run.sh's one-time installs ran in it before exec). */
  private cpuAtStartMs = processCpuMs() ?? 0;

  onInit(ctx: Vitest): void {
    this.ctx = ctx;
    this.startedAt = performance.now();
    this.cpuAtStartMs = processCpuMs() ?? 0;
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const wallMs = performance.now() - this.startedAt;
    const root = this.ctx.config.root;
    const timings = readTimings(process.env.DOCEX_TIMINGS_FILE);
    const rows: FileRow[] = testModules.map((module) => {
      const d = module.diagnostic();
      const tests = [...module.children.allTests()];
      const testsMs = tests.reduce((sum, t) => sum + (t.diagnostic()?.duration ?? 0), 0);
      return {
        file: relative(root, module.moduleId),
        project: module.project.name,
        wallMs:
          d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration,
        importMs: d.collectDuration,
        hooksMs: Math.max(0, d.duration - testsMs),
        testsMs,
        tests: tests.length,
        cpuMs: timings
          .filter((t) => t.file === module.moduleId && t.phase === CPU_PHASE)
          .reduce((sum, t) => sum + t.ms, 0),
        phases: timings.filter((t) => t.file === module.moduleId && t.phase !== CPU_PHASE),
      };
    });
    const filesMs = rows.reduce((sum, r) => sum + r.wallMs, 0);
    const workers = Math.max(1, ...testModules.map((m) => m.diagnostic().concurrencyId));
    const out: string[] = [];
    out.push('', ' Timing report', '');
    out.push(
      `  wall ${s(wallMs)} for ${rows.reduce((n, r) => n + r.tests, 0)} tests in ${rows.length} files, ` +
        `up to ${workers} at a time; the files' own times add up to ${s(filesMs)}` +
        (filesMs > wallMs ? ` (${(filesMs / wallMs).toFixed(1)}× the wall time)` : ''),
    );

    // The run's CPU: this process (vitest, the global set-ups) and every process below it, reaped or
    // still running (the workers, the shared servers), less what ran in it before the run began. On this many cores the wall time cannot be below
    // the CPU divided by the cores.
    const cpuNow = processTreeCpuMs();
    const runCpuMs = cpuNow === undefined ? undefined : cpuNow - this.cpuAtStartMs;
    const filesCpuMs = rows.reduce((sum, r) => sum + r.cpuMs, 0);
    if (runCpuMs !== undefined && filesCpuMs > 0) {
      const cores = availableParallelism();
      out.push(
        `  CPU ${s(runCpuMs)} (${(runCpuMs / wallMs).toFixed(1)} of ${cores} cores busy on average; ` +
          `${s(runCpuMs / cores)} of wall at the least): test files ${s(filesCpuMs)}, ` +
          `the run's own process, its global set-ups and shared servers ${s(Math.max(0, runCpuMs - filesCpuMs))}`,
      );
    }

    const shared = timings.filter((t) => t.file === null && !t.phase.startsWith('install '));
    if (shared.length) out.push(`  shared set-ups, once for the run: ${phaseList(shared)}`);

    const runStarted = Number(process.env.DOCEX_RUN_STARTED ?? 0);
    const installs = readInstalls();
    const thisRun = installs.filter((i) => runStarted > 0 && i.at >= runStarted);
    // A run that made every one-time install there is was a first run: its whole time is kept.
    if (thisRun.length > 0 && thisRun.length === installs.length) {
      const now = Math.round(Date.now() / 1000);
      recordFirstRun({ seconds: now - runStarted, at: now, installSeconds: sumSeconds(thisRun) });
    }
    out.push(...installLines({ installs, thisRun, firstRun: readFirstRun(), wallMs }));

    // DOCEX_TIMING_ROWS: how many files the report lists (all: every file, to compare two runs).
    const wanted = process.env.DOCEX_TIMING_ROWS;
    const top = wanted === 'all' ? rows.length : Number(wanted) || 20;
    out.push(
      '',
      `  slowest ${Math.min(top, rows.length)} files (wall = import + hooks + tests; phases are parts of them):`,
    );
    const width = Math.max(...rows.map((r) => r.file.length), 10);
    for (const r of [...rows].sort((a, b) => b.wallMs - a.wallMs).slice(0, top)) {
      const phases = phaseList(r.phases);
      out.push(
        `  ${r.file.padEnd(width)} ${s(r.wallMs).padStart(7)}  import ${s(r.importMs).padStart(6)}  ` +
          `hooks ${s(r.hooksMs).padStart(6)}  tests ${s(r.testsMs).padStart(6)} (${r.tests})  cpu ${s(r.cpuMs).padStart(6)}` +
          (phases ? `\n  ${''.padEnd(width)}   ${phases}` : ''),
      );
    }
    if (filesCpuMs > 0) {
      out.push('', `  most CPU, 20 files (the file's worker and the processes it reaped):`);
      for (const r of [...rows].sort((a, b) => b.cpuMs - a.cpuMs).slice(0, 20))
        out.push(`  ${r.file.padEnd(width)} ${s(r.cpuMs).padStart(7)}  (wall ${s(r.wallMs)})`);
    }
    const perProject = new Map<string, number>();
    for (const r of rows) perProject.set(r.project, (perProject.get(r.project) ?? 0) + r.wallMs);
    const cpuPerProject = new Map<string, number>();
    for (const r of rows) cpuPerProject.set(r.project, (cpuPerProject.get(r.project) ?? 0) + r.cpuMs);
    out.push(
      '',
      `  per project (files' own times): ${[...perProject].map(([p, ms]) => `${p} ${s(ms)}`).join(', ')}`,
      `  per project (files' CPU): ${[...cpuPerProject].map(([p, ms]) => `${p} ${s(ms)}`).join(', ')}`,
      '',
    );
    this.ctx.logger.log(out.join('\n'));
  }
}
