/**
 * The audit trail of what people decided about files (docs/daemon.md, "Review queue"): every
 * approve, reject, correct and retry, from the status page or the command line, is a row of the
 * state DB's `audit` table (schema 13): when, who (the name typed on the page, or the OS user of the
 * command), how (page or cli), what, which file, and the value before and after.
 *
 * A repository over the connection it is handed (the StateDb's): a row recorded while the StateDb
 * has a batch open joins that batch, so the decision and its audit row commit together.
 *
 * The running daemon says each row in its log once (`unannounced` / `announced`): a command's
 * decision is a commit of another process, which wakes the daemon (engine/wakeup.ts), and the
 * daemon then logs what it finds unannounced. A row recorded while no daemon runs is said when the
 * next one starts.
 */
import type Database from 'better-sqlite3';

/** `rerun`: a rerun kept a person's correction over the service's new reading, or dropped it. */
export type AuditAction = 'approve' | 'reject' | 'correct' | 'retry' | 'rerun';

/** Who decided, and through what: the page (its user's name) or the command line (the OS user). */
export interface Actor {
  who: string;
  via: 'page' | 'cli';
}

export interface AuditEntry {
  action: AuditAction;
  fileId: number | null;
  /** The file as found (its path in the watched folder). */
  file: string;
  /** For a correction: the field's name. */
  field?: string | null;
  /** What it was and what it became: a state, or a field's value (JSON text for a value). */
  oldValue?: string | null;
  newValue?: string | null;
  /** A rejection's reason, a skipped action's why. */
  note?: string | null;
}

export interface AuditRow {
  id: number;
  at: number;
  who: string;
  via: 'page' | 'cli';
  action: AuditAction;
  file_id: number | null;
  file: string;
  field: string | null;
  old_value: string | null;
  new_value: string | null;
  note: string | null;
}

const MAX_TEXT = 2000;
/** Texts typed by a person or read from the service: control characters out, capped. */
const clean = (text: string | null | undefined) =>
  text == null
    ? null
    : text.replace(/[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, ' ').slice(0, MAX_TEXT);

export class AuditTrail {
  private readonly db: Database.Database;

  constructor(db: Database.Database) {
    this.db = db;
  }

  record(actor: Actor, entry: AuditEntry, now: number): number {
    const info = this.db
      .prepare(
        `INSERT INTO audit (at, who, via, action, file_id, file, field, old_value, new_value, note)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        now,
        clean(actor.who) ?? '',
        actor.via,
        entry.action,
        entry.fileId,
        clean(entry.file) ?? '',
        clean(entry.field),
        clean(entry.oldValue),
        clean(entry.newValue),
        clean(entry.note),
      );
    return Number(info.lastInsertRowid);
  }

  /** Rows from `since` (ms) on, oldest first; at most `limit`, the newest ones when there are more. */
  since(since: number, limit = 10_000): AuditRow[] {
    const rows = this.db
      .prepare(`SELECT ${COLUMNS} FROM audit WHERE at >= ? ORDER BY id DESC LIMIT ?`)
      .all(since, limit) as AuditRow[];
    return rows.reverse();
  }

  /** Rows the running daemon has not said in its log yet, oldest first. */
  unannounced(limit = 1000): AuditRow[] {
    return this.db
      .prepare(`SELECT ${COLUMNS} FROM audit WHERE announced = 0 ORDER BY id LIMIT ?`)
      .all(limit) as AuditRow[];
  }

  announced(ids: number[]) {
    const mark = this.db.prepare(`UPDATE audit SET announced = 1 WHERE id = ?`);
    for (const id of ids) mark.run(id);
  }
}

const COLUMNS = 'id, at, who, via, action, file_id, file, field, old_value, new_value, note';

/** One line of `review log` and of the daemon's log message: who did what to which file. */
export function describeAudit(row: AuditRow): string {
  const change =
    row.action === 'correct' || row.action === 'rerun'
      ? `${row.field ?? '?'}: ${row.old_value ?? 'none'} -> ${row.new_value ?? 'none'}`
      : row.old_value !== null || row.new_value !== null
        ? `${row.old_value ?? '?'} -> ${row.new_value ?? '?'}`
        : '';
  return [
    `${row.action} by ${row.who} (${row.via})`,
    row.file,
    change,
    row.note === null ? '' : row.action === 'rerun' ? row.note : `reason: ${row.note}`,
  ]
    .filter(Boolean)
    .join(': ');
}
