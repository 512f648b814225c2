/**
 * A `polling: true` watch between scans: chokidar's polling reports files added or changed (network
 * shares, where inotify hears only this machine's writes). What it reports is only a hint: the
 * watcher checks each path itself (watcher.ts).
 */
import chokidar, { type FSWatcher as Poller } from 'chokidar';
import type { Logger } from 'pino';
import type { WatchConfig } from '../config/config.ts';
import type { Walker } from './walk.ts';

export type { FSWatcher as Poller } from 'chokidar';

/** Starts polling `watch`'s folder; resolves once chokidar has read it (its 'ready'). */
export async function startPolling(
  watch: WatchConfig,
  walker: Walker,
  reported: (path: string) => void,
  log: Logger,
): Promise<Poller> {
  const poller = chokidar.watch(watch.path, {
    ignoreInitial: true,
    backend: 'polling',
    pollingInterval: watch.polling_interval_ms,
    pollingBinaryInterval: watch.polling_interval_ms,
    depth: watch.recursive ? undefined : 0,
    followSymlinks: false,
    // Folders are entered unless excluded; files must also pass `include` (chokidar passes the
    // stats when it has them; the watcher applies the file rule to every file it reports anyway).
    ignored: (path, stats) => (stats?.isDirectory() ? walker.excluded(path, true) : walker.excluded(path)),
  });
  poller
    .on('add', reported)
    .on('change', reported)
    .on('error', (error) =>
      log.warn({ err: error, folder: watch.path }, 'watcher error; the periodic rescan still runs'),
    );
  await new Promise<void>((resolve) => poller.once('ready', () => resolve()));
  return poller;
}
