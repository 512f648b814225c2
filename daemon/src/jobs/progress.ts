/**
 * `run`'s periodic one-line summary, instead of a line per file at info level (those are at debug):
 * files per stage, the rate of finished files and an ETA for what is still queued. Idle is free:
 * the timer is armed by activity only, so a daemon with nothing to do logs nothing and wakes for
 * nothing.
 */
import type { Logger } from 'pino';
import type { Pipeline } from '../pipeline/pipeline.ts';
import type { StateDb } from '../store/state.ts';

export interface Summary {
  discovered: number;
  uploading: number;
  waiting: number;
  done: number;
  /** Documents a review rule held: they wait for a person's approval (not queued, not done). */
  review: number;
  /** Files held back because no route maps them: they wait for a config that does. */
  held: number;
  failed: number;
  /** Files finished (archived, failed or gone to review) per minute since the last summary. */
  per_minute: number;
  /** Seconds until the queued files are finished at that rate; null without a rate. */
  eta_s: number | null;
}

/** Pure: the summary from the DB counts and what finished in `elapsedMs`. */
export function summarize(counts: Record<string, number>, finished: number, elapsedMs: number): Summary {
  const queued =
    (counts.discovered ?? 0) +
    (counts.stable ?? 0) +
    (counts.uploading ?? 0) +
    (counts.uploaded ?? 0) +
    (counts.done ?? 0);
  const perMinute = elapsedMs > 0 ? (finished * 60_000) / elapsedMs : 0;
  return {
    discovered: (counts.discovered ?? 0) + (counts.stable ?? 0),
    uploading: counts.uploading ?? 0,
    waiting: (counts.uploaded ?? 0) + (counts.done ?? 0),
    done: counts.archived ?? 0,
    review: counts.review ?? 0,
    held: counts.held ?? 0,
    failed: counts.failed ?? 0,
    per_minute: Math.round(perMinute * 10) / 10,
    eta_s: perMinute > 0 && queued > 0 ? Math.round((queued / perMinute) * 60) : null,
  };
}

export function startSummaries(
  pipeline: Pipeline,
  db: StateDb,
  log: Logger,
  options: { intervalMs?: number; now?: () => number } = {},
): { stop(): void } {
  const intervalMs = options.intervalMs ?? 30_000;
  const now = options.now ?? Date.now;
  let finished = 0;
  let since = now();
  let timer: NodeJS.Timeout | undefined;
  const report = () => {
    timer = undefined;
    const at = now();
    const summary = summarize(db.fileCounts.counts(), finished, at - since);
    const had = finished;
    [finished, since] = [0, at];
    log.info(summary, 'progress');
    if (had > 0) arm(); // one more summary after the last activity, then quiet
  };
  const arm = () => {
    timer ??= setTimeout(report, intervalMs);
    timer.unref();
  };
  const onFinished = () => {
    if (timer === undefined) since = now(); // the rate counts from the first file after a quiet spell
    finished++;
    arm();
  };
  pipeline.on('file-archived', onFinished);
  pipeline.on('file-failed', onFinished);
  // A document gone to review is decided by the daemon: it counts towards the rate like a finished one.
  pipeline.on('file-held-for-review', onFinished);
  return {
    stop() {
      pipeline.off('file-archived', onFinished);
      pipeline.off('file-failed', onFinished);
      pipeline.off('file-held-for-review', onFinished);
      if (timer) clearTimeout(timer);
    },
  };
}
