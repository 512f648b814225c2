/**
 * Approval of documents waiting for review (the status page's Approve, POST /api/approve, and
 * `docex-sync approve`): each goes back to `done`, approved, and the archiving step of the running
 * daemon moves its results from review_dir into output and its original on to the processed folder
 * (outputs/review.ts, release). Only the DB changes here, so a page, a shell and the daemon never
 * move the same files at once; a daemon that is not running moves them when it next starts.
 */
import { allWatches } from '../intake/sources.ts';
import { decide } from '../domain/lifecycle.ts';
import { policyOf, type RetryDeps } from './retry.ts';

export interface ApproveOutcome {
  approved: number[];
  skipped: Array<{ id: number; reason: string }>;
}

export function approveReviewed(deps: RetryDeps, which: number[] | 'all'): ApproveOutcome {
  const { db, config } = deps;
  const now = (deps.now ?? Date.now)();
  db.flush();
  const rows =
    which === 'all'
      ? db.inReview(1_000_000)
      : which.map((id) => db.get(id) ?? { id, state: 'missing' as const });
  const outcome: ApproveOutcome = { approved: [], skipped: [] };
  const watches = allWatches(config);
  for (const row of rows) {
    if (row.state !== 'review') {
      outcome.skipped.push({
        id: row.id,
        reason:
          row.state === 'missing' ? 'no such file' : `it is not waiting for review (it is ${row.state})`,
      });
      continue;
    }
    const watch = watches.get(row.watch);
    if (!watch) {
      outcome.skipped.push({ id: row.id, reason: 'its watched folder is no longer configured' });
      continue;
    }
    const { changes } = decide(row, { kind: 'approve-requested' }, now, policyOf(config, watch));
    db.update(row.id, changes!, now);
    outcome.approved.push(row.id);
  }
  db.flush();
  if (outcome.approved.length) deps.wake?.();
  return outcome;
}
