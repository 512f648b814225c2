/**
 * The running daemon says every decision of the audit trail in its log (store/audit.ts), whoever
 * took it: the page's in this process, a command's in another (its commit wakes the daemon,
 * engine/wakeup.ts). Each row is said once; those taken while no daemon ran are said at start.
 */
import type { Logger } from 'pino';
import { AuditTrail, describeAudit } from '../store/audit.ts';
import type { StateDb } from '../store/state.ts';

export function auditAnnouncer(db: StateDb, log: Logger): () => void {
  const trail = new AuditTrail(db.db);
  return () => {
    if (!db.db.open) return;
    try {
      for (;;) {
        const rows = trail.unannounced(500);
        if (rows.length === 0) return;
        for (const r of rows)
          log.info(
            {
              audit: {
                id: r.id,
                at: new Date(r.at).toISOString(),
                who: r.who,
                via: r.via,
                action: r.action,
                file: r.file,
                ...(r.field === null ? {} : { field: r.field }),
                ...(r.old_value === null ? {} : { old: r.old_value }),
                ...(r.new_value === null ? {} : { new: r.new_value }),
                ...(r.note === null ? {} : { reason: r.note }),
              },
            },
            `review decision: ${describeAudit(r)}`,
          );
        trail.announced(rows.map((r) => r.id));
      }
    } catch (error) {
      log.warn(
        { err: (error as Error).message },
        'could not read the audit trail for the log; tried again at the next change',
      );
    }
  };
}
