/**
 * The reruns table: each named rerun (jobs/reruns.ts), from its start to how it ended. A name runs
 * once at a time: a second start while one runs is refused, across processes.
 */
import type { Connection } from './connection.ts';

/** How a rerun ended, as jobs/reruns.ts reports it. */
export interface RerunResult {
  documents: number;
  rerun: number;
  not_rerun: number;
  errors: unknown[];
  status: string;
}

export class RerunRepository {
  private readonly c: Connection;

  constructor(connection: Connection) {
    this.c = connection;
  }

  /** The new run's id; undefined when a run of this name is running already. */
  startRerun(name: string, dryRun: boolean, override: boolean, now: number): number | undefined {
    this.c.flush();
    return this.c.db.transaction(() => {
      const running = this.c.st(`SELECT id FROM reruns WHERE name = ? AND status = 'running'`).get(name);
      if (running) return undefined;
      return Number(
        this.c
          .st(
            `INSERT INTO reruns (name, started_at, dry_run, override, status) VALUES (?, ?, ?, ?, 'running')`,
          )
          .run(name, now, dryRun ? 1 : 0, override ? 1 : 0).lastInsertRowid,
      );
    })();
  }
  finishRerun(id: number, result: RerunResult, now: number) {
    this.c.write(() =>
      this.c
        .st(
          `UPDATE reruns SET finished_at = ?, documents = ?, rerun = ?, not_rerun = ?, errors = ?, status = ? WHERE id = ?`,
        )
        .run(
          now,
          result.documents,
          result.rerun,
          result.not_rerun,
          JSON.stringify(result.errors),
          result.status,
          id,
        ),
    );
  }
  /** Runs marked running by a process that died: they are not running any more. */
  abandonRunningReruns(now: number) {
    this.c.write(() =>
      this.c
        .st(`UPDATE reruns SET status = 'interrupted', finished_at = ? WHERE status = 'running'`)
        .run(now),
    );
  }
  lastReruns(limit = 5) {
    return this.c.st(`SELECT * FROM reruns ORDER BY id DESC LIMIT ?`).all(limit);
  }
}
