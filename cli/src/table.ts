/**
 * docex's own commands (beside `<resource> <action>`, whose rows operation-rows.ts makes from the
 * operation table): a row each, loading the command's file when it runs or shows its help. Adding a
 * command is its file and its row (docs/architecture.md, "Commands"). The table registers its
 * commands, never the other way round: no command's file imports it.
 */
import type { CommandRow } from '@docex/cli-kit/command';

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
    // The table hands its rows down: completion.ts never imports the table back.
    load: async () => (await import('./completion.ts')).completionCommand(COMMANDS),
  },
];
