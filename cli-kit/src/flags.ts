/**
 * The flags both binaries understand, named once: the same spelling, short form and meaning in
 * `docex` and `docex-sync`. Old spellings stay as hidden aliases (scripts use them; help shows only
 * the names here). docs/cli.md and docs/daemon.md list them.
 */
import type { FlagSpec } from './args.ts';

export const HELP_FLAG: FlagSpec = { name: 'help', short: 'h', help: 'this help' };
export const JSON_FLAG: FlagSpec = {
  name: 'json',
  help: 'print JSON (docex: the default when the output is not a terminal)',
};
export const DEBUG_FLAG: FlagSpec = {
  name: 'debug',
  help: 'one line per HTTP request on stderr (also DOCEX_DEBUG=http); no key, no proxy password',
};
/** `--config FILE`: docex-sync's daemon config, docex's file of account profiles. */
export const configFlag = (what: string): FlagSpec => ({
  name: 'config',
  short: 'c',
  value: 'FILE',
  help: what,
});

/** `--version`, `-v`, `-V` and `version` print "<program> <version>" in both. */
export const VERSION_WORDS = ['--version', '-v', '-V', 'version'];
/** `--help`, `-h` and `help` print the program's help in both. */
export const HELP_WORDS = ['--help', '-h', 'help'];

/** What a bulk rerun selects and how, in `docex rerun` and `docex-sync rerun` alike. */
export const RERUN_FLAGS: readonly FlagSpec[] = [
  { name: 'template', value: 'N', help: 'documents of template N', aliases: ['template-id'] },
  { name: 'folder', value: 'N', help: 'documents of folder N', aliases: ['folder-id'] },
  { name: 'from', value: 'YYYY-MM-DD', help: 'documents created on or after this day' },
  { name: 'to', value: 'YYYY-MM-DD', help: 'documents created on or before this day' },
  {
    name: 'all',
    help: 'every document of the account: needed when no filter is given',
    aliases: ['all-documents'],
  },
  {
    name: 'override',
    help: 'rerun documents the service would otherwise skip (nothing changed since their extraction)',
  },
  { name: 'dry-run', help: 'count the matching documents; send nothing' },
];

/**
 * Flags every docex command takes, beside its own (and beside an operation's parameters). Here, not
 * in cli/src/, so that docex's table, its operation table and its completion read them from a
 * module none of them registers (no import cycle), and `docex --version` loads no module more.
 */
export const DOCEX_GLOBAL_FLAGS: readonly FlagSpec[] = [
  JSON_FLAG,
  {
    name: 'profile',
    value: 'NAME',
    help: "account profile from the config file (default: DOCEX_PROFILE, then the file's default)",
  },
  configFlag('config file (default: DOCEX_CONFIG, then ~/.config/docex/config.yaml)'),
  DEBUG_FLAG,
  HELP_FLAG,
];
