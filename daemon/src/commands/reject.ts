/** `docex-sync reject`: documents waiting for review, named by id or path, sent to the failed folder with a reason. */
import { text } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'reject',
  usage: 'docex-sync reject --config FILE --reason TEXT ID_OR_PATH ...',
  description: `Rejects documents a review rule held: each goes to its watch's failed folder, its .error.json saying
who rejected it and why (the running daemon moves it at once; one that is not running, when it next
starts); its results are not written. Name each by its id (docex-sync review list --json shows it),
its path, name or pattern, as found or as waiting in review_dir. A name that names no file waiting for
review is an error (exit 2); the others are still rejected. docex-sync retry takes a rejected file back.`,
  flags: [
    {
      name: 'reason',
      value: 'TEXT',
      help: 'why it is rejected (written into its .error.json and the audit trail)',
    },
  ],
  maxArgs: Infinity,
  async run(options, io) {
    const names = options.args;
    const reason = text(options, 'reason')?.trim();
    if (names.length === 0) throw new UsageError('name the documents to reject (ids, paths or patterns)');
    if (!reason)
      throw new UsageError('--reason TEXT is required: say why, for whoever looks at the failed folder');
    const [{ onNamedFiles }, { rejectReviewed }] = await Promise.all([
      import('./on-named-files.ts'),
      import('../actions/reject.ts'),
    ]);
    return onNamedFiles(options, io, names, false, {
      command: 'reject',
      candidates: (db) => db.fileCounts.inReview(1_000_000),
      alsoInReview: true,
      byId: true,
      namesNothing:
        'no file waiting for review has this id, name, path or pattern (docex-sync review list shows them)',
      noStateDb: '0 file(s) rejected: there is no state DB yet.',
      decide: async (deps, ids) => {
        const { rejected, skipped } = await rejectReviewed(deps, ids === 'all' ? [] : ids, reason);
        return { taken: rejected, skipped };
      },
      skippedAs: 'not rejected',
      said: (taken, running) =>
        `${taken} file(s) rejected${
          taken === 0
            ? '.'
            : running
              ? ': the running docex-sync moves them to the failed folder now.'
              : ': docex-sync is not running; it moves them to the failed folder when it next starts.'
        }`,
    });
  },
};
