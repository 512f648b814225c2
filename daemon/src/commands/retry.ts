/** `docex-sync retry`: failed files, named or all, moved back into their watched folder. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
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
    const [{ open }, { cliActor }, { existsSync }, { namedIds }, { StateDb }, { retryFailed }] =
      await Promise.all([
        import('./context.ts'),
        import('./actor.ts'),
        import('node:fs'),
        import('./named-files.ts'),
        import('../store/state.ts'),
        import('../actions/retry.ts'),
      ]);
    const { config, out } = open(options, io);
    // A name that names no failed file is a mistake to say (exit 2), not a silent no-op; the
    // other names given are still retried.
    const unknown = (names: string[]) => {
      for (const name of names)
        io.stderr.write(
          `docex-sync retry: ${name}: no failed file has this name, path or pattern (docex-sync status lists them)\n`,
        );
      return names.length > 0 ? EXIT.usage : EXIT.ok;
    };
    if (!existsSync(config.state_db)) {
      out('0 failed file(s) re-queued: there is no state DB yet.');
      return unknown(patterns);
    }
    const db = new StateDb(config.state_db);
    let unmatched: string[] = [];
    try {
      let ids: number[] | 'all' = 'all';
      if (!all) ({ ids, unmatched } = namedIds(db.inState('failed', 1_000_000), patterns));
      const { retried, skipped } = await retryFailed({ db, config, now: io.now, actor: cliActor(io) }, ids);
      for (const s of skipped)
        io.stderr.write(`docex-sync retry: not retried: ${db.get(s.id)?.path ?? `#${s.id}`}: ${s.reason}\n`);
      out(`${retried.length} failed file(s) re-queued.`);
    } finally {
      db.close();
    }
    return unknown(unmatched);
  },
};
