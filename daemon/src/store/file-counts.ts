/**
 * What the files table adds up to, for `status`, the status page, /healthz and /metrics: counts by
 * state, outcome, watch and route, and the last rows of each kind a person looks at. Reads only;
 * the rows are written by store/files.ts.
 */
import { FILE_STATES, type FileRow, type FileState } from '../domain/lifecycle.ts';
import type { Connection } from './connection.ts';

/**
 * The states a row is in while it is work in flight (or waits for a person or a route), as SQL:
 * counted through files_state. The others, archived and failed, are at rest and tallied (schema 11).
 */
const IN_FLIGHT = FILE_STATES.filter((s) => s !== 'archived' && s !== 'failed')
  .map((s) => `'${s}'`)
  .join(', ');

export class FileCounts {
  private readonly c: Connection;

  constructor(connection: Connection) {
    this.c = connection;
  }

  /**
   * Files per state. REST_COUNTED: the rows in flight counted through files_state, the rows at rest
   * (archived, failed: they pile up over the years) read from their tally (schema 11).
   */
  counts(): Record<FileState, number> {
    const out = Object.fromEntries(FILE_STATES.map((s) => [s, 0])) as Record<FileState, number>;
    for (const r of this.c
      .st(
        `SELECT state, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) GROUP BY state
       UNION ALL SELECT state, SUM(n) FROM rest_tallies GROUP BY state`,
      )
      .all() as Array<{ state: FileState; n: number }>)
      out[r.state] += r.n;
    return out;
  }

  /** Files per outcome (processed, duplicate...), counted as counts() counts (REST_COUNTED). */
  outcomes(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const r of this.c
      .st(
        `SELECT outcome, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) AND outcome IS NOT NULL GROUP BY outcome
       UNION ALL SELECT outcome, SUM(n) FROM rest_tallies WHERE outcome != '' GROUP BY outcome`,
      )
      .all() as Array<{ outcome: string; n: number }>) {
      if (r.n > 0) out[r.outcome] = (out[r.outcome] ?? 0) + r.n;
    }
    return out;
  }

  oldestWaiting(): FileRow | undefined {
    return this.c
      .st(
        `SELECT * FROM files WHERE state IN ('discovered','stable','uploading','uploaded','done') ORDER BY discovered_at LIMIT 1`,
      )
      .get() as FileRow | undefined;
  }

  /**
   * The last failures and local problems (results, archive or report that could not be written),
   * newest first: the newest of each kind (the failed rows through files_state, the held back ones
   * through files_blocked), not every row sorted.
   */
  lastErrors(limit = 5): FileRow[] {
    const rows = new Map<number, FileRow>();
    for (const row of [...this.lastFailed(limit), ...this.blocked(limit)]) rows.set(row.id, row);
    return [...rows.values()].sort((a, b) => b.updated_at - a.updated_at || b.id - a.id).slice(0, limit);
  }

  /** Rows held back by a local problem (e.g. the output folder is read-only or full), newest first. */
  blocked(limit = 100): FileRow[] {
    return this.c
      .st(`SELECT * FROM files WHERE blocked IS NOT NULL ORDER BY updated_at DESC LIMIT ?`)
      .all(limit) as FileRow[];
  }

  /** Files per watch and state. */
  countsByWatch(): Array<{ watch: string; state: FileState; n: number }> {
    this.c.commit(false); // a failed commit (a full disk) is the pipeline's to handle: the read goes on
    // REST_COUNTED (see counts()); a (watch, state) comes from one side only.
    return this.c
      .st(
        `SELECT watch, state, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) GROUP BY watch, state
       UNION ALL SELECT watch, state, SUM(n) AS n FROM rest_tallies GROUP BY watch, state HAVING SUM(n) > 0`,
      )
      .all() as Array<{ watch: string; state: FileState; n: number }>;
  }
  /** Files per watch, route and state, held ones left out (they have no route). */
  countsByRoute(): Array<{ watch: string; route: string | null; state: FileState; n: number }> {
    this.c.commit(false); // a failed commit (a full disk) is the pipeline's to handle: the read goes on
    // REST_COUNTED; the tally keeps no route as ''.
    return this.c
      .st(
        `SELECT watch, route, state, COUNT(*) AS n FROM files WHERE state IN (${IN_FLIGHT}) AND state != 'held'
       GROUP BY watch, route, state
       UNION ALL SELECT watch, NULLIF(route, ''), state, SUM(n) AS n FROM rest_tallies
       GROUP BY watch, route, state HAVING SUM(n) > 0`,
      )
      .all() as Array<{ watch: string; route: string | null; state: FileState; n: number }>;
  }
  /** The held rows (no route maps them), newest first. */
  lastHeld(limit: number): FileRow[] {
    return this.c
      .st(`SELECT * FROM files WHERE state = 'held' ORDER BY updated_at DESC, id DESC LIMIT ?`)
      .all(limit) as FileRow[];
  }
  /** The rows waiting for review (state review), oldest first: the order a person works through them. */
  inReview(limit: number): FileRow[] {
    return this.c
      .st(`SELECT * FROM files WHERE state = 'review' ORDER BY updated_at, id LIMIT ?`)
      .all(limit) as FileRow[];
  }

  /** The failed rows, newest first. */
  lastFailed(limit: number): FileRow[] {
    return this.c
      .st(`SELECT * FROM files WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT ?`)
      .all(limit) as FileRow[];
  }
  /** Files that ended (archived or failed) since `ms`, oldest first. */
  finishedSince(ms: number): Array<{ state: FileState; updated_at: number }> {
    // Through files_finished, named (without statistics SQLite prefers files_state, and then reads
    // and sorts every row at rest): the rows since `ms` only, in order.
    return this.c
      .st(
        `SELECT state, updated_at FROM files INDEXED BY files_finished
       WHERE (state = 'archived' OR state = 'failed') AND updated_at >= ? ORDER BY updated_at`,
      )
      .all(ms) as Array<{ state: FileState; updated_at: number }>;
  }
  /**
   * When the documents waiting for review since `ms` went there. Through files_state (a seek to
   * state 'review'): it reads the rows waiting for a person, few by nature (the page lists them
   * too), never the rows at rest, so no index and no migration for it.
   */
  reviewSince(ms: number): number[] {
    return this.c
      .st(`SELECT updated_at FROM files WHERE state = 'review' AND updated_at >= ?`)
      .pluck()
      .all(ms) as number[];
  }
}
