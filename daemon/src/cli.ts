#!/usr/bin/env node
/**
 * docex-sync: run | status | rerun | pull | retry | check. Errors reach the user as one clear line
 * and an exit code (docs/daemon.md), never as a stack trace.
 */
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { DocexAuthenticationError, type DocexClient } from '../../shared/src/core/index.ts';
import { createNodeClient } from '../../shared/src/node/index.ts';
import packageJson from '../package.json' with { type: 'json' };
import { apiKeyFrom, baseUrlFrom, ConfigError, loadConfig, type Config } from './config.ts';
import { startDaemon } from './daemon.ts';
import { decide } from './lifecycle.ts';
import { EXIT, exitCodeFor } from './exit.ts';
import { createLogger } from './logging.ts';
import { createNotifier } from './notify.ts';
import { pullOnce } from './pull.ts';
import { runRerun } from './reruns.ts';
import { StateDb } from './state.ts';

export { EXIT } from './exit.ts';

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
Exit codes: 0 ok, 1 failure, 2 bad usage or config, 3 API key refused, 4 service unreachable.
Run "docex-sync <command> --help" for a command's options.`,
  run: `Usage: docex-sync run --config FILE\n\nRuns until SIGINT/SIGTERM, then lets work in flight reach a safe state and exits 0.`,
  status: `Usage: docex-sync status --config FILE [--json]\n\nShows files per state, the oldest file still waiting, the last errors and reruns.`,
  rerun: `Usage: docex-sync rerun --config FILE [--template-id N] [--folder-id N] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--override] [--dry-run]\n\nGathers document ids with fetch_documents and reruns them in chunks of 500.`,
  pull: `Usage: docex-sync pull --config FILE\n\nWrites the data of documents changed since the last pull into pull.output; moves the cursor on success.`,
  retry: `Usage: docex-sync retry --config FILE [--all]\n\nMoves failed files back into their watched folder (their .error.json is removed); the daemon picks them up again.`,
  check: `Usage: docex-sync check --config FILE\n\nValidates the config, then calls check_api_key.`,
};

const out = (line: string) => process.stdout.write(`${line}\n`);

function clientFor(config: Config, log?: ReturnType<typeof createLogger>): DocexClient {
  return createNodeClient({
    baseUrl: baseUrlFrom(config, process.env),
    apiKey: apiKeyFrom(config, process.env),
    concurrency: config.api.concurrency,
    intervalCap: config.api.requests_per_second,
    intervalMs: 1000,
    timeoutMs: config.api.timeout_ms,
    retry: { maxRetries: config.api.max_retries },
    logger: log,
    userAgent: 'docex-sync/0.1',
  });
}

async function status(config: Config, json: boolean) {
  if (!existsSync(config.state_db)) {
    if (json) out(JSON.stringify({ files: {}, note: 'no state DB yet' }));
    else out(`No state DB yet at ${config.state_db}: the daemon has not run.`);
    return;
  }
  const db = new StateDb(config.state_db);
  try {
    const oldest = db.oldestWaiting();
    const report = {
      files: db.counts(),
      outcomes: db.outcomes(),
      oldest_waiting: oldest
        ? { file: oldest.path, state: oldest.state, since: new Date(oldest.discovered_at).toISOString() }
        : null,
      last_errors: db
        .lastErrors()
        .map((r) => ({ file: r.path, reason: r.reason, at: new Date(r.updated_at).toISOString() })),
      last_reruns: db.lastReruns(),
      ...db.problems(),
      pull_cursor: db.getValue('pull.cursor')
        ? new Date(Number(db.getValue('pull.cursor'))).toISOString()
        : null,
    };
    if (json) return out(JSON.stringify(report, null, 2));
    out('Files by state:');
    for (const [state, n] of Object.entries(report.files)) out(`  ${state.padEnd(11)} ${n}`);
    out(
      `Outcomes: ${
        Object.entries(report.outcomes)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ') || 'none yet'
      }`,
    );
    out(
      report.oldest_waiting
        ? `Oldest waiting: ${report.oldest_waiting.file} (${report.oldest_waiting.state} since ${report.oldest_waiting.since})`
        : 'Nothing waiting.',
    );
    if (report.last_errors.length) {
      out('Last errors:');
      for (const e of report.last_errors) out(`  ${e.at}  ${e.file}: ${e.reason}`);
    }
    for (const w of report.paused_watches) out(`PAUSED ${w.watch} since ${w.since}: ${w.reason}`);
    if (report.service_unreachable)
      out(
        `Service unreachable since ${report.service_unreachable.since}: ${report.service_unreachable.reason}`,
      );
    for (const b of report.blocked) out(`Held back: ${b.file}: ${b.reason}`);
    if (report.pull_cursor) out(`Pull cursor: ${report.pull_cursor}`);
  } finally {
    db.close();
  }
}

async function retry(config: Config) {
  const db = new StateDb(config.state_db);
  let moved = 0;
  try {
    for (const row of db.inState('failed', 1_000_000)) {
      const watch = config.watch.find((w) => w.path === row.watch);
      if (!watch || row.reason?.startsWith('retried')) continue;
      if (row.finalized && existsSync(row.path)) {
        const back = join(watch.path, row.rel);
        await mkdir(dirname(back), { recursive: true });
        if (existsSync(back)) continue;
        await rename(row.path, back);
        await rm(`${row.path}.error.json`, { force: true });
        db.update(row.id, { reason: `retried: ${row.reason}` }, Date.now());
        moved++;
      } else if (!row.finalized) {
        const { changes } = decide(row, { kind: 'retry-requested' }, Date.now(), {
          stable_ms: watch.stable_ms,
          poll: config.poll,
          upload: config.upload,
          random: Math.random,
        });
        if (changes) db.update(row.id, changes, Date.now());
        moved++;
      }
    }
  } finally {
    db.close();
  }
  out(`${moved} failed file(s) re-queued.`);
}

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
  if (!HELP[command] || command === 'main') {
    process.stderr.write(`docex-sync: unknown command "${command}"\n\n${HELP.main}\n`);
    return EXIT.usage;
  }
  let values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        config: { type: 'string', short: 'c' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
        'template-id': { type: 'string' },
        'folder-id': { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        override: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        all: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    process.stderr.write(`docex-sync ${command}: ${(error as Error).message}\n\n${HELP[command]}\n`);
    return EXIT.usage;
  }
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
    if (!/^\d+$/.test(v)) throw new ConfigError(`--${name} must be a positive whole number (got "${v}")`);
    return Number(v);
  };

  try {
    const config = loadConfig(configFile);
    if (command === 'status') {
      await status(config, values.json);
      return EXIT.ok;
    }
    if (command === 'retry') {
      await retry(config);
      return EXIT.ok;
    }
    const log = createLogger(config.log_level);
    const client = clientFor(config, log);
    if (command === 'check') {
      const answer = await client.checkApiKey();
      if (!answer.valid)
        throw new DocexAuthenticationError({
          operation: 'check_api_key',
          status: 200,
          headers: {},
          body: answer.details,
          serverMessage: 'the service says the key is not valid',
        });
      out(`Config ${configFile} is valid; the API key is accepted by ${baseUrlFrom(config, process.env)}.`);
      return EXIT.ok;
    }
    if (command === 'pull') {
      const db = new StateDb(config.state_db);
      try {
        const r = await pullOnce({ db, client, config, log });
        out(
          `Pulled ${r.documents} document(s) changed since ${r.since.toISOString()} into ${config.pull!.output}.`,
        );
      } finally {
        db.close();
      }
      return EXIT.ok;
    }
    if (command === 'rerun') {
      const db = new StateDb(config.state_db);
      const notify = createNotifier(config, log);
      try {
        const r = await runRerun(
          { db, client, log, config, notify },
          {
            name: 'cli',
            template_id: int('template-id', values['template-id']),
            folder_id: int('folder-id', values['folder-id']),
            created_from: values.from,
            created_to: values.to,
            override: values.override,
            dry_run: values['dry-run'],
          },
        );
        out(
          values['dry-run']
            ? `Dry run: ${r.documents} document(s) would be rerun.`
            : `Rerun: ${r.rerun} dispatched, ${r.not_rerun} not rerun, of ${r.documents} document(s).${
                r.refresh
                  ? ` Results of ${r.refresh.files} local file(s): ${r.refresh.rewritten} rewritten, ${r.refresh.unchanged} unchanged, ${r.refresh.not_seen} not seen changed.`
                  : ''
              }`,
        );
        return r.status === 'failed' ? EXIT.failure : EXIT.ok;
      } finally {
        await notify?.close();
        db.close();
      }
    }
    // run
    const daemon = await startDaemon(config, client, log);
    const refused = await Promise.race([
      daemon.failure,
      new Promise<undefined>((resolve) => {
        process.once('SIGINT', () => resolve(undefined));
        process.once('SIGTERM', () => resolve(undefined));
      }),
    ]);
    await daemon.stop();
    if (refused !== undefined) throw refused;
    return EXIT.ok;
  } catch (error) {
    process.stderr.write(`docex-sync ${command}: ${(error as Error).message}\n`);
    return exitCodeFor(error);
  }
}

/** The installed command (daemon/bin/docex-sync.js, after its Node version check) calls this. */
export async function run(argv: string[]): Promise<never> {
  process.exit(await main(argv));
}

if (import.meta.main || process.argv[1]?.endsWith('cli.ts')) void run(process.argv.slice(2));
