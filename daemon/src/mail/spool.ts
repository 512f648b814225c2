/**
 * The spool folders of the mailboxes as the pipeline sees them. Apart from config/mail.ts, which the
 * daemon's config schema imports: this side needs the watch's type from that schema.
 */
import type { ConfigSlice, WatchConfig } from '../config/config.ts';
import { spoolFolder, targetsOf, type MailboxConfig } from '../config/mail.ts';

/**
 * The pipeline's view of each spool folder: a watch that is never walked (the intake records its
 * files itself), uploads to the target and writes results like any watch.
 */
function spoolWatches(config: { mailboxes: MailboxConfig[] }): WatchConfig[] {
  const watches = new Map<string, WatchConfig>();
  for (const m of config.mailboxes)
    for (const t of targetsOf(m)) {
      const path = spoolFolder(m, t);
      watches.set(path, {
        path,
        template_id: t.template_id,
        folder_id: t.folder_id,
        metadata: t.metadata,
        name_missing: 'unknown',
        recursive: true,
        include: [],
        exclude: [],
        ignore_names: [],
        routes: [],
        output: m.output,
        on_success: m.processed_dir ? 'move' : 'delete',
        processed_dir: m.processed_dir,
        failed_dir: m.failed_dir,
        formats: m.formats,
        daily_csv: m.daily_csv,
        csv_style: m.csv_style,
        stable_ms: 0,
        polling: false,
        polling_interval_ms: 1000,
        rescan_interval_ms: 60_000,
      });
    }
  return [...watches.values()];
}

/**
 * Every watch a file row can name, by path: the configured folders and the mailboxes' spool
 * folders. Whatever finds a row's watch (the pipeline, a rerun's refresh, retry, approve) asks
 * this, so a file that came from a mailbox is never taken for one whose folder left the config.
 */
export function allWatches(config: ConfigSlice<'watch' | 'mailboxes'>): Map<string, WatchConfig> {
  return new Map([...config.watch, ...spoolWatches(config)].map((w) => [w.path, w]));
}
