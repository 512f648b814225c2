/**
 * Correct, then approve (the review page's Correct): the held document's review.json gets the
 * corrected values (the service's value and confidence beside each), then it is approved, so the
 * running daemon writes its results into output from the corrected data: the result JSON lists the
 * corrections, the fields CSV and output's daily CSV carry the corrected values. review.json is
 * written before the approval commits: a daemon that sees the approval reads the corrected file.
 */
import { allWatches } from '../intake/sources.ts';
import {
  appendDecision,
  correctDocument,
  readOwnReview,
  writeCorrections,
} from '../outputs/review-decisions.ts';
import { AuditTrail } from '../store/audit.ts';
import { approveReviewed } from './approve.ts';
import { UNNAMED, type RetryDeps } from './retry.ts';

export type CorrectOutcome = { approved: true; corrected: string[] } | { approved: false; reason: string };

/** Field names and values as the page sends them: at most this many, this long. */
const MAX_FIELDS = 200;
const MAX_VALUE = 1000;

export async function correctAndApprove(
  deps: RetryDeps,
  id: number,
  values: Record<string, string>,
): Promise<CorrectOutcome> {
  const { db, config } = deps;
  const now = (deps.now ?? Date.now)();
  const actor = deps.actor ?? UNNAMED;
  const entries = Object.entries(values);
  if (entries.length > MAX_FIELDS || entries.some(([k, v]) => k.length > 300 || v.length > MAX_VALUE))
    return { approved: false, reason: `at most ${MAX_FIELDS} values of ${MAX_VALUE} characters` };
  db.flush();
  const row = db.files.get(id);
  if (row?.state !== 'review')
    return {
      approved: false,
      reason: row ? `it is not waiting for review (it is ${row.state})` : 'no such file',
    };
  const watch = allWatches(config).get(row.watch);
  if (!watch?.review_dir) return { approved: false, reason: 'its watched folder is no longer configured' };
  const own = await readOwnReview(watch, row);
  if ('problem' in own) return { approved: false, reason: own.problem };
  const { document, corrections } = correctDocument(
    own.review.document,
    values,
    actor.who,
    new Date(now).toISOString(),
  );
  if (corrections.length) await writeCorrections(watch, row, own.review, document, corrections);
  const trail = new AuditTrail(db.db);
  for (const c of corrections)
    trail.record(
      actor,
      {
        action: 'correct',
        fileId: row.id,
        file: row.path,
        field: c.field,
        oldValue: JSON.stringify(c.from),
        newValue: JSON.stringify(c.to),
      },
      now,
    );
  const { approved, skipped } = approveReviewed(deps, [id]);
  if (!approved.length) return { approved: false, reason: skipped[0]?.reason ?? 'not approved' };
  await appendDecision(
    watch,
    row,
    { outcome: corrections.length ? 'approved, corrected' : 'approved', by: actor.who, corrections },
    now,
  );
  return { approved: true, corrected: corrections.map((c) => c.field) };
}
