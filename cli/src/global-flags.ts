/** Flags every docex command takes, beside its own (and beside an operation's parameters). */
import type { FlagSpec } from '@docex/cli-kit/args';
import { configFlag, DEBUG_FLAG, HELP_FLAG, JSON_FLAG } from '@docex/cli-kit/flags';

export const GLOBAL_FLAGS: readonly FlagSpec[] = [
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
