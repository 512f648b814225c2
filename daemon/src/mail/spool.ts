/**
 * The mailboxes as an intake source: their spool folders as the pipeline sees them. Apart from
 * config/mail.ts, which the daemon's config schema imports: this side needs the watch's type.
 */
import type { WatchConfig } from '../config/config.ts';
import { spoolFolder, targetsOf, type MailboxConfig } from '../config/mail.ts';
import type { IntakeSource } from '../config/intake-source.ts';

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
        document_data: m.document_data,
        stable_ms: 0,
        polling: false,
        polling_interval_ms: 1000,
        rescan_interval_ms: 60_000,
      });
    }
  return [...watches.values()];
}

/** Files spooled from the mailboxes' attachments (the IMAP side, mail/intake.ts, records them). */
export const mailSource: IntakeSource<{ mailboxes: MailboxConfig[] }> = {
  name: 'mailboxes',
  watches: spoolWatches,
};
