/**
 * The scheduler's questions to the files table: which rows have come due in a state, when the next
 * one does, how many tasks wait for results. Rows with a job running in this process are leased
 * (in memory: a restart starts clean) and left out. Reads only; the rows are written by
 * store/files.ts. Written as NO_REPREPARE (store/files.ts) says.
 */
import type Database from 'better-sqlite3';
import { FILE_STATES, NEVER, type FileRow, type FileState } from '../domain/lifecycle.ts';
import type { Connection } from './connection.ts';
import type { FileRepository } from './files.ts';

/** The first `count` ids the statement yields (its first column), read no further. */
function firstIds(statement: Database.Statement, params: unknown[], count: number): number[] {
  const ids: number[] = [];
  if (count <= 0) return ids;
  for (const id of statement.pluck().iterate(...params) as IterableIterator<number>) {
    ids.push(id);
    if (ids.length === count) break; // ends the iterator: the statement is reset, the rest never read
  }
  return ids;
}

export class DueWork {
  private readonly c: Connection;
  private readonly files: FileRepository;
  /** Rows with a job running in this process: finding due work leaves them out. */
  private readonly leased = new Set<number>();

  constructor(connection: Connection, files: FileRepository) {
    this.c = connection;
    this.files = files;
  }

  /** Marks a row as being worked on by this process (in memory: a restart starts clean). */
  lease(id: number) {
    this.leased.add(id);
  }
  release(id: number) {
    this.leased.delete(id);
  }

  /**
   * Rows of a state whose next_at has come and that no job holds, soonest first. Ids are read from
   * the (state, next_at) index alone and only the rows taken are read whole: most due rows are held
   * by a job while the pipeline is busy, and reading them whole on every scheduler step cost more
   * than the rest of the step.
   */
  due(state: FileState, now: number, limit: number): FileRow[] {
    if (limit <= 0) return [];
    if (!FILE_STATES.includes(state)) throw new TypeError(`not a file state: ${String(state)}`);
    // One statement per state, the state written in (see NO_REPREPARE).
    const ids = this.c.st(
      `SELECT id FROM files WHERE state = '${state}' AND next_at <= ? ORDER BY next_at, id`,
    );
    return this.rowsOf(firstIds(ids, [now], limit + this.leased.size), limit);
  }

  /** Stable rows ready for upload and not held by a job, leaving out paused watches. */
  dueForUpload(now: number, limit: number): FileRow[] {
    if (limit <= 0) return [];
    const ids = this.c.st(
      `SELECT id FROM files WHERE state = 'stable' AND next_at <= ?
       AND watch NOT IN (SELECT path FROM watches) ORDER BY next_at, id`,
    );
    return this.rowsOf(firstIds(ids, [now], limit + this.leased.size), limit);
  }

  /** The whole rows of the first `limit` ids that no job holds. */
  private rowsOf(ids: number[], limit: number): FileRow[] {
    const rows: FileRow[] = [];
    for (const id of ids) {
      if (rows.length === limit) break;
      if (this.leased.has(id)) continue;
      const row = this.files.get(id);
      if (row) rows.push(row);
    }
    return rows;
  }

  /**
   * The earliest next_at still to come, over all rows waiting for something; undefined when idle.
   * Rows at rest have next_at = NEVER. One seek in the (state, next_at) index per state: a MIN over
   * all states at once would read every index entry past `now`.
   */
  nextDue(now: number): number | undefined {
    const { at } = this.c
      .st(
        `SELECT MIN(at) AS at FROM (${FILE_STATES.map(
          (s) =>
            `SELECT MIN(next_at) AS at FROM files WHERE state = '${s}' AND next_at > @now AND next_at < ${NEVER}`,
        ).join(' UNION ALL ')})`,
      )
      .get({ now }) as { at: number | null };
    return at ?? undefined;
  }

  /** How many tasks wait for their results (rows in 'uploaded'), counted up to `limit` only. */
  awaitingResults(limit: number): number {
    // The limit written in, one statement per limit (a constant of the config): see NO_REPREPARE.
    if (!Number.isSafeInteger(limit)) throw new TypeError(`not a whole number: ${limit}`);
    return this.c
      .st(`SELECT COUNT(*) FROM (SELECT 1 FROM files WHERE state = 'uploaded' LIMIT ${limit})`)
      .pluck()
      .get() as number;
  }
}
