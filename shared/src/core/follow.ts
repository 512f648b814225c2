/**
 * Following many tasks at once (docs/decisions.md, "Fewer requests per document"). Pure: the task
 * poll, the document listing, sleep and clocks come in.
 *
 * Today's waitForTask polls each task on its own schedule: about one poll per task per round. Here
 * one `fetch_documents?updated_since=` per round says how many documents appeared since the last
 * round, and only that many tasks are polled (least recently polled first), so a task is polled
 * about once, when it is done, and its answer carries its data. The listing is a hint, never the
 * authority: a task's outcome is only ever what its own fetch_tasks_results says, and a task the
 * listing never shows (FAILED makes no document; DUPLICATE may not touch one) is still found, by a
 * scan that goes on through final answers and stops at the first task still IN PROGRESS.
 */
import { DocexAbortError, DocexApiError, DocexError, DocexTaskTimeoutError } from './errors.ts';
import { DEFAULT_WAIT_TIMEOUT_MS, isFinalStatus, sleepUnlessAborted, throwIfAborted } from './poll.ts';
import type { WaitOptions, WaitResult } from './poll.ts';
import type { TaskResult } from './schemas.ts';
import type { Logger, Sleep } from './transport.ts';

export interface FollowDeps {
  fetchResult: (taskId: string, signal?: AbortSignal) => Promise<TaskResult>;
  /** fetch_documents?updated_since=: the ids of documents created or changed since then. */
  listDocumentIds?: (updatedSince: Date, signal?: AbortSignal) => Promise<number[]>;
  sleep: Sleep;
  /** Steady clock (durations). */
  now: () => number;
  /** Wall clock (the listing's updated_since). */
  wallClock: () => number;
  logger?: Logger;
}

export interface FollowOptions extends Omit<WaitOptions, 'followChildren' | 'onProgress'> {
  /**
   * How far before the start updated_since reaches back, so that a server clock behind ours does not
   * hide our documents (default 10 minutes). Older documents only cost the first round a poll or two.
   */
  listingLookbackMs?: number;
  /** Use the listing at all (default true when listDocumentIds is given). */
  listing?: boolean;
  onProgress?: (result: TaskResult, info: { taskId: string; elapsedMs: number }) => void;
}

/** A task's end: its final result, or why it has none (poll refused, time out, aborted). */
export type FollowOutcome = { result: WaitResult } | { error: DocexError };

export interface FollowStats {
  polls: number;
  listings: number;
  /** Polls that found the task still in progress. */
  missedPolls: number;
  /** The listing was given up (refused: an old deployment), and every round polled every task. */
  listingOff: boolean;
}

interface Pending {
  id: string;
  order: number;
  lastPolled: number;
  lastStatus?: string;
  parent?: string;
}

/** Statuses of a listing refusal that will not change by asking again (an old deployment, a proxy). */
const LISTING_REFUSED = new Set([400, 404, 405, 422, 501]);

/**
 * Follows every task until it is final (DONE, FAILED, DUPLICATE) or the shared deadline passes.
 * A task whose result lists child tasks is followed through them, as waitForTask does.
 * Answers every task id given, in a Map; the stats say what it cost.
 */
export async function followTasks(
  taskIds: readonly string[],
  deps: FollowDeps,
  options: FollowOptions = {},
): Promise<{ outcomes: Map<string, FollowOutcome>; stats: FollowStats }> {
  const {
    timeoutMs = DEFAULT_WAIT_TIMEOUT_MS,
    maxIntervalMs = 15_000,
    factor = 1.5,
    signal,
    listingLookbackMs = 10 * 60_000,
  } = options;
  const started = deps.now();
  const deadline = started + timeoutMs;
  const since = new Date(deps.wallClock() - listingLookbackMs);
  const stats: FollowStats = { polls: 0, listings: 0, missedPolls: 0, listingOff: false };
  let listing = (options.listing ?? true) && deps.listDocumentIds !== undefined;
  const outcomes = new Map<string, FollowOutcome>();
  const childrenOf = new Map<string, { result: TaskResult; children: string[] }>();
  let order = 0;
  let pending: Pending[] = [...new Set(taskIds)].map((id) => ({ id, order: order++, lastPolled: started }));
  /** Every document id any listing has shown, and those shown but not yet claimed by a task. */
  const seen = new Set<number>();
  const owed = new Map<number, number>();
  let interval = options.intervalMs ?? 1000;

  const settle = (task: Pending, outcome: FollowOutcome) => {
    pending = pending.filter((p) => p !== task);
    outcomes.set(task.id, outcome);
  };

  /** Polls one task; true when it is final (or failed for good), false while IN PROGRESS. */
  const poll = async (task: Pending): Promise<boolean> => {
    throwIfAborted(signal);
    let result: TaskResult;
    try {
      result = await deps.fetchResult(task.id, signal);
    } catch (error) {
      if (!(error instanceof DocexError) || error instanceof DocexAbortError) throw error;
      settle(task, { error });
      return true;
    }
    stats.polls++;
    task.lastPolled = deps.now();
    task.lastStatus = result.status;
    options.onProgress?.(result, { taskId: task.id, elapsedMs: deps.now() - started });
    const children = [...new Set(result.child_task_ids ?? [])].filter((c) => c !== task.id);
    if (children.length > 0 && task.parent === undefined) {
      // The children are what the caller waits for; the parent's own status is not looked at again.
      childrenOf.set(task.id, { result, children });
      pending = pending.filter((p) => p !== task);
      for (const child of children)
        pending.push({ id: child, order: order++, lastPolled: deps.now(), parent: task.id });
      return true;
    }
    if (!isFinalStatus(result.status)) {
      stats.missedPolls++;
      return false;
    }
    if (typeof result.document_id === 'number') {
      owed.delete(result.document_id);
      seen.add(result.document_id);
    }
    settle(task, { result });
    return true;
  };

  /**
   * One round: the tasks least recently polled first. It polls while the listing still owes
   * documents (at most two tasks found in progress), while answers are final (a run of finished
   * tasks costs nothing wasted), and any task not polled for maxIntervalMs (the safety net for
   * outcomes no listing shows, and for documents another client's listing noise hid).
   */
  const scan = async (wanted: number) => {
    const ordered = [...pending].sort((a, b) => a.lastPolled - b.lastPolled || a.order - b.order);
    let claimed = 0;
    let misses = 0;
    let lastFinal = false;
    for (const task of ordered) {
      const owes = claimed < wanted && misses < 2;
      const due = deps.now() - task.lastPolled >= maxIntervalMs;
      if (!owes && !due && !lastFinal) break;
      const before = owed.size;
      lastFinal = await poll(task);
      if (!lastFinal) misses++;
      else if (owed.size < before) claimed++;
    }
  };

  const list = async (): Promise<number> => {
    try {
      const ids = await deps.listDocumentIds!(since, signal);
      stats.listings++;
      for (const id of ids) {
        if (seen.has(id)) continue;
        seen.add(id);
        owed.set(id, 0);
      }
      return owed.size;
    } catch (error) {
      if (!(error instanceof DocexError) || error instanceof DocexAbortError) throw error;
      if (error instanceof DocexApiError && LISTING_REFUSED.has(error.status)) {
        // An old deployment or a proxy that does not know the filter: poll every task, as before.
        listing = false;
        stats.listingOff = true;
        deps.logger?.warn(
          { status: error.status },
          'docex: fetch_documents with updated_since was refused; polling each task instead',
        );
        return Infinity;
      }
      // Unreachable for now: this round polls as if every task could be done.
      return Infinity;
    }
  };

  while (pending.length > 0) {
    const remaining = deadline - deps.now();
    if (remaining <= 0) {
      // One last look at each, then the ones still running time out.
      for (const task of [...pending]) {
        if (await poll(task)) continue;
        settle(task, { error: new DocexTaskTimeoutError(task.id, timeoutMs, task.lastStatus) });
      }
      break;
    }
    await sleepUnlessAborted(deps.sleep, Math.min(interval, remaining), signal);
    interval = Math.min(maxIntervalMs, interval * factor);
    if (!listing) {
      for (const task of [...pending]) await poll(task);
      continue;
    }
    const wanted = await list();
    if (!listing) {
      for (const task of [...pending]) await poll(task);
      continue;
    }
    await scan(wanted);
    // A document no task claimed within two rounds is someone else's (another client, a rerun).
    for (const [id, age] of owed) {
      if (age >= 1) owed.delete(id);
      else owed.set(id, age + 1);
    }
  }

  for (const [parent, { result, children }] of childrenOf) {
    const settled = children.map((c) => outcomes.get(c)!);
    const results = settled.flatMap((o) => ('result' in o ? [o.result] : []));
    outcomes.set(parent, { result: { ...result, children: results } });
  }
  return { outcomes, stats };
}
