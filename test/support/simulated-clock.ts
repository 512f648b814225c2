/** A simulated clock: sleeps and scheduled callbacks run in time order, instantly. */
export interface SimulatedClock {
  now: () => number;
  schedule: (ms: number, run: () => void) => void;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Runs timers until none are left (letting promises settle in between). */
  drain: () => Promise<void>;
}

export function simulatedClock(): SimulatedClock {
  let now = 0;
  const timers: Array<{ at: number; run: () => void }> = [];
  const schedule = (ms: number, run: () => void) => {
    timers.push({ at: now + ms, run });
    timers.sort((a, b) => a.at - b.at);
  };
  return {
    now: () => now,
    schedule,
    sleep: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve, reject) => {
        schedule(ms, resolve);
        signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      }),
    async drain() {
      for (;;) {
        for (let i = 0; i < 20; i++) await Promise.resolve();
        const next = timers.shift();
        if (!next) return;
        now = Math.max(now, next.at);
        next.run();
      }
    },
  };
}
