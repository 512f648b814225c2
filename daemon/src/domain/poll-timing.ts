/**
 * When to poll an extraction task, learnt from the tasks of the same watch (so of one template)
 * just seen: the first poll goes near the typical extraction time instead of 2 s after the upload,
 * so a document costs about one poll instead of three or four (docs/reference/engine.md, "Polls"). Pure: the
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
 *
 * Nothing is learnt from time the daemon was not running: a task counts only when this process
 * sent its upload and saw the answer (`seenWhole`), since one uploaded before a restart was
 * "extracting" through the downtime too (issue #41: after 30 s down, every result came 35 s late;
 * after an hour, it would have been an hour). What this process did see can still hold time it was
 * not running (stopped with SIGSTOP or a laptop lid while a poll was out), so one observation
 * doubles the first poll's aim at most (RAISE_LIMIT); and a run of first polls that all find their
 * task final probes earlier ever faster, so an aim too high comes back down in tens of tasks, not
 * hundreds (probeFactor).
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
  /** First polls on time that found their task final since the last one that came too early (see probeFactor). */
  hitsInARow: number;
}

export const NO_ESTIMATE: ExtractionEstimate = {
  typicalMs: undefined,
  longestUnfinishedMs: 0,
  hitsInARow: 0,
};

/** After a first poll that found the task final, the next aims this much earlier: probes whether tasks got faster. */
const PROBE_STEP = 0.01;
const PROBE_EARLIER = 1 - PROBE_STEP;
/** After a first poll that came too early, the next aims this much past the last time the task was unfinished. */
const MARGIN = 1.1;
/** A first poll answered later than this times its aim went out late: it carries no probe. */
const LATE = 1.1;
/** Before any task was seen final: this much past the longest time one was seen unfinished. */
const COLD_STEP = 1.5;
/**
 * One observation puts the next first poll at most this many times later than the one before it
 * (threefold while no task was seen final: see withinRaiseLimit). An answer can hold time the
 * daemon was not running (a poll out while the process was stopped; answered an hour late, it made
 * every later file wait an hour), and no single answer tells that time from extraction time. A real
 * slow-down is still followed: the aim doubles per task until it reaches it (2 s to 60 s in five
 * tasks), each of them polled no more than the fixed schedule.
 */
const RAISE_LIMIT = 2;
/**
 * First polls on time in a row that probe only 1 % earlier: as many as the 1 % steps take to undo
 * one MARGIN (ln 1.1 / -ln 0.99 = 9.5, so 10), which a steady extraction time never exceeds: its
 * aim, set 10 % past a miss, is below the extraction time again after at most 10 probes, and the
 * next first poll misses. More hits in a row than that say tasks got faster than the aim, and each
 * further one probes twice as far (2 %, 4 %, ... at most half the aim).
 */
const STEADY_HITS = Math.ceil(Math.log(MARGIN) / -Math.log(PROBE_EARLIER));
/** The boldest probe: half the aim at once. */
const BOLDEST_PROBE = 0.5;

/** How much earlier the next first poll aims after `hits` first polls on time in a row found their task final. */
export function probeFactor(hits: number): number {
  if (hits <= STEADY_HITS) return PROBE_EARLIER;
  return Math.max(BOLDEST_PROBE, 1 - PROBE_STEP * 2 ** (hits - STEADY_HITS));
}

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
  /**
   * This process sent the upload and saw its answer, so elapsedMs holds no restart's downtime. A
   * task uploaded by an earlier run (its answer older than this process) teaches nothing.
   */
  seenWhole: boolean;
}

/** The estimate after one poll of a task of the watch. */
export function observePoll(
  estimate: ExtractionEstimate,
  seen: PollSeen,
  poll: PollPolicy,
): ExtractionEstimate {
  if (!seen.seenWhole) return estimate;
  const next = learn(estimate, seen, poll);
  return next === estimate ? estimate : withinRaiseLimit(estimate, next, poll);
}

function learn(estimate: ExtractionEstimate, seen: PollSeen, poll: PollPolicy): ExtractionEstimate {
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
    const hitsInARow = estimate.hitsInARow + 1;
    const upper = Math.min(estimate.typicalMs ?? seen.elapsedMs, seen.elapsedMs);
    return {
      ...estimate,
      typicalMs: Math.max(poll.interval_ms, Math.round(upper * probeFactor(hitsInARow))),
      hitsInARow,
    };
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
  return { ...estimate, typicalMs: Math.max(poll.interval_ms, Math.min(seen.elapsedMs, aim)), hitsInARow: 0 };
}

/**
 * `next`, with the times the first poll's aim is taken from held at RAISE_LIMIT times the aim
 * before (`before`): the typical extraction time, and the longest time a task was seen unfinished
 * (which sets the aim, ×COLD_STEP, until one was seen final). Never lowers anything. The longest
 * miss is held at twice the aim, so a cold aim grows at most threefold: the misses of a task polled
 * on time grow up to 2.5 times from one poll to the next (2 s, then 5 s), and twice the aim, which
 * is 1.5 times the last miss, cuts none of them.
 */
function withinRaiseLimit(
  before: ExtractionEstimate,
  next: ExtractionEstimate,
  poll: PollPolicy,
): ExtractionEstimate {
  const limit = RAISE_LIMIT * firstPollDelayMs(before, poll);
  return {
    ...next,
    typicalMs: next.typicalMs === undefined ? undefined : Math.min(next.typicalMs, limit),
    longestUnfinishedMs: Math.min(next.longestUnfinishedMs, Math.max(before.longestUnfinishedMs, limit)),
  };
}
