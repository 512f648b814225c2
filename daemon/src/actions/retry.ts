/**
 * Retry of failed files, for the running daemon (the status page's Retry button, POST /api/retry)
 * and `docex-sync retry` alike: the file goes back into its watched folder and the same row starts
 * over as discovered.
 */
import { rm, stat } from 'node:fs/promises';
import { relative } from 'node:path';
import type { ConfigSlice, WatchConfig } from '../config/config.ts';
import { freeTarget } from '../common/files.ts';
import { moveTo } from '../common/move.ts';
import { allWatches } from '../intake/sources.ts';
import { decide, NEVER, type Policy } from '../domain/lifecycle.ts';
import type { StateDb } from '../store/state.ts';
import { AuditTrail, type Actor } from '../store/audit.ts';

/**
 * What retry and approve read of the config: the watches and the mailboxes (whose spool folders
 * are watches too), and how their files are polled and uploaded.
 */
export type RetryConfig = ConfigSlice<'watch' | 'mailboxes' | 'poll' | 'upload'>;

/** What a change beside the pipeline (retry, approve) needs. */
export interface RetryDeps {
  db: StateDb;
  config: RetryConfig;
  /** Told when rows changed (the pipeline's scheduler has no tick). */
  wake?: () => void;
  now?: () => number;
  /** Who asked (the audit trail's `who`); unnamed when a caller gives none. */
  actor?: Actor;
}

/** The actor of a change made without one (a test, an old caller). */
export const UNNAMED: Actor = { who: '(not named)', via: 'cli' };

/** The lifecycle's policy for a file of `watch` (the pipeline's, for a change made beside it). */
export const policyOf = (config: ConfigSlice<'poll' | 'upload'>, watch: WatchConfig): Policy => ({
  stable_ms: watch.stable_ms,
  poll: config.poll,
  upload: config.upload,
  random: Math.random,
});

export interface RetryOutcome {
  retried: number[];
  skipped: Array<{ id: number; reason: string }>;
}

export async function retryFailed(deps: RetryDeps, which: number[] | 'all'): Promise<RetryOutcome> {
  const { db, config } = deps;
  const now = deps.now ?? Date.now;
  db.flush();
  const rows =
    which === 'all'
      ? db.files.inState('failed', 1_000_000)
      : which.map((id) => db.files.get(id) ?? { id, state: 'missing' as const });
  const outcome: RetryOutcome = { retried: [], skipped: [] };
  const watches = allWatches(config);
  const trail = new AuditTrail(db.db);
  const audit = (row: { id: number; path: string; reason: string | null }) =>
    trail.record(
      deps.actor ?? UNNAMED,
      {
        action: 'retry',
        fileId: row.id,
        file: row.path,
        oldValue: 'failed',
        newValue: 'queued again',
        note: row.reason,
      },
      now(),
    );
  for (const row of rows) {
    if (row.state !== 'failed') {
      outcome.skipped.push({
        id: row.id,
        reason: row.state === 'missing' ? 'no such file' : `it is ${row.state}`,
      });
      continue;
    }
    const watch = watches.get(row.watch);
    if (!watch) {
      outcome.skipped.push({ id: row.id, reason: 'its watched folder is no longer configured' });
      continue;
    }
    const { changes } = decide(
      { ...row, finalized: 0 },
      { kind: 'retry-requested' },
      now(),
      policyOf(config, watch),
    );
    if (!row.finalized) {
      // Not moved to the failed folder yet: it is still where it was found.
      db.files.update(row.id, changes!, now());
      audit(row);
      outcome.retried.push(row.id);
      continue;
    }
    const there = await stat(row.path).then(
      (s) => s.isFile(),
      () => false,
    );
    if (!there) {
      outcome.skipped.push({
        id: row.id,
        reason: `the file is no longer in the failed folder (${row.path})`,
      });
      continue;
    }
    // The row points at the file's place in the watched folder before it moves, so the watcher
    // seeing it arrive finds an active row and does not count it twice. It is not due until the
    // file is there: a running daemon sees this commit at once (wakeup.ts) and would otherwise
    // look for the file before it arrives. (Cut short here, the next start makes it due.)
    const back = await freeTarget(watch.path, row.rel);
    const moved = { path: back, rel: relative(watch.path, back), finalized: 0 };
    db.files.update(row.id, { ...changes, ...moved, next_at: NEVER }, now());
    db.flush();
    try {
      // Never over a file dropped there meanwhile, never half a copy in the watched folder.
      await moveTo(row.path, back);
    } catch (error) {
      const before = Object.fromEntries(Object.keys(changes!).map((k) => [k, row[k as keyof typeof row]]));
      db.files.update(row.id, { ...before, path: row.path, rel: row.rel, finalized: 1 }, now());
      outcome.skipped.push({ id: row.id, reason: `could not move it back: ${(error as Error).message}` });
      continue;
    }
    db.files.update(row.id, { next_at: changes!.next_at }, now());
    audit({ ...row, path: back }); // the file as it is found again, in its watched folder
    db.flush();
    await rm(`${row.path}.error.json`, { force: true });
    outcome.retried.push(row.id);
  }
  db.flush();
  if (outcome.retried.length) deps.wake?.();
  return outcome;
}
