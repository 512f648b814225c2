/**
 * What an intake source is (folders, mailboxes; an S3 bucket or an FTP drop next): which watches its
 * files are carried through. The watch a file row names gives its upload target, results, archive and
 * failure folders. A new source implements this and is added to INTAKE_SOURCES (intake/sources.ts);
 * the pipeline, retry, approve and reruns then know its files. Here, below every source, so that a
 * source's folder never imports the registry's.
 */
import type { WatchConfig } from './config.ts';

export interface IntakeSource<C> {
  /** What the source is called in the config and the log: 'folders', 'mailboxes'. */
  name: string;
  /** The watches its files belong to, from the config section it reads. */
  watches(config: C): WatchConfig[];
}
