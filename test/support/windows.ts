/** The most events inside any window of `windowMs` (a window (t - windowMs, t], as the emulator counts). */
export function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let max = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    max = Math.max(max, i - j + 1);
  }
  return max;
}
