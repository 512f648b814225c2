#!/usr/bin/env node
/**
 * docex-sync: run | status | rerun | pull | retry | check | prune. Errors reach the user as one clear line
 * and an exit code (docs/daemon.md), never as a stack trace.
 *
 * This entry answers --version, --help and usage mistakes with nothing but Node built-ins loaded;
 * a command's work (config, client, state DB, logging) is imported when it runs (execute.ts), so
 * `docex-sync --version` starts about as fast as Node itself.
 */
import { parseArgs } from 'node:util';
import packageJson from '../../package.json' with { type: 'json' };
import { EXIT } from '../common/exit-codes.ts';
import { didYouMean } from '../common/suggest.ts';

export { EXIT } from '../common/exit-codes.ts';

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
  prune    delete what retention says is old enough (--dry-run: only print it)

The API key comes from DOCEX_API_KEY (or api.api_key_file); the base URL from api.base_url or DOCEX_BASE_URL.
Exit codes: 0 ok, 1 failure, 2 bad usage or config, 3 API key refused, 4 service unreachable,\n5 state DB unusable, 7 host name not resolved, 8 connection refused, 9 proxy unreachable or refusing,\n10 proxy authentication required, 11 certificate from an unknown issuer,\n12 certificate name mismatch, 13 certificate expired; status: 0 healthy, 1 needs attention, 6 failing.
Run "docex-sync <command> --help" for a command's options.`,
  run: `Usage: docex-sync run --config FILE\n\nRuns until SIGINT/SIGTERM, then lets work in flight reach a safe state and exits 0.\nSIGHUP reloads the config (a config with mistakes is refused and the running one kept).`,
  status: `Usage: docex-sync status --config FILE [--json]\n\nWhat needs attention (failed files with reasons, paused watches), files per state and per watch,\nthe oldest file still waiting, the last reruns and pull. --json: the schema in docs/daemon.md.`,
  rerun: `Usage: docex-sync rerun --config FILE [--template-id N] [--folder-id N] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--override] [--dry-run] [--all-documents]\n\nGathers document ids with fetch_documents and reruns them in chunks of 500.\nWithout any filter, every document of the company is rerun: that needs --all-documents (or a yes on a terminal).\nThe service decides which documents are eligible; --override reruns documents it would otherwise skip.`,
  pull: `Usage: docex-sync pull --config FILE\n\nWrites the data of documents changed since the last pull into pull.output; moves the cursor on success.`,
  retry: `Usage: docex-sync retry --config FILE (--all | NAME_OR_PATTERN ...)\n\nMoves failed files back into their watched folder (their .error.json is removed); the daemon picks them up\nagain as new files. Name files by name, path or pattern (* within a name, ** across folders), or give --all.`,
  prune: `Usage: docex-sync prune --config FILE [--dry-run]\n\nDeletes the processed originals, failed originals (with their .error.json) and result files that are\nolder than their watch's retention days, counted from when the state DB recorded them. Only files the\nstate DB records as moved or written by docex-sync, and only while they are unchanged; nothing else.\n--dry-run: prints each file it would delete and the bytes, and deletes nothing.`,
  check: `Usage: docex-sync check --config FILE\n\nProves the config: the keys and cron expressions, the watched folders exist (never created), the output,\nprocessed, failed and state folders are writable or can be created, the API key works and every\ntemplate_id / folder_id exists for it. One line per problem; exit 2 (3: key refused, 4: unreachable).`,
};

const out = (line: string) => process.stdout.write(`${line}\n`);

const COMMANDS = ['run', 'status', 'rerun', 'pull', 'retry', 'check', 'prune'];
const OPTIONS = [
  'config',
  'json',
  'help',
  'template-id',
  'folder-id',
  'from',
  'to',
  'override',
  'dry-run',
  'all',
  'all-documents',
  'debug',
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
        help: { type: 'boolean', short: 'h', default: false },
        'template-id': { type: 'string' },
        'folder-id': { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        override: { type: 'boolean', default: false },
        'dry-run': { type: 'boolean', default: false },
        all: { type: 'boolean', default: false },
        'all-documents': { type: 'boolean', default: false },
        debug: { type: 'boolean', default: false },
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
  if (values.help) {
    out(HELP[command]!);
    return EXIT.ok;
  }
  const configFile = values.config ?? process.env.DOCEX_SYNC_CONFIG;
  if (!configFile) {
    process.stderr.write(`docex-sync ${command}: --config FILE is required\n\n${HELP[command]}\n`);
    return EXIT.usage;
  }
  const { execute } = await import('./execute.ts');
  return execute(command, configFile, values, positionals);
}

/** The installed command (daemon/bin/docex-sync.js, after its Node version check) calls this. */
export async function run(argv: string[]): Promise<never> {
  process.exit(await main(argv));
}

if (import.meta.main || process.argv[1]?.endsWith('docex-sync.ts')) void run(process.argv.slice(2));
