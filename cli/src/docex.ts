#!/usr/bin/env node
/**
 * docex: every operation of the service from the shell (`docex <resource> <action>`, built from the
 * operation table), a few shortcuts, and templates as code (export, plan, apply). docs/cli.md.
 *
 * This entry answers --version and --help with nothing but the package version and the help text
 * (made at build time in the bundle); a command of the table (table.ts) loads its file when it
 * runs, and the rows of the operation table (operation-rows.ts) are made only when no row of table.ts
 * names the words, so the cheap answers start about as fast as Node.
 */
import packageJson from '../package.json' with { type: 'json' };
import { processIo, runProgram, type Io, type Program } from '@docex/cli-kit/command';
import { DOCEX_GLOBAL_FLAGS as GLOBAL_FLAGS } from '@docex/cli-kit/flags';
import { COMMANDS } from './table.ts';

export type { Io } from '@docex/cli-kit/command';

/** The main help text, put into the bundle by scripts/build.ts; from the sources it is made on use. */
declare const DOCEX_MAIN_HELP: string | undefined;

const mainHelpText = async () =>
  typeof DOCEX_MAIN_HELP === 'string' ? DOCEX_MAIN_HELP : (await import('./operation-rows.ts')).mainHelp();

export const PROGRAM: Program = {
  name: 'docex',
  version: packageJson.version,
  mainHelp: mainHelpText,
  commands: COMMANDS,
  globalFlags: GLOBAL_FLAGS,
  moreCommands: async () => (await import('./operation-rows.ts')).OPERATION_ROWS,
  fail: async (error, where, options, io) =>
    (await import('./failure.ts')).failure(error, where, io, options),
};

export function main(argv: string[], io: Io = processIo()): Promise<number> {
  return runProgram(PROGRAM, argv, io);
}

// Run when started as the docex binary (bundle or symlink) or as this file; not when imported.
if (import.meta.main || /[/\\]docex(\.js|\.ts)?$/.test(process.argv[1] ?? '')) {
  main(process.argv.slice(2)).then((code) => process.stdout.write('', () => process.exit(code)));
}
