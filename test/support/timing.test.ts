import { describe, expect, it } from 'vitest';
import { processCpuMs, processTreeCpuMs } from './timing.ts';

/** Keeps this thread busy until it has used `ms` of CPU by the process's own count. */
function burn(ms: number) {
  const until = process.cpuUsage();
  let x = 0;
  for (;;) {
    for (let i = 0; i < 100_000; i++) x += Math.sqrt(i);
    const used = process.cpuUsage(until);
    if ((used.user + used.system) / 1000 >= ms) return x;
  }
}

describe.runIf(process.platform === 'linux')('the CPU figures of the timing report', () => {
  it('count the CPU this process uses, as the kernel does', () => {
    const before = processCpuMs()!;
    burn(300);
    const after = processCpuMs()!;
    // Ticks of 10 ms: what the kernel counted lies within two ticks of what Node counted.
    expect(after - before).toBeGreaterThanOrEqual(280);
    expect(after - before).toBeLessThan(300 + 1000);
  });

  it("count the process's tree at least as high as the process itself", () => {
    const own = processCpuMs()!;
    expect(processTreeCpuMs()!).toBeGreaterThanOrEqual(own);
  });
});
