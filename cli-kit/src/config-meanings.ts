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

/**
 * The reference page's words for keys neither CONFIG_MEANINGS nor the annotated example's comments
 * explain (docs/reference/config.md, made by scripts/docs-reference.ts), by dotted path without list
 * positions. Only the page reads them; test/lint/docs-reference.test.ts fails for a key with no words.
 */
export const REFERENCE_MEANINGS: KeyMeanings = {
  api: 'how docex-sync reaches the service: address, key file, proxy, CA, rate and limits',
  'api.api_key_file': 'a file holding the API key (instead of DOCEX_API_KEY), e.g. /etc/docex-sync/api-key',
  poll: 'how often the results of uploaded files are asked for',
  upload: 'how uploads that fail are tried again, and how a paused watch is probed',
  'upload.retry_base_ms': 'the first wait before an upload is tried again; it doubles at each attempt',
  'upload.retry_max_ms': 'the longest wait between two attempts of an upload',
  watch: 'the folders docex-sync watches, one entry each (each with path, output, failed_dir and a template or folder)',
  'watch.ignore_names':
    'name globs (no "/") skipped at any depth, files and folders: NAS, Windows and office debris by default; [] watches them too',
  'watch.formats': 'the result files written for each document: json, csv or both',
  'watch.document_data':
    "when_needed: the task's answer stands for the document's data when it carries every field with a confidence (one request less; the JSON says document_from: task); always: read it for each document",
  'watch.review.fraud':
    "hold a document whose fraud check is doubtful: not_clean (a verdict that is not clean), max_score (a score above it), clean_verdicts",
  'watch.routes.review.fraud':
    "hold a document whose fraud check is doubtful: not_clean (a verdict that is not clean), max_score (a score above it), clean_verdicts",
  'watch.review.line_total.tolerance': 'how far the sum of the line field may be from the total (default 0.01)',
  'watch.routes.review.line_total.tolerance': 'how far the sum of the line field may be from the total (default 0.01)',
  'mailboxes.folder': 'the mail folder read for new messages, e.g. INBOX',
  'mailboxes.folder_id': 'the service folder attachments are uploaded to when no rule names one (instead of a template)',
  'mailboxes.metadata': 'text sent with each upload from this mailbox, as a watch\'s metadata',
  'mailboxes.rules.from': 'a glob on the sender\'s address, case-insensitive, e.g. "*@supplier.example"',
  'mailboxes.rules.subject': 'a glob on the whole subject, case-insensitive, e.g. "*invoice*"',
  'mailboxes.rules.folder_id': 'the service folder the matching messages\' attachments are uploaded to',
  'mailboxes.rules.metadata': 'text sent with each upload of the matching messages',
  'mailboxes.attachments': 'which attachments are taken: names, types, sizes, inline images',
  'mailboxes.attachments.exclude': 'globs on the attachment\'s file name that are never taken, e.g. "*.p7s"',
  'mailboxes.attachments.mime_types': 'the MIME types taken ("application/pdf", "image/*"); [] takes every type',
  'mailboxes.after.flag': 'the keyword set on a taken message ("$DocexTaken" needs a server that keeps custom keywords)',
  'mailboxes.max_message_bytes': 'a larger message is not downloaded: it is skipped, with the reason in status',
  'mailboxes.idle': 'use IMAP IDLE when the server offers it, so new mail is seen at once',
  'mailboxes.formats': 'the result files written for each attachment: json, csv or both',
  'mailboxes.daily_csv': 'with csv: also one row per document in <output>/daily-YYYY-MM-DD.csv',
  'mailboxes.document_data': "as a watch's document_data: when_needed (from the task's answer when it is complete) or always",
  'mailboxes.csv_style': 'standard, or excel (BOM, ";" between cells, decimal comma unless the template\'s number_locale is US)',
  'reruns.template_id': 'rerun only the documents of this template',
  'reruns.folder_id': 'rerun only the documents of this service folder',
  'reruns.created_from': 'rerun only documents created on or after this day, e.g. 2026-01-01',
  'reruns.created_to': 'rerun only documents created on or before this day, e.g. 2026-01-31',
  'notify.retry_base_ms': 'the first wait before a webhook delivery is tried again; it doubles at each attempt',
  'notify.retry_max_ms': 'the longest wait between two attempts of a webhook delivery',
  log_level: 'how much the log says: trace, debug, info, warn or error',
};

/** The release every key of docex-sync's config came in unless KEYS_SINCE says otherwise. */
export const FIRST_RELEASE = '0.1.0';

/**
 * The docex-sync version a key came in, by dotted path without list positions, for the reference
 * page's "since" column: a key added after the first release gets its row here when it is added.
 */
export const KEYS_SINCE: Readonly<Record<string, string>> = {};
