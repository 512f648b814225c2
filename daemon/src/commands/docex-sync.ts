#!/usr/bin/env node
/**
 * docex-sync: run | status | rerun | pull | retry | check. Errors reach the user as one clear line
 * and an exit code (docs/daemon.md), never as a stack trace.
 */
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import packageJson from '../../package.json' with { type: 'json' };
import { checkConfig } from './check.ts';
import {
  apiKeyFrom,
  baseUrlFrom,
  ConfigError,
  connectionFrom,
  globToRegExp,
  loadConfig,
  type Config,
} from '../common/config.ts';
import { startDaemon } from '../engine/daemon.ts';
import { EXIT, exitCodeFor } from '../common/exit.ts';
import { createLogger } from '../common/logging.ts';
import { createNotifier } from '../outputs/notify.ts';
import { progressBar } from '../common/progressbar.ts';
import { pullOnce } from '../outputs/pull.ts';
import { runRerun } from '../outputs/reruns.ts';
import { StateDb } from '../store/state.ts';
import { retryFailed } from './retry.ts';
import { cliStatus, renderStatus } from './status.ts';
import { didYouMean } from '../common/suggest.ts';

export { EXIT } from '../common/exit.ts';

const HELP: Record<string, string> = {
  main: `docex-sync — watches folders, uploads new files to the Document Extraction Service, writes the results.

Usage: docex-sync <command> --config FILE [options]

Commands:
  run      run the daemon (watch, upload, poll, write results, pull, scheduled reruns)
  status   counts per state, oldest waiting file, last errors (--json for machines)
  rerun    one-off bulk rerun (--template-id, --folder-id, --from, --to, --override, --dry-run)
  pull     one-off pull of documents changed since the stored cursor
  retry    put failed files back into their watched folder to be processed again
  check    validate the config and the API key, then exit

The API key comes from DOCEX_API_KEY (or api.api_key_file); the base URL from api.base_url or DOCEX_BASE_URL.
Exit codes: 0 ok, 1 failure, 2 bad usage or config, 3 API key refused, 4 service unreachable,
5 host name not resolved, 6 connection refused, 7 proxy unreachable or refusing, 8 proxy authentication
required, 9 certificate from an unknown issuer, 10 certificate name mismatch, 11 certificate expired.
Run "docex-sync <command> --help" for a command's options.`,
  run: `Usage: docex-sync run --config FILE\n\nRuns until SIGINT/SIGTERM, then lets work in flight reach a safe state and exits 0.\nSIGHUP reloads the config (a config with mistakes is refused and the running one kept).`,
  status: `Usage: docex-sync status --config FILE [--json]\n\nWhat needs attention (failed files with reasons, paused watches), files per state and per watch,\nthe oldest file still waiting, the last reruns and pull. --json: the schema in docs/daemon.md.`,
  rerun: `Usage: docex-sync rerun --config FILE [--template-id N] [--folder-id N] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--override] [--dry-run] [--all-documents]\n\nGathers document ids with fetch_documents and reruns them in chunks of 500.\nWithout any filter, every document of the company is rerun: that needs --all-documents (or a yes on a terminal).\nThe service decides which documents are eligible; --override reruns documents it would otherwise skip.`,
  pull: `Usage: docex-sync pull --config FILE\n\nWrites the data of documents changed since the last pull into pull.output; moves the cursor on success.`,
  retry: `Usage: docex-sync retry --config FILE (--all | NAME_OR_PATTERN ...)\n\nMoves failed files back into their watched folder (their .error.json is removed); the daemon picks them up\nagain as new files. Name files by name, path or pattern (* within a name, ** across folders), or give --all.`,
  check: `Usage: docex-sync check --config FILE\n\nProves the config: the keys and cron expressions, the watched folders exist (never created), the output,\nprocessed, failed and state folders are writable or can be created, the API key works and every\ntemplate_id / folder_id exists for it. One line per problem; exit 2 (3: key refused, 4: unreachable).`,
};

const out = (line: string) => process.stdout.write(`${line}\n`);
/** --debug: one stderr line per request (as DOCEX_DEBUG=http). */
let debugFlag = false;

function clientFor(config: Config, log?: ReturnType<typeof createLogger>): DocexClient {
  return createNodeClient({
    baseUrl: baseUrlFrom(config, process.env),
    apiKey: apiKeyFrom(config, process.env),
    concurrency: config.api.concurrency,
    intervalCap: config.api.requests_per_second,
    intervalMs: 1000,
    rateMarginMs: config.api.rate_margin_ms,
    timeoutMs: config.api.timeout_ms,
    retry: { maxRetries: config.api.max_retries },
    logger: log,
    userAgent: `docex-sync/${packageJson.version}`,
    ...connectionFrom(
      config,
      process.env,
      'api',
      debugFlag,
      (line) => void process.stderr.write(`docex-sync ${line}\n`),
    ),
  });
}

function status(config: Config, json: boolean) {
  const snapshot = cliStatus(config);
  out(json ? JSON.stringify(snapshot, null, 2) : renderStatus(snapshot));
}

/** Failed files named by name, path or pattern (or all), moved back into their watched folder. */
async function retry(config: Config, patterns: string[], all: boolean) {
  if (!all && patterns.length === 0)
    throw new UsageError('name the failed files to retry (names, paths or patterns), or give --all');
  if (!existsSync(config.state_db)) {
    out('0 failed file(s) re-queued: there is no state DB yet.');
    return;
  }
  const matchers = patterns.map((p) => globToRegExp(p));
  const db = new StateDb(config.state_db);
  try {
    const ids = all
      ? 'all'
      : db
          .inState('failed', 1_000_000)
          .filter(
            (r) =>
              patterns.includes(r.path) || matchers.some((m) => m.test(r.rel) || m.test(basename(r.path))),
          )
          .map((r) => r.id);
    const { retried, skipped } = await retryFailed({ db, config }, ids);
    for (const s of skipped)
      process.stderr.write(
        `docex-sync retry: not retried: ${db.get(s.id)?.path ?? `#${s.id}`}: ${s.reason}\n`,
      );
    out(`${retried.length} failed file(s) re-queued.`);
    if (ids !== 'all' && ids.length === 0)
      process.stderr.write(`docex-sync retry: no failed file matches ${patterns.join(', ')}\n`);
  } finally {
    db.close();
  }
}

class UsageError extends ConfigError {}

/** YYYY-MM-DD and a real calendar day, checked before any call; the message names the flag. */
function dateFlag(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const date = day ? new Date(Date.UTC(Number(day[1]), Number(day[2]) - 1, Number(day[3]))) : undefined;
  if (!date || date.toISOString().slice(0, 10) !== value)
    throw new UsageError(`--${flag} must be a calendar date YYYY-MM-DD (got "${value}")`);
  return value;
}

/** A rerun without any filter reruns the whole company: only with --all-documents or a yes on a terminal. */
async function confirmWholeCompany(allDocuments: boolean): Promise<boolean> {
  if (allDocuments) return true;
  if (!process.stdin.isTTY || !process.stderr.isTTY)
    throw new UsageError(
      'no filter given: this would rerun every document of the company; add --all-documents to mean it, or filter with --template-id, --folder-id, --from, --to',
    );
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(
      'No filter given: rerun EVERY document of the company? Type "yes" to go on: ',
    );
    return answer.trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

const COMMANDS = ['run', 'status', 'rerun', 'pull', 'retry', 'check'];
const OPTIONS = [
  'config',
  'json',
  'debug',
  'help',
  'template-id',
  'folder-id',
  'from',
  'to',
  'override',
  'dry-run',
  'all',
  'all-documents',
];

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-V' || command === 'version') {
    out(`docex-sync ${packageJson.version}`);
    return EXIT.ok;
  }
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    out(HELP.main!);
    return command ? EXIT.ok : EXIT.usage;
  }
  if (!COMMANDS.includes(command)) {
    process.stderr.write(
      `docex-sync: unknown command "${command}"${didYouMean(command, [...COMMANDS, '--version', '--help'])}; run "docex-sync --help" for the commands\n`,
    );
    return EXIT.usage;
  }
  let values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      allowPositionals: command === 'retry',
      options: {
        config: { type: 'string', short: 'c' },
        json: { type: 'boolean', default: false },
        debug: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        'template-id': { type: 'string' },
        'folder-id': { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        override: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        all: { type: 'boolean', default: false },
        'all-documents': { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    const unknown = /Unknown option '(--?[\w-]+)'/.exec((error as Error).message)?.[1];
    const hint = unknown
      ? didYouMean(
          unknown,
          OPTIONS.map((o) => `--${o}`),
        )
      : '';
    process.stderr.write(`docex-sync ${command}: ${(error as Error).message}${hint}\n\n${HELP[command]}\n`);
    return EXIT.usage;
  }
  debugFlag = values.debug;
  if (values.help) {
    out(HELP[command]!);
    return EXIT.ok;
  }
  const configFile = values.config ?? process.env.DOCEX_SYNC_CONFIG;
  if (!configFile) {
    process.stderr.write(`docex-sync ${command}: --config FILE is required\n\n${HELP[command]}\n`);
    return EXIT.usage;
  }
  const int = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    if (!/^[1-9]\d*$/.test(v)) throw new UsageError(`--${name} must be a positive whole number (got "${v}")`);
    return Number(v);
  };

  try {
    const config = loadConfig(configFile);
    if (command === 'status') {
      status(config, values.json);
      return EXIT.ok;
    }
    if (command === 'retry') {
      await retry(config, positionals, values.all);
      return EXIT.ok;
    }
    if (command === 'check') {
      const baseUrl = baseUrlFrom(config, process.env);
      const report = await checkConfig(config, clientFor(config), baseUrl);
      for (const problem of report.problems)
        process.stderr.write(`docex-sync check: ${configFile}: ${problem}\n`);
      if (report.exitCode === 0)
        out(
          `${configFile}: the config is valid, its folders are usable, the API key is accepted by ${baseUrl}, and every template and folder it names exists.`,
        );
      return report.exitCode;
    }
    if (command === 'rerun') {
      // Everything the flags say is checked before the first call.
      const filters = {
        template_id: int('template-id', values['template-id']),
        folder_id: int('folder-id', values['folder-id']),
        created_from: dateFlag('from', values.from),
        created_to: dateFlag('to', values.to),
      };
      if (filters.created_from && filters.created_to && filters.created_from > filters.created_to)
        throw new UsageError(`--from ${filters.created_from} is after --to ${filters.created_to}`);
      const unfiltered = Object.values(filters).every((v) => v === undefined);
      if (unfiltered && !values['dry-run'] && !(await confirmWholeCompany(values['all-documents']))) {
        process.stderr.write('docex-sync rerun: not confirmed; nothing was sent.\n');
        return EXIT.failure;
      }
      const log = createLogger(config.log_level);
      const client = clientFor(config, log);
      const db = new StateDb(config.state_db);
      const notify = createNotifier(config, log);
      log.info({ ...filters }, 'rerun: gathering the ids of the matching documents (fetch_documents)');
      const bar = progressBar(process.stderr, 'rerun chunks');
      try {
        const r = await runRerun(
          { db, client, log, config, notify, progress: bar.update },
          { name: 'cli', ...filters, override: values.override, dry_run: values['dry-run'] },
        );
        if (values['dry-run']) {
          out(
            `Dry run: ${r.documents} document(s) match the filters; nothing was sent. The service decides which of them it reruns${values.override ? ' (with --override, also documents it would otherwise skip)' : ': without --override, only documents whose fields, instructions or template changed since their last extraction'}, so the real run may rerun fewer.`,
          );
          return EXIT.ok;
        }
        out(
          `Rerun: ${r.rerun} dispatched, ${r.not_rerun} not rerun, of ${r.documents} document(s).${
            r.refresh
              ? ` Results of ${r.refresh.files} local file(s): ${r.refresh.rewritten} rewritten, ${r.refresh.unchanged} unchanged, ${r.refresh.not_seen} not seen changed.`
              : ''
          }`,
        );
        if (r.rerun === 0 && r.not_rerun > 0 && !values.override)
          process.stderr.write(
            `docex-sync rerun: the service reran none of the ${r.not_rerun} document(s): it reruns a document only when a field, an instruction or the template changed since its last extraction; add --override to rerun them anyway.\n`,
          );
        return r.status === 'failed' ? EXIT.failure : EXIT.ok;
      } finally {
        bar.finish();
        await notify?.close();
        db.close();
      }
    }
    const log = createLogger(config.log_level);
    const client = clientFor(config, log);
    if (command === 'pull') {
      const db = new StateDb(config.state_db);
      const bar = progressBar(process.stderr, 'pull documents');
      try {
        const r = await pullOnce({ db, client, config, log }, { progress: bar.update });
        out(
          `Pulled ${r.documents} document(s) changed since ${r.since.toISOString()} into ${config.pull!.output}.`,
        );
      } finally {
        bar.finish();
        db.close();
      }
      return EXIT.ok;
    }
    return await runUntilStopped(configFile, config, log, client);
  } catch (error) {
    // Config mistakes found outside the file's own checks (the key, the base URL) still name it.
    const message = (error as Error).message;
    const named =
      error instanceof ConfigError && !(error instanceof UsageError) && !message.startsWith(configFile);
    process.stderr.write(`docex-sync ${command}: ${named ? `${configFile}: ` : ''}${message}\n`);
    return exitCodeFor(error);
  }
}

/** A watched folder is never created: a missing one is usually a share that is not mounted (yet). */
function requireWatchedFolders(config: Config) {
  const missing = config.watch.flatMap((w, i) =>
    existsSync(w.path)
      ? []
      : [
          `watch[${i}].path: ${w.path} does not exist (not mounted?); docex-sync never creates a watched folder`,
        ],
  );
  if (missing.length) throw new ConfigError(missing.join('\n'), missing);
}

/**
 * `run`: until SIGINT/SIGTERM (exit 0) or a refused API key (exit 3). SIGHUP reloads the config: a
 * changed config that is invalid is refused with its problems in the log, and the running one stays.
 */
async function runUntilStopped(
  configFile: string,
  first: Config,
  firstLog: Logger,
  firstClient: DocexClient,
) {
  let [config, log, client] = [first, firstLog, firstClient];
  requireWatchedFolders(config);
  const signals = signalQueue(['SIGINT', 'SIGTERM', 'SIGHUP']);
  try {
    let daemon = await startDaemon(config, client, log);
    for (;;) {
      const event = await Promise.race([
        daemon.failure.then((error) => ({ error })),
        signals.next().then((signal) => ({ signal })),
      ]);
      if ('signal' in event && event.signal === 'SIGHUP') {
        let next: { config: Config; log: Logger; client: DocexClient };
        try {
          const nextConfig = loadConfig(configFile);
          requireWatchedFolders(nextConfig);
          const nextLog = createLogger(nextConfig.log_level);
          next = { config: nextConfig, log: nextLog, client: clientFor(nextConfig, nextLog) };
        } catch (error) {
          log.error(
            { config: configFile, problems: (error as ConfigError).problems ?? [(error as Error).message] },
            'SIGHUP: the changed config is refused; running on with the previous one',
          );
          continue;
        }
        log.info({ config: configFile }, 'SIGHUP: reloading the config');
        await daemon.stop();
        ({ config, log, client } = next);
        daemon = await startDaemon(config, client, log);
        log.info({ config: configFile }, 'config reloaded');
        continue;
      }
      await daemon.stop();
      if ('error' in event) throw event.error;
      return EXIT.ok;
    }
  } finally {
    signals.close();
  }
}

/** Signals as a queue, listened to for the whole run: one arriving during a reload is not lost (nor fatal). */
function signalQueue(names: NodeJS.Signals[]) {
  const queue: NodeJS.Signals[] = [];
  let wake: (() => void) | undefined;
  const handler = (signal: NodeJS.Signals) => {
    queue.push(signal);
    wake?.();
  };
  for (const name of names) process.on(name, handler);
  return {
    async next(): Promise<NodeJS.Signals> {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return queue.shift()!;
    },
    close: () => names.forEach((name) => process.off(name, handler)),
  };
}

/** The installed command (daemon/bin/docex-sync.js, after its Node version check) calls this. */
export async function run(argv: string[]): Promise<never> {
  process.exit(await main(argv));
}

if (import.meta.main || process.argv[1]?.endsWith('docex-sync.ts')) void run(process.argv.slice(2));
