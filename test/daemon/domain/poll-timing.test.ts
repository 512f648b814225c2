/**
 * The poll timing (daemon/src/domain/poll-timing.ts) as pure functions, and its promise checked by
 * simulation through the lifecycle itself: for any extraction time, any earlier estimate, failed and
 * duplicate tasks alike, a task gets no more polls than the fixed schedule (2 s, then ×1.5) gives it.
 * What time docex-sync was not running does to it, in the daemon: poll-downtime.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { decide, type FileRow, type Policy } from '../../../daemon/src/domain/lifecycle.ts';
import {
  firstPollDelayMs,
  firstPollDueMs,
  intervalAfter,
  NO_ESTIMATE,
  observePoll,
  probeFactor,
  type ExtractionEstimate,
} from '../../../daemon/src/domain/poll-timing.ts';

const POLL = { interval_ms: 2000, max_interval_ms: 30_000, task_timeout_ms: 3_600_000 };
const policy: Policy = {
  stable_ms: 0,
  poll: POLL,
  upload: { max_attempts: 3, retry_base_ms: 1000, retry_max_ms: 60_000 },
  random: () => 0.5,
};

/** The fixed schedule's poll times after the upload: 2000, 5000, 9500, 16250, ... */
function fixedSchedule(until: number): number[] {
  const times = [POLL.interval_ms];
  let interval = POLL.interval_ms;
  while (times.at(-1)! < until) {
    interval = Math.min(POLL.max_interval_ms, Math.round(interval * 1.5));
    times.push(times.at(-1)! + interval);
  }
  return times;
}
const fixedPolls = (extractionMs: number) =>
  fixedSchedule(extractionMs).findIndex((t) => t >= extractionMs) + 1;

const uploaded = (now: number): FileRow => ({
  id: 1,
  watch: '/w',
  path: '/w/a.pdf',
  route: null,
  archive_rel: null,
  review: null,
  review_path: null,
  approved_at: null,
  result_base: null,
  archive_path: null,
  rel: 'a.pdf',
  size: 1,
  mtime_ms: 1,
  ino: 1,
  sha256: 'x',
  state: 'uploading',
  outcome: null,
  task_id: null,
  document_id: null,
  attempts: 1,
  reason: null,
  blocked: null,
  finalized: 0,
  next_at: now,
  poll_interval_ms: 2000,
  stable_since: 0,
  uploaded_at: null,
  discovered_at: 0,
  updated_at: now,
});

/**
 * One task through the lifecycle and the timing as the pipeline uses them: polls at next_at (late
 * by `lateMs` each, as a busy limiter makes them), the task final from `extractionMs` on (with
 * `status`), the estimate learnt from every poll. Returns the polls made and the estimate after.
 */
function simulate(extractionMs: number, estimate: ExtractionEstimate, lateMs = 0, status = 'DONE') {
  let row = uploaded(0);
  const answered = decide(
    row,
    { kind: 'upload-answered', taskId: 't', firstPollMs: firstPollDelayMs(estimate, POLL) },
    0,
    policy,
  );
  row = { ...row, ...answered.changes, updated_at: 0 } as FileRow;
  let polls = 0;
  for (;;) {
    const now = row.next_at + lateMs;
    polls++;
    const final = now >= extractionMs;
    estimate = observePoll(
      estimate,
      {
        seenWhole: true,
        elapsedMs: now,
        final,
        first: row.poll_interval_ms === 0,
        previousMs: row.updated_at,
      },
      POLL,
    );
    const result = final
      ? { task_id: 't', status, document_id: status === 'FAILED' ? null : 7, status_message: '' }
      : { task_id: 't', status: 'IN PROGRESS', document_id: null, status_message: '' };
    const d = decide(row, { kind: 'task', result } as never, now, policy);
    if (final || polls > 100) return { polls, estimate, seenAt: now };
    row = { ...row, ...d.changes, updated_at: now } as FileRow;
  }
}

describe('intervalAfter: the fixed schedule', () => {
  it('waits 2 s, 3 s, 4.5 s, ... after polls at its own points, up to max_interval_ms', () => {
    expect(intervalAfter(0, POLL)).toBe(2000);
    expect(intervalAfter(2000, POLL)).toBe(3000);
    expect(intervalAfter(5000, POLL)).toBe(4500);
    expect(intervalAfter(9500, POLL)).toBe(6750);
    expect(intervalAfter(7000, POLL)).toBe(4500); // between two points: as after the earlier one
    expect(intervalAfter(10_000_000, POLL)).toBe(30_000);
  });
});

describe('firstPollDelayMs', () => {
  it('is the fixed first poll while nothing is known, never earlier', () => {
    expect(firstPollDelayMs(NO_ESTIMATE, POLL)).toBe(2000);
    expect(firstPollDelayMs({ typicalMs: 500, longestUnfinishedMs: 0, hitsInARow: 0 }, POLL)).toBe(2000);
  });
  it('aims at the typical extraction time once one was seen', () => {
    expect(firstPollDelayMs({ typicalMs: 10_300, longestUnfinishedMs: 9500, hitsInARow: 0 }, POLL)).toBe(
      10_300,
    );
  });
  it('before any task was seen final, goes 1.5x past the longest time one was seen unfinished', () => {
    expect(firstPollDelayMs({ typicalMs: undefined, longestUnfinishedMs: 5000, hitsInARow: 0 }, POLL)).toBe(
      7500,
    );
  });
});

describe('firstPollDueMs', () => {
  const cold = { typicalMs: undefined, longestUnfinishedMs: 0, hitsInARow: 0 };
  it('while nothing was seen final and a poll of the watch went out recently, holds a due first poll back one fixed interval', () => {
    expect(firstPollDueMs(cold, POLL, 2100, 0)).toBe(2100 + 3000);
    expect(firstPollDueMs(cold, POLL, 5200, 1999)).toBe(5200 + 4500);
  });
  it('a poll out for interval_ms or longer (hung) holds nothing back', () => {
    expect(firstPollDueMs(cold, POLL, 5200, 2000)).toBe(2000);
  });
  it('with no poll out, or once a task was seen final, is firstPollDelayMs', () => {
    expect(firstPollDueMs(cold, POLL, 2100, undefined)).toBe(2000);
    expect(firstPollDueMs({ typicalMs: 9000, longestUnfinishedMs: 0, hitsInARow: 0 }, POLL, 9100, 10)).toBe(
      9000,
    );
    const waiting = { typicalMs: undefined, longestUnfinishedMs: 4000, hitsInARow: 0 };
    expect(firstPollDueMs(waiting, POLL, 3000, undefined)).toBe(6000);
  });
  it('does not hold back a poll that is not due yet (the postponement is already later)', () => {
    const waiting = { typicalMs: undefined, longestUnfinishedMs: 4000, hitsInARow: 0 };
    expect(firstPollDueMs(waiting, POLL, 3000, 10)).toBe(6000);
  });
});

describe('observePoll', () => {
  it('learns the longest unfinished time from polls that came too early', () => {
    // As after the miss at 2 s: the next on the fixed schedule is at 5 s.
    const e = observePoll(
      { typicalMs: undefined, longestUnfinishedMs: 2000, hitsInARow: 0 },
      { seenWhole: true, elapsedMs: 5000, final: false, first: false, previousMs: 2000 },
      POLL,
    );
    expect(e).toEqual({ typicalMs: undefined, longestUnfinishedMs: 5000, hitsInARow: 0 });
  });
  it('after a miss then a hit, aims 10 % past the miss, never past the hit', () => {
    // As after the misses at 2, 5 and 9.5 s.
    const missed = { typicalMs: undefined, longestUnfinishedMs: 9500, hitsInARow: 0 };
    expect(
      observePoll(
        missed,
        { seenWhole: true, elapsedMs: 16_250, final: true, first: false, previousMs: 9500 },
        POLL,
      ).typicalMs,
    ).toBe(10_450);
    expect(
      observePoll(
        missed,
        { seenWhole: true, elapsedMs: 10_000, final: true, first: false, previousMs: 9500 },
        POLL,
      ).typicalMs,
    ).toBe(10_000);
  });
  it('the first seen final aims past the longest time any task was seen unfinished, not only its own miss', () => {
    const cold = { typicalMs: undefined, longestUnfinishedMs: 7625, hitsInARow: 0 };
    expect(
      observePoll(
        cold,
        { seenWhole: true, elapsedMs: 10_838, final: true, first: false, previousMs: 5895 },
        POLL,
      ).typicalMs,
    ).toBe(8388);
  });
  it('an aim already past the miss stays (late answers made it climb 10 % per task)', () => {
    const e = { typicalMs: 16_782, longestUnfinishedMs: 9795, hitsInARow: 0 };
    expect(
      observePoll(
        e,
        { seenWhole: true, elapsedMs: 29_564, final: true, first: false, previousMs: 9581 },
        POLL,
      ).typicalMs,
    ).toBe(16_782);
    // Missed at its aim: 10 % past the miss, as before.
    expect(
      observePoll(
        e,
        { seenWhole: true, elapsedMs: 25_000, final: true, first: false, previousMs: 16_800 },
        POLL,
      ).typicalMs,
    ).toBe(18_480);
    // Never past the hit.
    expect(
      observePoll(
        e,
        { seenWhole: true, elapsedMs: 12_000, final: true, first: false, previousMs: 9581 },
        POLL,
      ).typicalMs,
    ).toBe(12_000);
  });
  it('after a hit at the first poll, probes 1 % earlier next time, never below interval_ms', () => {
    const e = { typicalMs: 10_000, longestUnfinishedMs: 0, hitsInARow: 0 };
    expect(
      observePoll(e, { seenWhole: true, elapsedMs: 10_050, final: true, first: true }, POLL).typicalMs,
    ).toBe(9900);
    expect(
      observePoll(
        { typicalMs: 2000, longestUnfinishedMs: 0, hitsInARow: 0 },
        { seenWhole: true, elapsedMs: 2000, final: true, first: true },
        POLL,
      ).typicalMs,
    ).toBe(2000);
  });
});

describe('nothing learnt from time docex-sync was not running (issue #41)', () => {
  const warm = { typicalMs: 10_000, longestUnfinishedMs: 9500, hitsInARow: 3 };
  const HOUR = 3_600_000;

  it('a task whose upload this process did not see answered teaches nothing, whatever its poll found', () => {
    // Uploaded before a restart: an hour of downtime is in every time measured from its upload.
    for (const estimate of [NO_ESTIMATE, warm])
      for (const final of [true, false])
        for (const first of [true, false])
          expect(
            observePoll(
              estimate,
              { seenWhole: false, elapsedMs: HOUR, final, first, previousMs: first ? undefined : HOUR - 1 },
              POLL,
            ),
          ).toBe(estimate);
  });

  it('one answer at most doubles the aim: a first poll answered an hour after its upload', () => {
    // The process was stopped while the poll was out; nothing was known yet (aim: 2 s).
    const cold = observePoll(
      NO_ESTIMATE,
      { seenWhole: true, elapsedMs: HOUR, final: true, first: true },
      POLL,
    );
    expect(cold.typicalMs).toBe(4000);
    expect(firstPollDelayMs(cold, POLL)).toBe(4000);
    // A miss at the aim, then the hit an hour later, its miss answered late too.
    const after = observePoll(
      warm,
      { seenWhole: true, elapsedMs: HOUR, final: true, first: false, previousMs: HOUR - 1000 },
      POLL,
    );
    expect(after.typicalMs).toBe(20_000);
    // An unfinished answer an hour late, before any task was seen final: the longest miss goes to
    // twice the aim (the aim to three times it), not to an hour.
    const missed = observePoll(
      NO_ESTIMATE,
      { seenWhole: true, elapsedMs: HOUR, final: false, first: true },
      POLL,
    );
    expect(missed.longestUnfinishedMs).toBe(4000);
    expect(firstPollDelayMs(missed, POLL)).toBe(6000);
  });

  it('the limit cuts no miss of a task polled on time: cold, a 10-s task learns as before', () => {
    const { estimate, polls } = simulate(10_000, NO_ESTIMATE);
    expect(polls).toBe(fixedPolls(10_000)); // misses at 2, 5 and 9.5 s, seen final at 16.25 s
    expect(estimate).toEqual({ typicalMs: 10_450, longestUnfinishedMs: 9500, hitsInARow: 0 });
  });

  it('a real slow-down is still followed: the aim doubles per task, then goes 10 % past each miss', () => {
    let estimate: ExtractionEstimate = { typicalMs: 2000, longestUnfinishedMs: 1000, hitsInARow: 5 };
    const aims: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = simulate(60_000, estimate);
      expect(r.polls).toBeLessThanOrEqual(fixedPolls(60_000));
      estimate = r.estimate;
      aims.push(estimate.typicalMs!);
    }
    expect(aims.slice(0, 4)).toEqual([4000, 8000, 16_000, 32_000]);
    expect(aims[7]).toBeGreaterThanOrEqual(60_000);
    expect(simulate(60_000, estimate).polls).toBe(1);
  });

  it('probes 1 % earlier for 10 hits in a row, then twice as far per further hit, at most half the aim', () => {
    expect([1, 5, 10].map(probeFactor)).toEqual([0.99, 0.99, 0.99]);
    const percent = (f: number) => Math.round(f * 100);
    expect([11, 12, 13, 14, 15, 16, 17, 30].map((n) => percent(probeFactor(n)))).toEqual([
      98, 96, 92, 84, 68, 50, 50, 50,
    ]);
  });

  it('an aim twice the extraction time comes back within 10 % of it in under 20 tasks (1 % probes took 60)', () => {
    let estimate: ExtractionEstimate = { typicalMs: 20_000, longestUnfinishedMs: 0, hitsInARow: 0 };
    let tasks = 0;
    while (!(estimate.typicalMs! >= 10_000 && estimate.typicalMs! <= 11_000) && tasks < 100) {
      const r = simulate(10_000, estimate);
      expect(r.polls).toBeLessThanOrEqual(fixedPolls(10_000));
      estimate = r.estimate;
      tasks++;
    }
    expect(tasks).toBeLessThan(20);
    // And an aim of an hour (an earlier version's lesson from a restart) at the interval in 30.
    estimate = { typicalMs: HOUR, longestUnfinishedMs: 0, hitsInARow: 0 };
    for (let i = 0; i < 30; i++) estimate = simulate(100, estimate).estimate;
    expect(estimate.typicalMs).toBe(POLL.interval_ms);
  });
});

describe('never more polls than the fixed schedule', () => {
  const estimates: ExtractionEstimate[] = [
    NO_ESTIMATE,
    { typicalMs: 2000, longestUnfinishedMs: 0, hitsInARow: 0 },
    { typicalMs: 30_000, longestUnfinishedMs: 0, hitsInARow: 14 },
    { typicalMs: 9000, longestUnfinishedMs: 0, hitsInARow: 0 },
    { typicalMs: 10_450, longestUnfinishedMs: 0, hitsInARow: 0 },
    { typicalMs: 60_000, longestUnfinishedMs: 0, hitsInARow: 0 },
    { typicalMs: undefined, longestUnfinishedMs: 40_000, hitsInARow: 0 },
  ];
  const extractions = [
    0, 1, 1999, 2000, 2001, 4999, 5000, 9500, 9501, 10_000, 16_250, 45_000, 120_000, 1_000_000,
  ];

  it('for every extraction time and earlier estimate, on time or polled late', () => {
    for (const estimate of estimates)
      for (const extraction of extractions)
        for (const late of [0, 37, 900])
          for (const status of ['DONE', 'FAILED', 'DUPLICATE']) {
            const { polls } = simulate(extraction, estimate, late, status);
            expect(polls, JSON.stringify({ estimate, extraction, late, status })).toBeLessThanOrEqual(
              fixedPolls(extraction),
            );
          }
  });

  it('a run of 10-s extractions costs about one poll each once the first was seen', () => {
    let estimate = NO_ESTIMATE;
    const polls: number[] = [];
    for (let i = 0; i < 100; i++) {
      const r = simulate(10_000, estimate);
      polls.push(r.polls);
      estimate = r.estimate;
    }
    expect(polls[0]).toBe(fixedPolls(10_000)); // 4: nothing known yet
    const rest = polls.slice(1);
    expect(rest.reduce((a, b) => a + b, 0) / rest.length).toBeLessThan(1.15);
  });

  it('a steady extraction time never makes the probes bolder than 1 %', () => {
    for (const extraction of [2500, 10_000, 45_000]) {
      let estimate = NO_ESTIMATE;
      let most = 0;
      for (let i = 0; i < 300; i++) {
        estimate = simulate(extraction, estimate).estimate;
        most = Math.max(most, estimate.hitsInARow);
      }
      expect(probeFactor(most), `${extraction} ms: ${most} hits in a row`).toBe(0.99);
    }
  });

  it('first polls queued late (a saturated rate limit) do not walk the aim down', () => {
    // The queue delays every poll by 8 s: each one finds its task final. Probing 1 % earlier on each
    // would take the aim from 10 s to under 4 s in 100 tasks, and once the queue clears, every task
    // would pay a poll that comes too early.
    let estimate: ExtractionEstimate = { typicalMs: 10_000, longestUnfinishedMs: 9500, hitsInARow: 0 };
    for (let i = 0; i < 100; i++) estimate = simulate(10_000, estimate, 8000).estimate;
    expect(estimate.typicalMs).toBe(10_000);
    const onTime = simulate(10_000, estimate);
    expect(onTime.polls).toBe(1);
  });

  it('a first poll on time (within 10 % of its aim) still probes earlier', () => {
    const e = { typicalMs: 10_000, longestUnfinishedMs: 0, hitsInARow: 0 };
    expect(
      observePoll(e, { seenWhole: true, elapsedMs: 10_999, final: true, first: true }, POLL).typicalMs,
    ).toBe(9900);
    expect(observePoll(e, { seenWhole: true, elapsedMs: 11_001, final: true, first: true }, POLL)).toBe(e);
  });

  it('a poll is postponed only while the task was not polled yet, and never past the task timeout', () => {
    const row = {
      ...uploaded(0),
      state: 'uploaded' as const,
      task_id: 't',
      uploaded_at: 0,
      poll_interval_ms: 0,
    };
    const due = (r: typeof row, firstPollMs: number) =>
      decide(r, { kind: 'poll-due', firstPollMs }, 2000, policy);
    expect(due(row, 12_000).changes).toEqual({ next_at: 12_000 });
    expect(due(row, 9_000_000).changes?.next_at).toBe(POLL.task_timeout_ms);
    expect(due({ ...row, poll_interval_ms: 3000 }, 12_000)).toEqual({
      changes: undefined,
      effect: { kind: 'poll' },
    });
  });
});
