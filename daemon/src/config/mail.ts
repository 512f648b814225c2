/** The `mailboxes:` section of docex-sync's config (docs/daemon.md, "Mailboxes"): schema and checks, no I/O. */
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { z } from 'zod/v4';
import { resultSettings } from './result-settings.ts';

const positiveInt = z.number().int().positive();

/** A sender / subject rule: the first that matches a message chooses its template (or folder) and metadata. */
const MailRule = z.strictObject({
  /** Glob on the sender's address, case-insensitive: "*@supplier.test", "billing@*". */
  from: z.string().min(1).optional(),
  /** Glob on the whole subject, case-insensitive: "*invoice*". */
  subject: z.string().min(1).optional(),
  template_id: positiveInt.optional(),
  folder_id: positiveInt.optional(),
  /** Sent with each upload, like a watch's metadata. */
  metadata: z.string().optional(),
  /** true: messages matching this rule are left alone (counted as skipped, with the rule named). */
  skip: z.boolean().default(false),
});

const Attachments = z.strictObject({
  /** Globs on the attachment's file name; empty: every name. */
  include: z.array(z.string()).default([]),
  exclude: z.array(z.string()).default([]),
  /** MIME types taken ("application/pdf", "image/*"); empty: every type. */
  mime_types: z.array(z.string()).default(['application/pdf', 'image/*']),
  /** Smaller attachments are skipped (logos, signature images). */
  min_bytes: z.number().int().min(0).default(0),
  /** Larger ones are skipped with a reason, never written. */
  max_bytes: positiveInt.default(25 * 1024 * 1024),
  /** Images shown in the body (Content-Disposition: inline) are skipped unless true. */
  inline: z.boolean().default(false),
});

const After = z.discriminatedUnion('action', [
  /** A keyword or system flag; "$DocexTaken" needs a server that keeps custom keywords. */
  z.strictObject({ action: z.literal('flag'), flag: z.string().min(1).default('$DocexTaken') }),
  z.strictObject({ action: z.literal('move'), folder: z.string().min(1) }),
  z.strictObject({ action: z.literal('leave') }),
]);

export const MailboxSection = z.strictObject({
  /** Names the mailbox in the state DB, status and logs; keep it when the host or user changes. */
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'letters, digits, ".", "_" or "-" (at most 64)'),
  host: z.string().min(1),
  /** Default: 993 with tls, 143 with starttls. */
  port: z.number().int().min(1).max(65535).optional(),
  security: z.enum(['tls', 'starttls']).default('tls'),
  /** A CA certificate (PEM) to trust besides the system's, for a server with a private CA. */
  ca_file: z.string().optional(),
  user: z.string().min(1),
  /** One of these three: the password from a file or an environment variable, or an OAuth2 access token file (XOAUTH2). */
  password_file: z.string().optional(),
  password_env: z.string().optional(),
  oauth2_token_file: z.string().optional(),
  folder: z.string().min(1).default('INBOX'),
  /** Where accepted attachments are written for the pipeline; docex-sync owns it. Default: <state_db folder>/spool/<name>. */
  spool_dir: z.string().optional(),
  template_id: positiveInt.optional(),
  folder_id: positiveInt.optional(),
  metadata: z.string().optional(),
  rules: z.array(MailRule).default([]),
  attachments: Attachments.default({
    include: [],
    exclude: [],
    mime_types: ['application/pdf', 'image/*'],
    min_bytes: 0,
    max_bytes: 25 * 1024 * 1024,
    inline: false,
  }),
  after: After.default({ action: 'flag', flag: '$DocexTaken' }),
  /** A message larger than this is not downloaded (skipped with a reason). */
  max_message_bytes: positiveInt.default(100 * 1024 * 1024),
  /** How often the folder is looked at when the server has no IDLE (and as a safety net with it). */
  poll_interval_ms: z.number().int().min(1000).default(60_000),
  /** Use IDLE when the server offers it. */
  idle: z.boolean().default(true),
  /** Where results go, as for a watch. */
  output: z.string().min(1),
  failed_dir: z.string().min(1),
  /** Where the attachment files go after their results are written; without it they are deleted from the spool (the mail keeps them). */
  processed_dir: z.string().optional(),
  ...resultSettings,
});

export type MailboxConfig = z.output<typeof MailboxSection>;
export type MailRuleConfig = MailboxConfig['rules'][number];
export type AttachmentPolicy = MailboxConfig['attachments'];

/**
 * Problems a schema cannot see: one credential, a target for every rule, unique names. `at` names
 * a key with the file and line it is on ("config.yaml:12 mailboxes[0].rules[1]", common/yaml.ts),
 * like every other problem of the config.
 */
export function mailboxProblems(
  mailboxes: MailboxConfig[],
  at: (path: ReadonlyArray<PropertyKey>) => string,
): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  mailboxes.forEach((m, i) => {
    const key = (...path: PropertyKey[]) => at(['mailboxes', i, ...path]);
    if (seen.has(m.name)) problems.push(`${key('name')}: "${m.name}" is used by another mailbox`);
    seen.add(m.name);
    const credentials = [m.password_file, m.password_env, m.oauth2_token_file].filter((c) => c !== undefined);
    if (credentials.length !== 1)
      problems.push(`${key()}: give exactly one of password_file, password_env or oauth2_token_file`);
    const hasDefault = m.template_id !== undefined || m.folder_id !== undefined;
    m.rules.forEach((r, j) => {
      if (r.from === undefined && r.subject === undefined)
        problems.push(
          `${key('rules', j)}: give from or subject (a rule without either matches every message)`,
        );
      if (!r.skip && !hasDefault && r.template_id === undefined && r.folder_id === undefined)
        problems.push(`${key('rules', j)}: give template_id or folder_id (the mailbox has no default)`);
    });
    if (!hasDefault && m.rules.length === 0)
      problems.push(`${key()}: give template_id or folder_id (used for messages no rule matches), or rules`);
  });
  return problems;
}

/** Where a message's attachments are uploaded: a template or folder, and the metadata sent along. */
export interface MailTarget {
  template_id?: number;
  folder_id?: number;
  metadata?: string;
}

/** A stable folder name per target, so queued files keep their target when rules are reordered. */
export function targetKey(target: MailTarget): string {
  const where =
    target.template_id !== undefined ? `template-${target.template_id}` : `folder-${target.folder_id}`;
  if (target.metadata === undefined) return where;
  return `${where}-${createHash('sha256').update(target.metadata).digest('hex').slice(0, 8)}`;
}

/** Every target a mailbox can send attachments to: its own, and each rule's. */
export function targetsOf(mailbox: MailboxConfig): MailTarget[] {
  const all: MailTarget[] = [];
  if (mailbox.template_id !== undefined || mailbox.folder_id !== undefined)
    all.push({ template_id: mailbox.template_id, folder_id: mailbox.folder_id, metadata: mailbox.metadata });
  for (const rule of mailbox.rules) {
    if (rule.skip) continue;
    const own = rule.template_id !== undefined || rule.folder_id !== undefined;
    all.push({
      template_id: own ? rule.template_id : mailbox.template_id,
      folder_id: own ? rule.folder_id : mailbox.folder_id,
      metadata: rule.metadata ?? mailbox.metadata,
    });
  }
  return all;
}

/** The spool folder of a mailbox's target: the pipeline's watch key for its attachment files. */
export const spoolFolder = (mailbox: MailboxConfig, target: MailTarget) =>
  join(mailbox.spool_dir!, targetKey(target));

/** Paths made absolute (relative to the config file), the spool defaulting to <state_db folder>/spool/<name>. */
export function resolveMailboxes(
  config: { state_db: string; mailboxes: MailboxConfig[] },
  abs: (p: string) => string,
) {
  for (const m of config.mailboxes) {
    m.spool_dir = m.spool_dir ? abs(m.spool_dir) : join(dirname(config.state_db), 'spool', m.name);
    m.output = abs(m.output);
    m.failed_dir = abs(m.failed_dir);
    if (m.processed_dir) m.processed_dir = abs(m.processed_dir);
    if (m.ca_file) m.ca_file = abs(m.ca_file);
    if (m.password_file) m.password_file = abs(m.password_file);
    if (m.oauth2_token_file) m.oauth2_token_file = abs(m.oauth2_token_file);
  }
}
