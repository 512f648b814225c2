/**
 * Retention's record (schema 8): the pruned table holds each file retention settled, deleted, found
 * gone, or kept because it is no longer what docex-sync wrote. A file row with an entry of a kind is
 * not looked at again for that kind.
 */
import type { FileRow } from '../domain/lifecycle.ts';
import type { Connection } from './connection.ts';

/** What retention prunes: originals in processed_dir, originals (and reports) in failed_dir, result files. */
export type PruneKind = 'processed' | 'failed' | 'results';
/** How retention settled one file: deleted, already gone, or kept (not what docex-sync wrote any more). */
export interface PrunedFile {
  file_id: number;
  kind: PruneKind;
  path: string;
  bytes: number;
  outcome: 'deleted' | 'gone' | 'kept';
  reason: string | null;
}

export class RetentionRepository {
  private readonly c: Connection;

  constructor(connection: Connection) {
    this.c = connection;
  }

  /**
   * Rows of a watch whose files of `kind` are older than `cutoff` (by the time the DB recorded their
   * move or write) and not settled by retention yet, in id order after `afterId`. Results of a
   * document that another row still within the period shares (the same bytes again) wait for it, as
   * do those of a document a row waiting for review shares (its results go to output when approved).
   * A row in review is never due: its original and results wait in review_dir, not retention's folders.
   */
  pruneDue(watch: string, kind: PruneKind, cutoff: number, afterId: number, limit: number): FileRow[] {
    const which = {
      processed: `state = 'archived'`,
      failed: `state = 'failed' AND finalized = 1`,
      results: `state = 'archived' AND document_id IS NOT NULL AND NOT EXISTS
        (SELECT 1 FROM files AS g WHERE g.document_id = f.document_id AND g.id != f.id
         AND g.state IN ('uploaded', 'done', 'review', 'archived') AND g.updated_at > @cutoff)`,
    }[kind];
    return this.c
      .st(
        `SELECT * FROM files AS f WHERE watch = @watch AND ${which} AND updated_at <= @cutoff AND id > @afterId
       AND NOT EXISTS (SELECT 1 FROM pruned AS p WHERE p.file_id = f.id AND p.kind = @kind)
       ORDER BY id LIMIT @limit`,
      )
      .all({ watch, kind, cutoff, afterId, limit }) as FileRow[];
  }

  /** Files retention settled (all of one row's kind together, so a row is settled whole or not at all). */
  recordPruned(files: PrunedFile[], now: number) {
    this.c.write(() => {
      for (const f of files)
        this.c
          .st(
            `INSERT INTO pruned (file_id, kind, path, bytes, outcome, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(f.file_id, f.kind, f.path, f.bytes, f.outcome, f.reason, now);
    });
  }

  /** What retention has deleted so far, and how many files it kept because they changed. */
  prunedTotals(): { deleted: number; bytes: number; kept: number; last_at: number | null } {
    return this.c
      .st(
        `SELECT COALESCE(SUM(outcome = 'deleted'), 0) AS deleted, COALESCE(SUM(CASE WHEN outcome = 'deleted' THEN bytes END), 0) AS bytes,
       COALESCE(SUM(outcome = 'kept'), 0) AS kept, MAX(at) AS last_at FROM pruned`,
      )
      .get() as { deleted: number; bytes: number; kept: number; last_at: number | null };
  }
}
