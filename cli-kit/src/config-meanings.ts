/**
 * What the keys of docex-sync's config (and docex's profiles) mean, as the end of "is missing: set it
 * to ..." (plain-words.ts): the keys that must be given, and those whose type alone says
 * too little. By key name, the longest dotted name first; every other key is said from its type,
 * range and default. Words only: nothing here is checked.
 */
import type { KeyMeanings } from './plain-words.ts';

export const CONFIG_MEANINGS: KeyMeanings = {
  state_db: 'the file where docex-sync keeps what it knows of every file, e.g. ./state/docex-sync.db',
  base_url: "the service's address, without /v1, e.g. https://api.example.com",
  'watch.path': 'the folder to watch, e.g. /srv/scans/invoices',
  output: 'the folder where the results (.json, .csv) are written, e.g. ./results',
  failed_dir: 'the folder where files that cannot be processed go, e.g. ./failed',
  processed_dir: 'the folder where originals go once their results are written, e.g. ./processed',
  review_dir: 'the folder where documents held for review wait, e.g. ./review',
  'routes.match': 'the subfolder this route maps: its name, or a glob of its path, e.g. "suppliers/*"',
  line_field: 'the line field whose values are summed, e.g. "Total price"',
  total_field: 'the general field the sum must match, e.g. "Invoice amount"',
  'mailboxes.name': 'a short name for the mailbox (letters, digits, ".", "_" or "-"), e.g. invoices',
  host: "the IMAP server's host name, e.g. imap.example.com",
  user: 'the user name to log in with, e.g. invoices@example.com',
  'after.action':
    'what happens to a message once its attachments are taken: flag, move (with folder) or leave',
  'after.folder': 'the mail folder taken messages are moved to, e.g. Done',
  schedule:
    'a cron schedule (minute hour day-of-month month day-of-week), e.g. "30 3 * * *" for 03:30 every day',
  'reruns.name': 'a name for this rerun that logs and status show, e.g. nightly',
  'http.port': 'the port the status page listens on (0 for any free port), e.g. 8080',
  webhooks: 'a list of webhooks, each with its url (one "- url: ..." entry each)',
  'webhooks.url': 'the address the events are posted to, e.g. https://n8n.example.com/webhook/docex',
};
