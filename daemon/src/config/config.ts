/** docex-sync's YAML config, validated with zod: a mistake names the file, the key and what is expected. */
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { z } from 'zod/v4';
import { reviewSettingsSchema, rulesFromSettings, type ReviewSettings } from '@docex/shared';
import { resultSettings } from './result-settings.ts';
import { CONFIG_MEANINGS } from '@docex/cli-kit/config-meanings';
import { cronProblem } from '../common/cron.ts';
import { MailboxSection, mailboxProblems, resolveMailboxes } from './mail.ts';
import { ApiSection, positiveInt } from '@docex/cli-kit/api-config';
import { invalidFile, readYamlFile } from '@docex/cli-kit/yaml';
import { parseNamePattern } from '../common/names.ts';
import { globMatcher } from '../common/glob.ts';

/**
 * upload.batch_files when the config does not say: files due together share a request, ten at most
 * (docs/decisions.md, "Batched uploads by default"). Ten takes the upload's share of the requests
 * per document to 0.1 (twenty would save 0.05 more) while a kill -9 can send at most
 * api.concurrency x 10 files a second time (40 by default, each then answered DUPLICATE).
 */
export const BATCH_FILES_DEFAULT = 10;

/** Checked when the config is read (common/cron.ts), so `run` never meets a schedule it cannot keep. */
const cron = z.string().check((ctx) => {
  const problem = cronProblem(ctx.value);
  if (problem) ctx.issues.push({ code: 'custom', input: ctx.value, message: problem });
});

/**
 * Names a NAS, a file server or an office suite puts into shared folders: Synology's thumbnail
 * folders and recycle bins, snapshots, Windows' recycle bin and volume information, macOS zip
 * debris, LibreOffice and Word lock files. Matched against every part of a path, so a walk never
 * enters such a folder. `ignore_names` replaces the list (`[]` watches them too).
 */
export const NAS_IGNORED_NAMES = [
  '@eaDir',
  '#recycle',
  '#snapshot',
  '$RECYCLE.BIN',
  'System Volume Information',
  '__MACOSX',
  '.~lock.*#',
  '~$*',
];

/** A name pattern (outputs/names.ts), checked when the config is read. */
const namePattern = z.string().check((ctx) => {
  try {
    parseNamePattern(ctx.value);
  } catch (error) {
    ctx.issues.push({ code: 'custom', input: ctx.value, message: (error as Error).message });
  }
});

/**
 * When a processed document waits for a person (outputs/review.ts): each rule given fires on its
 * own; a document no rule fires for goes on to processed/output as before. The one reader of these
 * rules is the shared core's (shared/src/core/review-rules.ts), the n8n node reads them too.
 */
const ReviewSection = reviewSettingsSchema();
export type { ReviewSettings };

/**
 * A subfolder of a watch sent with its own template or folder, and whatever else it sets instead of
 * its watch. A key added here says in routeSettings (route-settings.ts) whether the watch's setting
 * applies when the route leaves it out (test/daemon/config/route-settings.test.ts fails until then).
 */
export const Route = z.strictObject({
  /** A subfolder's name (anywhere below the watched folder) or a glob of its path from there. */
  match: z.string().min(1),
  /** How status and the page name the route (default: match). */
  name: z.string().min(1).optional(),
  template_id: positiveInt.optional(),
  folder_id: positiveInt.optional(),
  metadata: z.string().optional(),
  /**
   * The review rules of this route's documents, instead of the watch's (`{}`: none). Left out, the
   * watch's apply only when the route sends to the watch's own template_id (route-settings.ts).
   */
  review: ReviewSection.optional(),
  /** Where this route's originals go in processed_dir, instead of the watch's archive_name (same rule as review). */
  archive_name: namePattern.optional(),
  /** The base of this route's result files' names, instead of the watch's result_name (same rule as review). */
  result_name: namePattern.optional(),
});

/**
 * How long docex-sync keeps what it moved or wrote for a watch (days, counted from when the state
 * DB recorded it; docs/daemon.md, "Retention"). A kind left out is kept forever. Only files the
 * state DB records as moved or written by docex-sync are ever deleted.
 */
const Retention = z.strictObject({
  /** Originals moved to processed_dir (on_success: move). */
  processed_days: positiveInt.optional(),
  /** Originals moved to failed_dir, with their .error.json. */
  failed_days: positiveInt.optional(),
  /** The result files (.json, .fields.csv, .lines.csv) of processed originals. */
  results_days: positiveInt.optional(),
  /** When the running daemon prunes (cron; default daily at 03:30 local time). */
  schedule: cron.default('30 3 * * *'),
});

const WatchFolder = z.strictObject({
  path: z.string().min(1),
  template_id: positiveInt.optional(),
  folder_id: positiveInt.optional(),
  recursive: z.boolean().default(false),
  include: z.array(z.string()).default([]),
  exclude: z.array(z.string()).default([]),
  /** Globs for single names (no '/'), each matched against every part of a path: such files and folders are skipped. */
  ignore_names: z
    .array(
      z
        .string()
        .min(1)
        .refine((p) => !p.includes('/'), { message: "a name pattern, without '/' (use exclude for paths)" }),
    )
    .default([...NAS_IGNORED_NAMES]),
  output: z.string().min(1),
  on_success: z.enum(['move', 'delete', 'keep']).default('move'),
  processed_dir: z.string().optional(),
  failed_dir: z.string().min(1),
  ...resultSettings,
  /** Size and mtime must stay unchanged this long before a file is uploaded. */
  stable_ms: z.number().int().min(0).default(2000),
  /** Poll the file system instead of native events (network shares). */
  polling: z.boolean().default(false),
  /** With polling: how often each folder and file is looked at. */
  polling_interval_ms: z.number().int().min(100).default(1000),
  rescan_interval_ms: z.number().int().min(1000).default(60_000),
  /**
   * How often a rescan reads every folder (default an hour, intake/watcher.ts): the other rescans
   * read only the folders that changed. Optional in the type so watches made in code need not say.
   */
  full_rescan_interval_ms: z.number().int().min(1000).optional(),
  metadata: z.string().optional(),
  /**
   * Subfolders mapped to a template or folder, first match wins. With routes, a file in a subfolder
   * no route maps is held (never uploaded with a guessed template); one at the top uses the watch's
   * own template_id / folder_id, or is held when it has none.
   */
  routes: z.array(Route).default([]),
  /** Where an original goes in processed_dir, from the data, e.g. "{yyyy}/{MM}/{field:Supplier}/{name}{ext}" (default: its path in the watched folder). */
  archive_name: namePattern.optional(),
  /** The base of the result files' names in output (".json", ".fields.csv", ".lines.csv" added), e.g. "{field:Supplier}/{field:Invoice number}" (default: "<name>.doc-<id>"). */
  result_name: namePattern.optional(),
  /** What a name part becomes when its field is missing or empty and the placeholder gives no default. */
  name_missing: z.string().min(1).default('unknown'),
  /** Rules that hold a processed document for a person (a route's own `review` replaces them). */
  review: ReviewSection.optional(),
  /** Where held documents wait (original, results, <name>.review.json, review-<day>.csv); required with review rules. */
  review_dir: z.string().min(1).optional(),
  retention: Retention.optional(),
});

const Rerun = z.strictObject({
  name: z.string().min(1),
  schedule: cron,
  template_id: positiveInt.optional(),
  folder_id: positiveInt.optional(),
  created_from: z.iso.date().optional(),
  created_to: z.iso.date().optional(),
  override: z.boolean().default(false),
  dry_run: z.boolean().default(false),
});

/** The events a webhook may ask for (payloads in docs/reference/notifications.md, "Notifications"). */
export const NOTIFY_EVENTS = [
  'file_failed',
  'watch_paused',
  'rerun_finished',
  'result_written',
  'needs_review',
] as const;
export type NotifyEventName = (typeof NOTIFY_EVENTS)[number];

const Webhook = z.strictObject({
  url: z.url(),
  events: z.array(z.enum(NOTIFY_EVENTS)).min(1).default(['file_failed', 'watch_paused', 'rerun_finished']),
  /** e.g. the header an n8n Webhook node's Header Auth checks. */
  headers: z.record(z.string(), z.string()).default({}),
});

const LOOPBACK = ['127.0.0.1', '::1', 'localhost'];

export const ConfigSchema = z.strictObject({
  api: ApiSection.default({ concurrency: 4, requests_per_second: 10, timeout_ms: 120_000, max_retries: 4 }),
  state_db: z.string().min(1),
  /**
   * Work pauses while the state DB's filesystem has less free than this (MiB), and resumes by itself
   * when there is room again (docs/reference/results.md, "A full disk under the state DB").
   */
  state_db_min_free_mb: z.number().positive().default(64),
  poll: z
    .strictObject({
      interval_ms: positiveInt.default(2000),
      max_interval_ms: positiveInt.default(60_000),
      /** At most this many task results fetched per poll round, oldest first. */
      batch_size: positiveInt.default(20),
      task_timeout_ms: positiveInt.default(24 * 3600_000),
    })
    .default({ interval_ms: 2000, max_interval_ms: 60_000, batch_size: 20, task_timeout_ms: 24 * 3600_000 }),
  upload: z
    .strictObject({
      max_attempts: positiveInt.default(10),
      retry_base_ms: positiveInt.default(5_000),
      retry_max_ms: positiveInt.default(15 * 60_000),
      /** A paused watch (template or folder unknown to the service) sends one file this often to see whether it is back. */
      probe_interval_ms: positiveInt.default(60_000),
      /**
       * Files due at once for the same watch and route share one upload_file request, up to this
       * many (and 32 MiB); 1 sends each alone (docs/decisions.md, "Fewer requests per document").
       */
      batch_files: z.number().int().min(1).max(100).default(BATCH_FILES_DEFAULT),
    })
    .default({
      max_attempts: 10,
      retry_base_ms: 5_000,
      retry_max_ms: 15 * 60_000,
      probe_interval_ms: 60_000,
      batch_files: BATCH_FILES_DEFAULT,
    }),
  watch: z.array(WatchFolder).default([]),
  /** Mail intake (daemon/src/mail): each mailbox's attachments go through the pipeline like dropped files. */
  mailboxes: z.array(MailboxSection).default([]),
  pull: z
    .strictObject({
      schedule: cron,
      output: z.string().min(1),
      folder_id: positiveInt.optional(),
      template_id: positiveInt.optional(),
      /** Each pull asks again for this much time before the cursor, so nothing at the boundary is missed. */
      overlap_ms: z.number().int().min(0).default(120_000),
      since: z.union([z.iso.date(), z.iso.datetime({ offset: true })]).optional(),
    })
    .optional(),
  reruns: z.array(Rerun).default([]),
  http: z
    .strictObject({
      port: z.number().int().min(0).max(65535),
      host: z.string().min(1).default('127.0.0.1'),
      /** Required to listen on anything but loopback; then token_file is required too. */
      allow_remote: z.boolean().default(false),
      /** A file holding the token the status page and /api/* ask for (required off loopback). */
      token_file: z.string().optional(),
      /** Host names besides the listen address and localhost the page answers to (a reverse proxy's). */
      allowed_hosts: z.array(z.string().min(1)).default([]),
      /** /healthz says 503 once the service has been unreachable or refused the key this long. */
      unhealthy_after_ms: positiveInt.default(300_000),
    })
    .optional(),
  notify: z
    .strictObject({
      webhooks: z.array(Webhook).min(1),
      max_attempts: positiveInt.default(8),
      retry_base_ms: positiveInt.default(2_000),
      retry_max_ms: positiveInt.default(300_000),
      timeout_ms: positiveInt.default(10_000),
      concurrency: positiveInt.default(2),
      queue_size: positiveInt.default(1_000),
      shutdown_grace_ms: z.number().int().min(0).default(5_000),
    })
    .optional(),
  log_level: z.enum(['trace', 'debug', 'info', 'warn', 'error']).default('info'),
});

/**
 * The whole config: only the wiring holds it (app/daemon.ts, commands/); every other module gets
 * its slice, one of the section types below or `ConfigSlice<'watch' | 'mailboxes'>` for a few
 * sections. ESLint refuses `Config` elsewhere (eslint.config.js, test/lint/config-slices.test.ts).
 */
export type Config = z.output<typeof ConfigSchema>;
/** The sections a module reads, and nothing else of the config (a module names its slice after itself). */
export type ConfigSlice<Section extends keyof Config> = Pick<Config, Section>;
export type WatchConfig = Config['watch'][number];
export type RerunConfig = Config['reruns'][number];
export type NotifyConfig = NonNullable<Config['notify']>;

export { ConfigError } from '@docex/cli-kit/errors';
export {
  ApiSection,
  apiKeyFrom,
  baseUrlFrom,
  connectionFrom,
  type ApiSettings,
} from '@docex/cli-kit/api-config';

export { keysAt } from '@docex/cli-kit/yaml';
export { globMatcher, nameRegExp } from '../common/glob.ts';

const isInside = (parent: string, child: string) => {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/**
 * Reads, validates and resolves paths (relative to the config file). Every mistake is a line
 * `file:line key: message` (common/yaml.ts, as for docex's files), all of them at once.
 */
export function loadConfig(file: string): Config {
  const { data: config, at } = readYamlFile(file, ConfigSchema, {
    invalid: 'invalid config',
    recheck: `docex-sync check --config ${file}`,
    meanings: CONFIG_MEANINGS,
  });
  const base = dirname(resolve(file));
  const abs = (p: string) => resolve(base, p);
  config.state_db = abs(config.state_db);
  if (config.api.api_key_file) config.api.api_key_file = abs(config.api.api_key_file);
  if (config.api.ca_file) config.api.ca_file = abs(config.api.ca_file);
  if (config.pull) config.pull.output = abs(config.pull.output);
  const problems: string[] = mailboxProblems(config.mailboxes, at);
  if (config.watch.length === 0 && config.mailboxes.length === 0)
    problems.push(`${at(['watch'])}: give at least one folder to watch (or a mailbox under mailboxes)`);
  resolveMailboxes(config, abs);
  if (config.http?.token_file) config.http.token_file = abs(config.http.token_file);
  if (config.http && !LOOPBACK.includes(config.http.host)) {
    if (!config.http.allow_remote)
      problems.push(
        `${at(['http', 'host'])}: ${config.http.host} is not loopback; set http.allow_remote: true to mean it`,
      );
    else if (!config.http.token_file)
      problems.push(
        `${at(['http', 'token_file'])}: required when http.allow_remote is true (the page changes state)`,
      );
  }
  config.watch.forEach((w, i) => {
    w.path = abs(w.path);
    w.output = abs(w.output);
    w.failed_dir = abs(w.failed_dir);
    if (w.processed_dir) w.processed_dir = abs(w.processed_dir);
    if (w.review_dir) w.review_dir = abs(w.review_dir);
    const key = (...path: PropertyKey[]) => at(['watch', i, ...path]);
    if (!w.review_dir && [w.review, ...w.routes.map((r) => r.review)].some(hasReviewRules))
      problems.push(`${key('review_dir')}: required when review rules are given (where held documents wait)`);
    if (w.template_id === undefined && w.folder_id === undefined && w.routes.length === 0)
      problems.push(`${key()}: give template_id or folder_id (or routes for its subfolders)`);
    if (w.routes.length > 0 && !w.recursive)
      problems.push(`${key('routes')}: routes map subfolders; set recursive: true so they are watched`);
    w.routes.forEach((r, j) => {
      if (r.template_id === undefined && r.folder_id === undefined)
        problems.push(`${key('routes', j)}: give template_id or folder_id for "${r.match}"`);
    });
    if (w.on_success === 'move' && !w.processed_dir)
      problems.push(`${key('processed_dir')}: required when on_success is "move"`);
    if (w.retention?.processed_days !== undefined && w.on_success !== 'move')
      problems.push(
        `${key('retention', 'processed_days')}: only with on_success: move (with "${w.on_success}", docex-sync keeps no original to prune); remove it`,
      );
    for (const [name, dir] of [
      ['output', w.output],
      ['failed_dir', w.failed_dir],
      ['processed_dir', w.processed_dir],
      ['review_dir', w.review_dir],
    ] as const) {
      if (!dir) continue;
      const rel = relative(w.path, dir);
      const unixRel = rel.split(sep).join('/');
      const excluded = w.exclude.some((pattern) => {
        const matches = globMatcher(pattern);
        return matches(unixRel) || matches(`${unixRel}/x`);
      });
      if (isInside(w.path, dir) && (!w.recursive ? rel === '' : !excluded)) {
        problems.push(
          `${key(name)}: ${dir} is inside the watched folder ${w.path}${w.recursive ? '; move it out or add it to exclude' : ''}`,
        );
      }
    }
  });
  if (problems.length) throw invalidFile(file, problems, 'invalid config');
  return config;
}

/** Whether a review section holds any rule (an empty one, e.g. a route's `review: {}`, holds nothing). */
export function hasReviewRules(review: ReviewSettings | undefined): review is ReviewSettings {
  return rulesFromSettings(review) !== undefined;
}
