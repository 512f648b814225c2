/**
 * Approval of documents waiting for review (the status page's Approve, POST /api/approve, and
 * `docex-sync approve`): each goes back to `done`, approved, and the archiving step of the running
 * daemon moves its results from review_dir into output and its original on to the processed folder
 * (outputs/review.ts, release). Only the DB changes here, so a page, a shell and the daemon never
 * move the same files at once; a daemon that is not running moves them when it next starts.
 */
import { allWatches } from '../intake/sources.ts';
import { decide } from '../domain/lifecycle.ts';
import { policyOf, UNNAMED, type RetryDeps } from './retry.ts';
import { AuditTrail } from '../store/audit.ts';
import { appendDecision, fraudFlagged } from '../outputs/review-decisions.ts';

export interface ApproveOutcome {
  approved: number[];
  skipped: Array<{ id: number; reason: string }>;
}

export interface ApproveOptions {
  /**
   * With 'all': a fraud-flagged document (a fraud rule held it) is approved too only when true. The
   * page's Approve all leaves them out unless ticked one by one (named by id, they are approved).
   */
  includeFraud?: boolean;
}

export function approveReviewed(
  deps: RetryDeps,
  which: number[] | 'all',
  options: ApproveOptions = { includeFraud: true },
): ApproveOutcome {
  const { db, config } = deps;
  const now = (deps.now ?? Date.now)();
  db.flush();
  const rows =
    which === 'all'
      ? db.fileCounts.inReview(1_000_000)
      : which.map((id) => db.files.get(id) ?? { id, state: 'missing' as const });
  const outcome: ApproveOutcome = { approved: [], skipped: [] };
  const watches = allWatches(config);
  const trail = new AuditTrail(db.db);
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
    if (which === 'all' && options.includeFraud === false && fraudFlagged(row)) {
      outcome.skipped.push({ id: row.id, reason: 'it is fraud-flagged: approve it by itself' });
      continue;
    }
    const { changes } = decide(row, { kind: 'approve-requested' }, now, policyOf(config, watch));
    db.files.update(row.id, changes!, now);
    trail.record(
      deps.actor ?? UNNAMED,
      { action: 'approve', fileId: row.id, file: row.path, oldValue: 'review', newValue: 'approved' },
      now,
    );
    outcome.approved.push(row.id);
  }
  db.flush();
  if (outcome.approved.length) deps.wake?.();
  return outcome;
}

/** approveReviewed, each approval then a row of the day's review CSV (who approved it). */
export async function approveAndNote(
  deps: RetryDeps,
  which: number[] | 'all',
  options?: ApproveOptions,
): Promise<ApproveOutcome> {
  const outcome = approveReviewed(deps, which, options);
  const watches = allWatches(deps.config);
  for (const id of outcome.approved) {
    const row = deps.db.files.get(id);
    const watch = row && watches.get(row.watch);
    if (!row || !watch?.review_dir) continue;
    await appendDecision(
      watch,
      row,
      { outcome: 'approved', by: (deps.actor ?? UNNAMED).who },
      deps.now?.() ?? Date.now(),
    );
  }
  return outcome;
}
