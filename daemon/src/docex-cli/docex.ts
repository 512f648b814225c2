#!/usr/bin/env node
/**
 * docex: every operation of the service from the shell (`docex <resource> <action>`, built from the
 * operation table), a few shortcuts, and templates as code (export, plan, apply). docs/cli.md.
 *
 * This entry answers --version and --help with nothing but the package version and the help text
 * (made at build time in the bundle); every other command imports its work (dispatch.ts) when it
 * runs, so the cheap answers start about as fast as Node itself.
 */
import packageJson from '../../package.json' with { type: 'json' };
import { EXIT } from '../common/exit-codes.ts';
import type { Io } from './dispatch.ts';

export type { Io } from './dispatch.ts';

/** The main help text, put into the bundle by scripts/build.ts; from the sources it is made on use. */
declare const DOCEX_MAIN_HELP: string | undefined;

const mainHelpText = async () =>
  typeof DOCEX_MAIN_HELP === 'string' ? DOCEX_MAIN_HELP : (await import('./commands.ts')).mainHelp();

export async function main(
  argv: string[],
  io: Io = { stdout: process.stdout, stderr: process.stderr, env: process.env },
): Promise<number> {
  const [first] = argv;
  if (first === '--version' || first === '-v' || first === '-V' || first === 'version') {
    io.stdout.write(`docex ${packageJson.version}\n`);
    return EXIT.ok;
  }
  if (!first || first === '--help' || first === '-h' || first === 'help') {
    io.stdout.write(`${await mainHelpText()}\n`);
    return first ? EXIT.ok : EXIT.usage;
  }
  const { runDocex } = await import('./dispatch.ts');
  return runDocex(argv, io);
}

// Run when started as the docex binary (bundle or symlink) or as this file; not when imported.
if (import.meta.main || /[/\\]docex(\.js|\.ts)?$/.test(process.argv[1] ?? '')) {
  main(process.argv.slice(2)).then((code) => process.stdout.write('', () => process.exit(code)));
}
