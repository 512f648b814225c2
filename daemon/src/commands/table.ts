/**
 * docex-sync's commands: a row each, in the order the help lists them. A row loads its command's
 * file only when that command runs or shows its help; adding a command is its file and its row
 * (docs/architecture.md, "Commands").
 */
import type { CommandRow } from '@docex/cli-kit/command';
import type { SyncIo } from './io.ts';

export const COMMANDS: ReadonlyArray<CommandRow<SyncIo>> = [
  {
    name: 'run',
    summary: 'run the daemon (watch, upload, poll, write results, pull, scheduled reruns)',
    load: async () => (await import('./run.ts')).command,
  },
  {
    name: 'status',
    summary: 'counts per state, oldest waiting file, last errors (--json for machines)',
    load: async () => (await import('./status.ts')).command,
  },
  {
    name: 'rerun',
    summary: 'one-off bulk rerun (--template, --folder, --from, --to, --override, --dry-run)',
    load: async () => (await import('./rerun.ts')).command,
  },
  {
    name: 'pull',
    summary: 'one-off pull of documents changed since the stored cursor',
    load: async () => (await import('./pull.ts')).command,
  },
  {
    name: 'retry',
    summary: 'put failed files back into their watched folder to be processed again',
    load: async () => (await import('./retry.ts')).command,
  },
  {
    name: 'approve',
    summary: 'let documents waiting for review go on to the processed and output folders',
    load: async () => (await import('./approve.ts')).command,
  },
  {
    name: 'reject',
    summary: 'send documents waiting for review to the failed folder, with a reason',
    load: async () => (await import('./reject.ts')).command,
  },
  {
    name: 'review list',
    summary: 'the documents waiting for review, with the rules that held them (--json for machines)',
    load: async () => (await import('./review-list.ts')).command,
  },
  {
    name: 'review log',
    summary: 'the audit trail: who approved, rejected, corrected or retried what, and when',
    load: async () => (await import('./review-log.ts')).command,
  },
  {
    name: 'prune',
    summary: 'delete what retention says is old enough (--dry-run: only print it)',
    load: async () => (await import('./prune.ts')).command,
  },
  {
    name: 'check',
    summary: 'validate the config and the API key, then exit',
    load: async () => (await import('./check.ts')).command,
  },
];
