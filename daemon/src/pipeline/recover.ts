/**
 * After a restart: uploads cut short go again (see docs/daemon.md), stability is checked anew, and
 * the names recorded before the stop are held again for their files.
 */
import { RESTARTED_STATES } from '../domain/lifecycle.ts';
import type { StepHost } from './step-host.ts';

/** Rows left mid-step by the last run are set to go on (the lifecycle's `restarted`). */
export function recoverRows(host: StepHost) {
  const { db, log } = host;
  reserveRecordedNames(host);
  for (const state of RESTARTED_STATES) {
    for (
      let after = 0, rows;
      (rows = db.files.page(state, after, 1000)).length > 0;
      after = rows.at(-1)!.id
    ) {
      for (const row of rows) {
        host.apply(row, { kind: 'restarted' });
        if (state === 'uploading')
          log.warn(
            { file: row.path },
            'upload was interrupted before its task id was stored; it will be sent again (a DUPLICATE answer is handled)',
          );
      }
    }
  }
  db.flush();
}

/**
 * Names files recorded before a stop whose files may not be there yet (a result base named but
 * not written, a place in review_dir whose original has not moved): held for them again, so no
 * other file is given them meanwhile (files.ts, Reservations).
 */
function reserveRecordedNames(host: StepHost) {
  const { db } = host;
  for (const state of ['uploaded', 'done'] as const) {
    for (
      let after = 0, rows;
      (rows = db.files.page(state, after, 1000)).length > 0;
      after = rows.at(-1)!.id
    ) {
      for (const row of rows) {
        const watch = host.watches.get(row.watch);
        if (!watch) continue;
        if (state === 'uploaded' && row.result_base !== null)
          host.results.reserve(watch, row.result_base, row.id);
        if (row.review_path !== null && row.approved_at === null)
          host.reviews.reservePlace(row.review_path, row.id);
      }
    }
  }
}
