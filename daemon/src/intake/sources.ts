/**
 * The one owner of "all watches": every intake source, and every watch a file row can name.
 * Whatever finds a row's watch (the pipeline, a rerun's refresh, retry, approve) asks allWatches,
 * so a file that came from a mailbox is never taken for one whose folder left the config.
 */
import type { ConfigSlice, WatchConfig } from '../config/config.ts';
import { mailSource } from '../mail/spool.ts';
import { folderSource } from './source.ts';

/** The sources files come from; a new source is one more entry (its config slice joins AllWatchesConfig). */
export const INTAKE_SOURCES = [folderSource, mailSource] as const;

/** The config every source reads. */
export type AllWatchesConfig = ConfigSlice<'watch' | 'mailboxes'>;

/** Every watch of every source, by path (a later source's watch wins a path two name, as ever). */
export function allWatches(config: AllWatchesConfig): Map<string, WatchConfig> {
  const watches = new Map<string, WatchConfig>();
  for (const source of INTAKE_SOURCES)
    for (const watch of source.watches(config)) watches.set(watch.path, watch);
  return watches;
}
