import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from 'pino';
import type { Pipeline } from '../../../daemon/src/pipeline/pipeline.ts';
import { startSummaries, summarize } from '../../../daemon/src/jobs/progress.ts';
import { aboveTheBar, progressBar, renderBar } from '../../../daemon/src/common/progressbar.ts';
import type { StateDb } from '../../../daemon/src/store/state.ts';

afterEach(() => vi.useRealTimers());

/** A terminal that keeps what is written to it. */
function fakeTerminal() {
  const terminal = { written: '', stream: undefined as unknown as NodeJS.WritableStream };
  terminal.stream = {
    isTTY: true,
    write: (s: string | Buffer) => ((terminal.written += String(s)), true),
  } as unknown as NodeJS.WritableStream;
  return terminal;
}

describe("run's one-line summary", () => {
  it('counts per stage, a rate and an ETA for what is queued', () => {
    const counts = {
      discovered: 5,
      stable: 5,
      uploading: 2,
      uploaded: 8,
      done: 0,
      archived: 30,
      failed: 1,
      review: 8,
      held: 1,
    };
    expect(summarize(counts, 20, 60_000)).toEqual({
      discovered: 10,
      uploading: 2,
      waiting: 8,
      done: 30,
      review: 8,
      held: 1,
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
    const db = { fileCounts: { counts: () => ({ archived: lines.length }) } } as unknown as StateDb;
    const summaries = startSummaries(pipeline, db, log, { intervalMs: 1000 });
    vi.advanceTimersByTime(10_000);
    expect(lines).toEqual([]);
    for (let i = 0; i < 2; i++) pipeline.emit('file-archived', {} as never);
    pipeline.emit('file-held-for-review', {} as never); // decided too: it counts towards the rate
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

describe('the progress bar of long commands', () => {
  it('draws in place on a terminal, with an ETA; nothing on a pipe', () => {
    expect(renderBar('rerun chunks', 1, 4, 2000)).toBe(
      'rerun chunks [######------------------] 1/4 25% ETA 6s',
    );
    expect(renderBar('rerun chunks', 4, 4, 2000)).toBe('rerun chunks [########################] 4/4 100%');
    const tty = fakeTerminal();
    let t = 0;
    const bar = progressBar(tty.stream, 'x', () => t);
    t = 1000;
    bar.update(1, 2);
    bar.update(2, 2);
    bar.finish();
    expect(tty.written).toBe(
      '\r\x1b[2Kx [############------------] 1/2 50% ETA 1s\r\x1b[2Kx [########################] 2/2 100%\n',
    );
    const pipe = {
      isTTY: false,
      write: () => {
        throw new Error('drawn on a pipe');
      },
    } as unknown as NodeJS.WritableStream;
    const quiet = progressBar(pipe, 'x');
    quiet.update(1, 2);
    quiet.finish();
  });
});

describe('log lines and the progress bar on one terminal', () => {
  it('a log line clears the bar, and the bar is drawn again below it; after finish lines are plain', async () => {
    const tty = fakeTerminal();
    const logs = aboveTheBar(tty.stream);
    const log = (line: string) => new Promise<void>((resolve) => logs.write(line, () => resolve()));
    await log('before\n');
    const bar = progressBar(tty.stream, 'x', () => 0);
    bar.update(1, 2);
    await log('during\n');
    bar.finish();
    await log('after\n');
    const bar50 = 'x [############------------] 1/2 50% ETA 0s';
    expect(tty.written).toBe(`before\n\r\x1b[2K${bar50}\r\x1b[2Kduring\n${bar50}\nafter\n`);
  });
});

describe('a count while the total is not known (the start-up scan)', () => {
  it('redraws at most every 50 ms, and finish shows the last count', () => {
    const tty = fakeTerminal();
    let t = 0;
    const bar = progressBar(tty.stream, 'scan: files found', () => t);
    for (let n = 1; n <= 5; n++) bar.update(n);
    t = 60;
    bar.update(6);
    bar.update(7);
    bar.finish();
    expect(tty.written).toBe(
      '\r\x1b[2Kscan: files found 1\r\x1b[2Kscan: files found 6\r\x1b[2Kscan: files found 7\n',
    );
  });
});
