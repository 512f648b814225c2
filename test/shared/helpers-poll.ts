/** A fake clock whose sleep advances it: waitForTask's time without waiting. */
import { recordingSleep, type RecordingSleep } from '../support/client.ts';

export interface FakeClock {
  now: () => number;
  sleep: RecordingSleep;
  elapsed: () => number;
}

export function fakeClock(start = Date.parse('2030-01-01T00:00:00Z')): FakeClock {
  let t = start;
  const sleep = recordingSleep((ms) => {
    t += ms;
  });
  return { now: () => t, sleep, elapsed: () => t - start };
}
