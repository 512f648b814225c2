/** Waiting for a task to finish: polling with backoff, following child tasks. Pure: sleep and clock come in. */
import { DocexAbortError, DocexTaskTimeoutError } from './errors.ts';
import { FINAL_STATUSES, TASK_STATUSES, type TaskResult } from './schemas.ts';
import type { Logger, Sleep } from './transport.ts';

export interface WaitOptions {
  /** Give up after this long (default 15 minutes). */
  timeoutMs?: number;
  /** First pause between polls (default 1 s), growing by `factor` up to `maxIntervalMs` (default 15 s). */
  intervalMs?: number;
  maxIntervalMs?: number;
  factor?: number;
  signal?: AbortSignal;
  /** Called after every poll. */
  onProgress?: (result: TaskResult, info: { taskId: string; elapsedMs: number; polls: number }) => void;
  /** Wait for the tasks listed in child_task_ids too (default true). */
  followChildren?: boolean;
}

export type WaitResult = TaskResult & { children?: WaitResult[] };

export interface PollDeps {
  fetchResult: (taskId: string, signal?: AbortSignal) => Promise<TaskResult>;
  sleep: Sleep;
  now: () => number;
  logger?: Logger;
}

export const DEFAULT_WAIT_TIMEOUT_MS = 15 * 60_000;

export const isFinalStatus = (status: string) => FINAL_STATUSES.has(status);

export async function waitForTask(
  taskId: string,
  deps: PollDeps,
  options: WaitOptions = {},
): Promise<WaitResult> {
  const {
    timeoutMs = DEFAULT_WAIT_TIMEOUT_MS,
    maxIntervalMs = 15_000,
    factor = 1.5,
    signal,
    onProgress,
    followChildren = true,
  } = options;
  const started = deps.now();
  const deadline = started + timeoutMs;
  let interval = options.intervalMs ?? 1000;
  let polls = 0;
  const unknownSeen = new Set<string>();

  for (;;) {
    throwIfAborted(signal);
    const result = await deps.fetchResult(taskId, signal);
    polls++;
    onProgress?.(result, { taskId, elapsedMs: deps.now() - started, polls });
    if (!(TASK_STATUSES as readonly string[]).includes(result.status) && !unknownSeen.has(result.status)) {
      unknownSeen.add(result.status);
      deps.logger?.warn(
        { taskId, status: result.status },
        'docex: unknown task status, treated as not finished',
      );
    }
    const children = followChildren
      ? [...new Set(result.child_task_ids ?? [])].filter((c) => c !== taskId)
      : [];
    if (children.length > 0) {
      const settled: WaitResult[] = [];
      for (const child of children) {
        settled.push(
          await waitForTask(child, deps, {
            ...options,
            followChildren: false,
            timeoutMs: Math.max(0, deadline - deps.now()),
          }),
        );
      }
      return { ...result, children: settled };
    }
    if (isFinalStatus(result.status)) return result;
    // The last pause is cut to the deadline, so the task gets one last look when the time is up.
    const remaining = deadline - deps.now();
    if (remaining <= 0) throw new DocexTaskTimeoutError(taskId, timeoutMs, result.status);
    await sleepUnlessAborted(deps.sleep, Math.min(interval, remaining), signal);
    interval = Math.min(maxIntervalMs, interval * factor);
  }
}

export function throwIfAborted(signal: AbortSignal | undefined, operation = 'fetch_tasks_results') {
  if (signal?.aborted) throw new DocexAbortError(operation, 'aborted', { cause: signal.reason });
}

/** Sleeps that ignore signals (n8n's) still end in an abort error once the signal fired. */
export async function sleepUnlessAborted(
  sleep: Sleep,
  ms: number,
  signal: AbortSignal | undefined,
  operation?: string,
) {
  try {
    await sleep(ms, signal);
  } catch (error) {
    if (signal?.aborted) throwIfAborted(signal, operation);
    throw error;
  }
  throwIfAborted(signal, operation);
}
