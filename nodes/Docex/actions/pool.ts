import { DocexNotFoundError } from '../../../shared/src/core/index.ts';

/** The answer, or undefined when the thing asked for no longer exists (404). */
export async function unlessMissing<T>(promise: Promise<T>): Promise<T | undefined> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) return outcome.value;
  if (outcome.error instanceof DocexNotFoundError) return undefined;
  throw outcome.error;
}

/** Bounded concurrency without timers: at most `limit` calls of `fn` in flight, results in input order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async () => {
    while (!failed && next < items.length) {
      const index = next++;
      let ok = false;
      try {
        results[index] = await fn(items[index]!, index);
        ok = true;
      } finally {
        if (!ok) failed = true; // no new calls; the ones in flight finish
      }
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(Math.floor(limit) || 1, items.length)) }, worker);
  const settled = await Promise.allSettled(workers);
  const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejected) throw rejected.reason;
  return results;
}
