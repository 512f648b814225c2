/**
 * Where files come from. Each source (folders, mailboxes; an S3 bucket or an FTP drop next) says
 * which watches its files are carried through: the watch a file row names gives its upload target,
 * results, archive and failure folders. A new source implements this and is added to
 * INTAKE_SOURCES (intake/sources.ts); the pipeline, retry, approve and reruns then know its files.
 */
import type { WatchConfig } from '../config/config.ts';

export interface IntakeSource<C> {
  /** What the source is called in the config and the log: 'folders', 'mailboxes'. */
  name: string;
  /** The watches its files belong to, from the config section it reads. */
  watches(config: C): WatchConfig[];
}

/** The watched folders of the config: each is its own watch. */
export const folderSource: IntakeSource<{ watch: WatchConfig[] }> = {
  name: 'folders',
  watches: (config) => config.watch,
};
