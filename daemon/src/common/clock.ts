/**
 * The daemon's clock for scheduling: wall-clock milliseconds at the start, then advancing with the
 * monotonic clock. Due times (next_at), stability windows, poll intervals and task timeouts are
 * durations; measured this way, a step of the system clock (NTP, a VM restored, daylight saving done
 * wrong, a user's `date -s`) neither holds a file back for the size of the step (a step back) nor
 * makes every waiting file due at once (a step forward). A process stopped and continued (SIGSTOP,
 * a laptop lid) sees the time it was stopped pass, as the monotonic clock counts it. The values stay
 * close to wall-clock time, so they are stored and shown as times; after a step they differ from the
 * wall clock by the step until the next start (docs/decisions.md, "Clock").
 */
export function steadyClock(
  wall: () => number = Date.now,
  monotonic: () => number = () => performance.now(),
): () => number {
  const offset = wall() - monotonic();
  // Whole milliseconds: the state DB's time columns are integers.
  return () => Math.floor(offset + monotonic());
}
