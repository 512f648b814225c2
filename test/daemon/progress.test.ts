import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from 'pino';
import type { Pipeline } from '../../daemon/src/pipeline.ts';
import { startSummaries, summarize } from '../../daemon/src/progress.ts';
import type { StateDb } from '../../daemon/src/state.ts';

afterEach(() => vi.useRealTimers());

describe("run's one-line summary", () => {
  it('counts per stage, a rate and an ETA for what is queued', () => {
    const counts = { discovered: 5, stable: 5, uploading: 2, uploaded: 8, done: 0, archived: 30, failed: 1 };
    expect(summarize(counts, 20, 60_000)).toEqual({
      discovered: 10,
      uploading: 2,
      waiting: 8,
      done: 30,
      failed: 1,
      per_minute: 20,
      eta_s: 60,
    });
    expect(summarize(counts, 0, 60_000).eta_s).toBeNull();
  });

  it('is armed by activity only: nothing when idle, one line per interval while busy, one more after', () => {
    vi.useFakeTimers();
    const pipeline = new EventEmitter() as unknown as Pipeline;
    const lines: unknown[] = [];
    const log = { info: (o: unknown) => lines.push(o) } as unknown as Logger;
    const db = { counts: () => ({ archived: lines.length }) } as unknown as StateDb;
    const summaries = startSummaries(pipeline, db, log, { intervalMs: 1000 });
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual([]);
    for (let i = 0; i < 3; i++) pipeline.emit('file-archived', {} as never);
    vi.advanceTimersByTime(1000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ per_minute: 180 });
    vi.advanceTimersByTime(1000);
    expect(lines).toHaveLength(2);
    vi.advanceTimersByTime(60_000);
    expect(lines).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0);
    summaries.stop();
  });
});
