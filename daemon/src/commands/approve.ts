/** `docex-sync approve`: documents waiting for review, named (as found or as waiting) or all, approved. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'approve',
  usage: 'docex-sync approve --config FILE (--all | NAME_OR_PATTERN ...)',
  description: `Approves documents a review rule held (docex-sync status lists them with their reasons): the running
daemon moves their results from review_dir into output and their original on to the processed folder
(a daemon that is not running does it when it next starts). Name files by name, path or pattern
(* within a name, ** across folders), as found or as waiting in review_dir, or give --all.
A name that names no file waiting for review is an error (exit 2); the others are still approved.`,
  flags: [{ name: 'all', help: 'every file waiting for review' }],
  maxArgs: Infinity,
  async run(options, io) {
    const all = isOn(options, 'all');
    const patterns = options.args;
    if (!all && patterns.length === 0)
      throw new UsageError('name the files to approve (names, paths or patterns), or give --all');
    const [{ onNamedFiles }, { approveAndNote }] = await Promise.all([
      import('./on-named-files.ts'),
      import('../actions/approve.ts'),
    ]);
    return onNamedFiles(options, io, patterns, all, {
      command: 'approve',
      candidates: (db) => db.fileCounts.inReview(1_000_000),
      alsoInReview: true,
      namesNothing:
        'no file waiting for review has this name, path or pattern (docex-sync review list shows them)',
      noStateDb: '0 file(s) approved: there is no state DB yet.',
      decide: async (deps, ids) => {
        const { approved, skipped } = await approveAndNote(deps, ids);
        return { taken: approved, skipped };
      },
      skippedAs: 'not approved',
      said: (taken, running) =>
        `${taken} file(s) approved${
          taken === 0
            ? '.'
            : running
              ? ': the running docex-sync moves them to the processed and output folders now.'
              : ': docex-sync is not running; it moves them to the processed and output folders when it next starts.'
        }`,
    });
  },
};
