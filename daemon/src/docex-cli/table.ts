/**
 * docex's own commands (beside `<resource> <action>`, whose rows commands.ts makes from the
 * operation table): a row each, loading the command's file when it runs or shows its help. Adding a
 * command is its file and its row (docs/architecture.md, "Commands").
 */
import type { FlagSpec } from '../common/args.ts';
import type { CommandRow } from '../common/command.ts';
import { configFlag, DEBUG_FLAG, HELP_FLAG, JSON_FLAG } from '../common/flags.ts';

/** Flags every docex command takes, beside its own (and beside an operation's parameters). */
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

export const COMMANDS: readonly CommandRow[] = [
  {
    name: 'rerun',
    summary: 'rerun every matching document',
    load: async () => (await import('./rerun.ts')).command,
  },
  {
    name: 'templates list',
    summary: 'list the templates, with their folders',
    load: async () => (await import('./templates-list.ts')).command,
  },
  {
    name: 'fields list',
    summary: "list a template's fields in display order",
    load: async () => (await import('./fields-list.ts')).command,
  },
  {
    name: 'templates export',
    summary: 'write folders, templates, fields and instructions as YAML',
    load: async () => (await import('./templates-export.ts')).command,
  },
  {
    name: 'templates plan',
    summary: 'show what apply would change',
    load: async () => (await import('./templates-plan.ts')).command,
  },
  {
    name: 'templates apply',
    summary: 'make the account match FILE',
    load: async () => (await import('./templates-apply.ts')).command,
  },
  {
    name: 'completion',
    summary: 'print a shell completion script',
    load: async () => (await import('./completion.ts')).command,
  },
];
