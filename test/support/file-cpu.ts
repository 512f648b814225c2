/**
 * A set-up file of every project (vitest.config.ts): records the CPU each test file cost, so the
 * timing report can say where the run's CPU goes, not only its wall time. On two cores the suite is
 * bound by CPU as much as by waiting, and a wall time alone cannot tell the two apart.
 *
 * A file's CPU is its worker process's user and system time since the previous file of that process
 * ended (or since the process started: its start and the file's import count), plus the CPU of the
 * child processes it started and reaped (servers, CLIs, n8n). Children still running when the file
 * ends, or left to init, are not counted; the run's own process (global set-ups, shared n8n) is
 * counted apart by the report.
 */
import { afterAll, expect } from 'vitest';
import { CPU_PHASE, processCpuMs, recordTiming } from './timing.ts';

const CARRY = Symbol.for('docex.fileCpu.lastMs');
type Carrier = { [CARRY]?: number };

afterAll(() => {
  const now = processCpuMs();
  if (now === undefined) return;
  const carrier = process as unknown as Carrier;
  const since = carrier[CARRY] ?? 0;
  carrier[CARRY] = now;
  const file = expect.getState().testPath ?? null;
  recordTiming({ file, phase: CPU_PHASE, ms: now - since, at: Date.now() });
});
