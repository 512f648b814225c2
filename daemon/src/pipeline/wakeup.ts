/**
 * Rows another process changes (`docex-sync retry` puts a failed file back, `rerun` and `pull`
 * record their runs) wake the running daemon's scheduler, which otherwise only learns of work from
 * its own watchers and jobs (docs/reference/engine.md, "How the engine works").
 *
 * Idle stays free: no timer. Every commit to a WAL-mode DB writes its `-wal` file, so an inotify
 * watch on that file tells us "someone committed"; SQLite's data_version then tells another
 * process's commit from our own (one read of shared memory). Our own commits cost one such read per
 * event-loop turn. Where the watch cannot be made (inotify limit, a file system without it), the
 * periodic rescan wakes the scheduler instead (watcher.ts), and the log says so.
 */
import { watch, type FSWatcher } from 'node:fs';
import type { Logger } from 'pino';
import type { StateDb } from '../store/state.ts';

export interface OtherWriters {
  close(): void;
}

export function wakeOnOtherWriters(db: StateDb, wake: () => void, log: Logger): OtherWriters {
  db.changedElsewhere(); // the baseline: what this process has seen so far
  let queued = false;
  const check = () => {
    queued = false;
    if (!db.db.open) return;
    if (db.changedElsewhere()) wake();
  };
  let watcher: FSWatcher | undefined;
  const wal = `${db.path}-wal`;
  try {
    watcher = watch(wal, { persistent: false }, () => {
      if (queued) return;
      queued = true;
      setImmediate(check);
    });
    watcher.on('error', (error) => {
      log.warn(
        { file: wal, err: error.message },
        'cannot watch the state DB for changes by other processes; a retry from the command line is seen at the next rescan',
      );
      watcher?.close();
    });
  } catch (error) {
    log.warn(
      { file: wal, err: (error as Error).message },
      'cannot watch the state DB for changes by other processes; a retry from the command line is seen at the next rescan',
    );
  }
  return { close: () => watcher?.close() };
}
