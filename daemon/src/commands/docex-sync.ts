#!/usr/bin/env node
/**
 * docex-sync: run | status | rerun | pull | retry | check (table.ts). Errors reach the user as one
 * clear line and an exit code (docs/daemon.md), never as a stack trace.
 *
 * This entry answers --version, --help and usage mistakes with nothing but Node built-ins loaded;
 * a command's work (config, client, state DB, logging) is imported when it runs, so
 * `docex-sync --version` starts about as fast as Node itself.
 */
import packageJson from '../../package.json' with { type: 'json' };
import { text } from '@docex/cli-kit/args';
import { commandList, processIo, runProgram, type Program } from '@docex/cli-kit/command';
import { ConfigError, UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { configFlag, DEBUG_FLAG, HELP_FLAG } from '@docex/cli-kit/flags';
import type { SyncIo } from './io.ts';
import { COMMANDS } from './table.ts';

export { EXIT } from '@docex/cli-kit/exit-codes';

/** The main help; scripts/build.ts also writes it into dist/answers.js for the installed bin. */
export const mainHelp =
  () => `docex-sync — watches folders, uploads new files to the Document Extraction Service, writes the results.

Usage: docex-sync <command> --config FILE [options]

Commands:
${commandList(COMMANDS)}

The API key comes from DOCEX_API_KEY (or api.api_key_file); the base URL from api.base_url or DOCEX_BASE_URL.
Exit codes: 0 ok, 1 failure, 2 bad usage or config, 3 API key refused, 4 service unreachable,
5 state DB unusable, 7 host name not resolved, 8 connection refused, 9 proxy unreachable or refusing,
10 proxy authentication required, 11 certificate from an unknown issuer,
12 certificate name mismatch, 13 certificate expired; status: 0 healthy, 1 needs attention, 6 failing.
Run "docex-sync <command> --help" for a command's options.`;

export const PROGRAM: Program<SyncIo> = {
  name: 'docex-sync',
  version: packageJson.version,
  mainHelp,
  commands: COMMANDS,
  globalFlags: [configFlag('the config file (default: DOCEX_SYNC_CONFIG)'), DEBUG_FLAG, HELP_FLAG],
  async fail(error, where, options, io) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof UsageError) {
      io.stderr.write(`${message.startsWith(`${where}:`) ? message : `${where}: ${message}`}\n`);
      return EXIT.usage;
    }
    // Config mistakes found outside the file's own checks (the key, the base URL) still name it.
    const configFile = options && (text(options, 'config') ?? io.env.DOCEX_SYNC_CONFIG);
    const named = error instanceof ConfigError && configFile && !message.startsWith(configFile);
    const [{ exitCodeFor }, { withHint }, { syncTerms }, { loadConfig }] = await Promise.all([
      import('@docex/cli-kit/exit'),
      import('@docex/cli-kit/failure-hints'),
      import('@docex/cli-kit/api-config'),
      import('../config/config.ts'),
    ]);
    // A refused key or an address where no service answers: what to do, in docex-sync's terms.
    const hinted = withHint(message, error, () => {
      try {
        return syncTerms(configFile ? loadConfig(configFile) : undefined);
      } catch {
        return syncTerms();
      }
    });
    io.stderr.write(`${where}: ${named ? `${configFile}: ` : ''}${hinted}\n`);
    return exitCodeFor(error);
  },
};

export function main(argv: string[], io: SyncIo = processIo()): Promise<number> {
  return runProgram(PROGRAM, argv, io);
}

/** The installed command (daemon/bin/docex-sync.js, after its Node version check) calls this. */
export async function run(argv: string[]): Promise<never> {
  process.exit(await main(argv));
}

if (import.meta.main || process.argv[1]?.endsWith('docex-sync.ts')) void run(process.argv.slice(2));
