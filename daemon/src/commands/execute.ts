/**
 * The work of each docex-sync command once its arguments are parsed (docex-sync.ts parses them and
 * loads this only then): the config, the client, the state DB, the daemon.
 */
import { existsSync } from 'node:fs';
import { basename, sep } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import packageJson from '../../package.json' with { type: 'json' };
import { checkConfig, checkKey } from './check.ts';
import {
  apiKeyFrom,
  baseUrlFrom,
  ConfigError,
  globMatcher,
  loadConfig,
  connectionFrom,
  type Config,
} from '../common/config.ts';
import { startDaemon, type StartOptions } from '../engine/daemon.ts';
import { EXIT, exitCodeFor, KeyRefusedError } from '../common/exit.ts';
import { createLogger } from '../common/logging.ts';
import { createNotifier } from '../outputs/notify.ts';
import { progressBar } from '../common/progressbar.ts';
import { pullOnce } from '../outputs/pull.ts';
import { runRerun } from '../outputs/reruns.ts';
import { StateDb } from '../store/state.ts';
import { retryFailed } from './retry.ts';
import { prune } from './prune.ts';
import { cliStatus, renderStatus, STATUS_EXIT } from './status.ts';

const out = (line: string) => process.stdout.write(`${line}\n`);
/** --debug: one stderr line per request (as DOCEX_DEBUG=http). */
let debugFlag = false;

/**
 * The largest answer the daemon reads (docs/daemon.md, "Health"): far above any document's data,
 * and a hostile answer is refused before it holds much memory or long parsing.
 */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

function clientFor(config: Config, log?: ReturnType<typeof createLogger>): DocexClient {
  return createNodeClient({
    baseUrl: baseUrlFrom(config, process.env),
    apiKey: apiKeyFrom(config, process.env),
    concurrency: config.api.concurrency,
    intervalCap: config.api.requests_per_second,
    ...connectionFrom(
      config,
      process.env,
      'api',
      debugFlag,
      (line) => void process.stderr.write(`docex-sync ${line}\n`),
    ),
    intervalMs: 1000,
    rateMarginMs: config.api.rate_margin_ms,
    timeoutMs: config.api.timeout_ms,
    retry: { maxRetries: config.api.max_retries },
    logger: log,
    userAgent: `docex-sync/${packageJson.version}`,
    maxResponseBytes: MAX_ANSWER_BYTES,
  });
}

/** Prints the status; its exit code says the health (0 healthy, 1 needs attention, 6 failing). */
function status(config: Config, json: boolean): number {
  const snapshot = cliStatus(config);
  out(json ? JSON.stringify(snapshot, null, 2) : renderStatus(snapshot));
  return STATUS_EXIT[snapshot.health.level];
}

/** Failed files named by name, path or pattern (or all), moved back into their watched folder. */
async function retry(config: Config, patterns: string[], all: boolean) {
  if (!all && patterns.length === 0)
    throw new UsageError('name the failed files to retry (names, paths or patterns), or give --all');
  if (!existsSync(config.state_db)) {
    out('0 failed file(s) re-queued: there is no state DB yet.');
    return;
  }
  const matchers = patterns.map((p) => globMatcher(p));
  const db = new StateDb(config.state_db);
  try {
    const ids = all
      ? 'all'
      : db
          .inState('failed', 1_000_000)
          .filter(
            (r) =>
              patterns.includes(r.path) ||
              matchers.some((m) => m(r.rel.split(sep).join('/')) || m(basename(r.path))),
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

/** The values docex-sync.ts parsed (node:util parseArgs). */
export interface CommandValues {
  json: boolean;
  /** --debug: a line per HTTP request on stderr. */
  debug: boolean;
  override: boolean;
  'dry-run': boolean;
  all: boolean;
  'all-documents': boolean;
  'template-id'?: string;
  'folder-id'?: string;
  from?: string;
  to?: string;
}

export async function execute(
  command: string,
  configFile: string,
  values: CommandValues,
  positionals: string[],
): Promise<number> {
  debugFlag = values.debug;
  const int = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    if (!/^[1-9]\d*$/.test(v)) throw new UsageError(`--${name} must be a positive whole number (got "${v}")`);
    return Number(v);
  };

  try {
    const config = loadConfig(configFile);
    if (command === 'status') {
      return status(config, values.json);
    }
    if (command === 'retry') {
      await retry(config, positionals, values.all);
      return EXIT.ok;
    }
    if (command === 'prune') {
      const report = await prune(config, { dryRun: values['dry-run'], out });
      return report.entries.some((e) => e.outcome === 'error') ? EXIT.failure : EXIT.ok;
    }
    if (command === 'check') {
      const baseUrl = baseUrlFrom(config, process.env);
      const report = await checkConfig(config, clientFor(config), baseUrl);
      for (const problem of report.problems)
        process.stderr.write(`docex-sync check: ${configFile}: ${problem}\n`);
      for (const line of report.mailboxes ?? []) out(line);
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
 * One check_api_key before anything starts (no DB opened, no watcher): a refused key stops here with
 * check's message (exit 3); an unreachable service does not, the run starts and checks again.
 */
async function keyFirst(config: Config, client: DocexClient): Promise<StartOptions> {
  const baseUrl = baseUrlFrom(config, process.env);
  const key = await checkKey(client, baseUrl);
  if (key.ok) return { keyAccepted: true };
  if (key.exitCode === EXIT.auth) {
    recordKeyRefusal(config, key.problem);
    throw new KeyRefusedError(key.problem);
  }
  return { keyUnchecked: { reason: key.problem, check: () => checkKey(client, baseUrl) } };
}

/**
 * The refusal goes into the state DB (made if there is none yet), so `status` says it after this
 * run exits 3 - unless another daemon holds the DB: that one runs with its own key, and a refusal
 * of this one's must not make it look broken. Nothing else happens: no file is looked at.
 */
function recordKeyRefusal(config: Config, message: string) {
  let db: StateDb | undefined;
  try {
    db = new StateDb(config.state_db);
    db.lockExclusive(Date.now());
    db.markKeyRefused(Date.now(), message);
  } catch {
    // Held by a running daemon, or not usable: the message on stderr is the record then.
  } finally {
    db?.close();
  }
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
    let daemon = await startDaemon(config, client, log, await keyFirst(config, client));
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
        let options: StartOptions;
        try {
          options = await keyFirst(next.config, next.client);
        } catch (error) {
          log.fatal(
            { config: configFile, err: (error as Error).message },
            'SIGHUP: the API key is refused; stopping',
          );
          daemon.db.markKeyRefused(Date.now(), (error as Error).message);
          await daemon.stop();
          throw error;
        }
        log.info({ config: configFile }, 'SIGHUP: reloading the config');
        await daemon.stop();
        ({ config, log, client } = next);
        daemon = await startDaemon(config, client, log, options);
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
