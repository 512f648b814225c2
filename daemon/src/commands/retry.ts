/** `docex-sync retry`: failed files, named or all, moved back into their watched folder. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'retry',
  usage: 'docex-sync retry --config FILE (--all | NAME_OR_PATTERN ...)',
  description: `Moves failed files back into their watched folder (their .error.json is removed); the daemon picks them up
again as new files. Name files by name, path or pattern (* within a name, ** across folders), or give --all.
A name that names no failed file is an error (exit 2); the others are still retried.`,
  flags: [{ name: 'all', help: 'every failed file' }],
  maxArgs: Infinity,
  async run(options, io) {
    const all = isOn(options, 'all');
    const patterns = options.args;
    if (!all && patterns.length === 0)
      throw new UsageError('name the failed files to retry (names, paths or patterns), or give --all');
    const [{ onNamedFiles }, { retryFailed }] = await Promise.all([
      import('./on-named-files.ts'),
      import('../actions/retry.ts'),
    ]);
    return onNamedFiles(options, io, patterns, all, {
      command: 'retry',
      candidates: (db) => db.files.inState('failed', 1_000_000),
      namesNothing: 'no failed file has this name, path or pattern (docex-sync status lists them)',
      noStateDb: '0 failed file(s) re-queued: there is no state DB yet.',
      decide: async (deps, ids) => {
        const { retried, skipped } = await retryFailed(deps, ids);
        return { taken: retried, skipped };
      },
      skippedAs: 'not retried',
      said: (taken) => `${taken} failed file(s) re-queued.`,
    });
  },
};
