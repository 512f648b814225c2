/**
 * Rejection of documents waiting for review (the review page's Reject, POST /api/reject, and
 * `docex-sync reject`): the row fails with the reviewer's reason, and the running daemon's failure
 * report step moves the original from review_dir into the failed folder with the reason in its
 * error.json (a daemon that is not running does it when it next starts). The review copies of its
 * results are removed here: nothing else touches them while the file waits.
 */
import { allWatches } from '../intake/sources.ts';
import { appendDecision, removeReviewCopies } from '../outputs/review-decisions.ts';
import { cleanText } from '../outputs/review.ts';
import { AuditTrail } from '../store/audit.ts';
import { decide } from '../domain/lifecycle.ts';
import { policyOf, UNNAMED, type RetryDeps } from './retry.ts';

export interface RejectOutcome {
  rejected: number[];
  skipped: Array<{ id: number; reason: string }>;
}

/** The reason as error.json, status and the audit say it: who rejected it, and why. */
export const rejectionReason = (who: string, reason: string) =>
  `rejected on review by ${cleanText(who, 80)}: ${cleanText(reason, 500)}`;

export async function rejectReviewed(deps: RetryDeps, ids: number[], reason: string): Promise<RejectOutcome> {
  const { db, config } = deps;
  const now = (deps.now ?? Date.now)();
  const actor = deps.actor ?? UNNAMED;
  db.flush();
  const outcome: RejectOutcome = { rejected: [], skipped: [] };
  const watches = allWatches(config);
  const trail = new AuditTrail(db.db);
  for (const id of ids) {
    const row = db.files.get(id);
    if (row?.state !== 'review') {
      outcome.skipped.push({
        id,
        reason: row ? `it is not waiting for review (it is ${row.state})` : 'no such file',
      });
      continue;
    }
    const watch = watches.get(row.watch);
    if (!watch?.review_dir) {
      outcome.skipped.push({ id, reason: 'its watched folder is no longer configured' });
      continue;
    }
    const why = rejectionReason(actor.who, reason);
    const { changes } = decide(row, { kind: 'reject-requested', reason: why }, now, policyOf(config, watch));
    // The review copies go first: a daemon that sees the commit moves the original at once.
    await removeReviewCopies(watch, row);
    db.files.update(row.id, changes!, now);
    trail.record(
      actor,
      {
        action: 'reject',
        fileId: row.id,
        file: row.path,
        oldValue: 'review',
        newValue: 'failed',
        note: reason,
      },
      now,
    );
    db.flush();
    await appendDecision(watch, row, { outcome: 'rejected', by: actor.who, reason }, now);
    outcome.rejected.push(row.id);
  }
  if (outcome.rejected.length) deps.wake?.();
  return outcome;
}
