/**
 * Loaded into a process a test starts (`--import` in NODE_OPTIONS): measures that process's own
 * event-loop delay, so a test can tell how long its loop was held and by how much, not only that a
 * request went unanswered. Each SIGUSR2 ends a window: its figures are written as one JSON line
 * appended to the file named by DOCEX_LOOP_DELAY_FILE, and a new window starts. Signals rather
 * than a timer or a socket: the process's own behaviour is left as it is.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** One window's figures, in milliseconds. */
export interface LoopDelayWindow {
  window: number;
  maxMs: number;
  p99Ms: number;
  meanMs: number;
  samples: number;
}

/** Sampling every 10 ms: a hold of a few tens of milliseconds shows; the sampling itself costs nothing to speak of. */
const RESOLUTION_MS = 10;

const file = process.env.DOCEX_LOOP_DELAY_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let window = 0;
  process.on('SIGUSR2', () => {
    // The histogram counts the resolution itself into every sample; what is left is the delay.
    const ms = (ns: number) => Math.max(0, Math.round((ns / 1e6 - RESOLUTION_MS) * 10) / 10);
    const figures: LoopDelayWindow = {
      window: window++,
      maxMs: ms(histogram.max),
      p99Ms: ms(histogram.percentile(99)),
      meanMs: ms(histogram.mean),
      samples: histogram.count,
    };
    appendFileSync(file, `${JSON.stringify(figures)}\n`);
    histogram.reset();
  });
}
