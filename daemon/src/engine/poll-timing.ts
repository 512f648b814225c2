/**
 * When to poll an extraction task, learnt from the tasks of the same watch (so of one template)
 * just seen: the first poll goes near the typical extraction time instead of 2 s after the upload,
 * so a document costs about one poll instead of three or four (docs/daemon.md, "Polls"). Pure: the
 * pipeline keeps one estimate per watch in memory and feeds it what each poll saw.
 *
 * Never more polls than the fixed schedule (first poll at interval_ms after the upload, then
 * intervals ×1.5 up to max_interval_ms), for any extraction time: a poll is only ever put later
 * than that schedule would put it, never earlier than its first point, and the interval after a
 * poll is at least the one the fixed schedule uses after a poll at that moment (`intervalAfter`).
 * So the n-th poll is never before the fixed schedule's n-th point, and whatever the task does
 * (fails, is a duplicate, takes far longer than the others), it is seen final by no more polls.
 * Only our own clock is used (times since the upload's answer), so clock skew with the service
 * plays no part.
 */

export interface PollPolicy {
  interval_ms: number;
  max_interval_ms: number;
}

export interface ExtractionEstimate {
  /** The extraction time the next first poll aims at, ms after the upload's answer; undefined until a task was seen final. */
  typicalMs: number | undefined;
  /** The longest time after its upload at which a task was seen unfinished (used until typicalMs is known). */
  longestUnfinishedMs: number;
}

export const NO_ESTIMATE: ExtractionEstimate = { typicalMs: undefined, longestUnfinishedMs: 0 };

/** After a first poll that found the task final, the next aims this much earlier: probes whether tasks got faster. */
const PROBE_EARLIER = 0.99;
/** After a first poll that came too early, the next aims this much past the last time the task was unfinished. */
const MARGIN = 1.1;
/** A first poll answered later than this times its aim went out late: it carries no probe. */
const LATE = 1.1;
/** Before any task was seen final: this much past the longest time one was seen unfinished. */
const COLD_STEP = 1.5;

/** The interval the fixed schedule waits after a poll `elapsedMs` after the upload. */
export function intervalAfter(elapsedMs: number, poll: PollPolicy): number {
  let interval = poll.interval_ms;
  let at = poll.interval_ms;
  while (at <= elapsedMs) {
    interval = Math.min(poll.max_interval_ms, Math.round(interval * 1.5));
    at += interval;
  }
  return interval;
}

/** How long after the upload's answer to poll a task for the first time (never before interval_ms). */
export function firstPollDelayMs(estimate: ExtractionEstimate, poll: PollPolicy): number {
  const guess = estimate.typicalMs ?? estimate.longestUnfinishedMs * COLD_STEP;
  return Math.max(poll.interval_ms, Math.round(guess));
}

/**
 * When to poll a task not polled yet, at the moment its first poll comes due. While nothing final
 * was seen for its watch, and a poll of the watch went out less than interval_ms ago and is not
 * answered yet, it waits: that answer is about to say how long tasks take, and a task uploaded at
 * the same moment is unfinished when that one is. It comes due again after the fixed schedule's
 * next interval and is weighed then. Without this, a batch dropped at once sent its first polls all
 * together at 2 s, 5 s and 9.5 s, before any answer could postpone them (3 polls each for the first
 * tasks of bench/requests.bench.ts). Only a recent poll counts, so a hung one holds the others back
 * for one interval at most. Only ever later, so the fixed schedule's bound holds.
 *
 * `newestPollOutMs`: how long ago the watch's most recent unanswered poll went out (undefined: none).
 */
export function firstPollDueMs(
  estimate: ExtractionEstimate,
  poll: PollPolicy,
  elapsedMs: number,
  newestPollOutMs: number | undefined,
): number {
  const first = firstPollDelayMs(estimate, poll);
  const waitForAnswer =
    estimate.typicalMs === undefined && newestPollOutMs !== undefined && newestPollOutMs < poll.interval_ms;
  if (!waitForAnswer || first > elapsedMs) return first;
  return elapsedMs + intervalAfter(elapsedMs, poll);
}

export interface PollSeen {
  /** ms from the upload's answer to this poll's answer. */
  elapsedMs: number;
  /** The task was final (DONE, FAILED, DUPLICATE, ...). */
  final: boolean;
  /** This was the task's first poll. */
  first: boolean;
  /** Not first: ms from the upload's answer to the previous poll, which found it unfinished. */
  previousMs?: number;
}

/** The estimate after one poll of a task of the watch. */
export function observePoll(
  estimate: ExtractionEstimate,
  seen: PollSeen,
  poll: PollPolicy,
): ExtractionEstimate {
  if (!seen.final)
    return { ...estimate, longestUnfinishedMs: Math.max(estimate.longestUnfinishedMs, seen.elapsedMs) };
  if (seen.first) {
    // Final at the first look: the task took at most this long. A poll that went out near its aim
    // probes a little earlier next time; one that went out late (queued behind the rate limit)
    // says only that the task took less than that, which the estimate already assumes: probing
    // on it would walk the aim down 1 % per task while the queue hides every miss (10 s -> 4 s
    // over 90 tasks in bench/requests.bench.ts), and cost a poll per task once the queue clears.
    if (estimate.typicalMs !== undefined && seen.elapsedMs > firstPollDelayMs(estimate, poll) * LATE)
      return estimate;
    const upper = Math.min(estimate.typicalMs ?? seen.elapsedMs, seen.elapsedMs);
    return { ...estimate, typicalMs: Math.max(poll.interval_ms, Math.round(upper * PROBE_EARLIER)) };
  }
  // Unfinished at previousMs, final at elapsedMs: aim just past the last miss (or past the longest
  // time any task of the watch was seen unfinished, while this is the first seen final), never past
  // the hit. An aim already past the miss stays: raising it by 10 % on every such pair made it
  // climb far past the extraction time when the answers came late (10 s tasks, aim 22 s).
  const missed = Math.max(
    seen.previousMs ?? 0,
    estimate.typicalMs === undefined ? estimate.longestUnfinishedMs : 0,
  );
  const aim = Math.max(estimate.typicalMs ?? 0, Math.round(missed * MARGIN));
  return { ...estimate, typicalMs: Math.max(poll.interval_ms, Math.min(seen.elapsedMs, aim)) };
}
