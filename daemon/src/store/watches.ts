/**
 * The watches table: watches paused because their folders cannot be used (a share gone, a full
 * disk), with the time of the next probe. A handful of rows, read once and kept in memory in step
 * with this connection's writes (read again after a rolled-back batch).
 */
import type { Connection } from './connection.ts';

export interface PausedWatch {
  path: string;
  paused_reason: string;
  paused_at: number;
  probe_at: number;
}

export class WatchRepository {
  private readonly c: Connection;
  private paused: PausedWatch[] | undefined;

  constructor(connection: Connection) {
    this.c = connection;
    connection.onRolledBack(() => (this.paused = undefined));
  }

  pausedWatches(): PausedWatch[] {
    this.paused ??= this.c.st(`SELECT * FROM watches ORDER BY path`).all() as PausedWatch[];
    return this.paused;
  }
  pauseWatch(path: string, reason: string, now: number, probeAt: number) {
    this.paused = undefined;
    this.c.write(() => {
      this.c
        .st(
          `INSERT INTO watches (path, paused_reason, paused_at, probe_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET paused_reason = excluded.paused_reason, probe_at = excluded.probe_at`,
        )
        .run(path, reason, now, probeAt);
    });
  }
  resumeWatch(path: string) {
    this.paused = undefined;
    this.c.write(() => this.c.st(`DELETE FROM watches WHERE path = ?`).run(path));
  }
}
