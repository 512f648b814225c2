/** `docex-sync approve`: documents waiting for review, named (as found or as waiting) or all, approved. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
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
    const [
      { open },
      { cliActor },
      { existsSync },
      { namedIds },
      { basename },
      { StateDb },
      { approveAndNote },
    ] = await Promise.all([
      import('./context.ts'),
      import('./actor.ts'),
      import('node:fs'),
      import('./named-files.ts'),
      import('node:path'),
      import('../store/state.ts'),
      import('../actions/approve.ts'),
    ]);
    const { config, out } = open(options, io);
    // A name that names nothing waiting is a mistake to say (exit 2), not a silent no-op; the
    // other names given are still approved.
    const unknown = (names: string[]) => {
      for (const name of names)
        io.stderr.write(
          `docex-sync approve: ${name}: no file waiting for review has this name, path or pattern (docex-sync review list shows them)\n`,
        );
      return names.length > 0 ? EXIT.usage : EXIT.ok;
    };
    if (!existsSync(config.state_db)) {
      out('0 file(s) approved: there is no state DB yet.');
      return unknown(patterns);
    }
    const db = new StateDb(config.state_db);
    let unmatched: string[] = [];
    try {
      let ids: number[] | 'all' = 'all';
      if (!all)
        ({ ids, unmatched } = namedIds(db.inReview(1_000_000), patterns, (r) =>
          r.review_path === null ? [] : [[r.review_path, basename(r.review_path)]],
        ));
      const { approved, skipped } = await approveAndNote(
        { db, config, now: io.now, actor: cliActor(io) },
        ids,
      );
      for (const s of skipped)
        io.stderr.write(
          `docex-sync approve: not approved: ${db.get(s.id)?.path ?? `#${s.id}`}: ${s.reason}\n`,
        );
      const running = approved.length > 0 && db.daemonRunning();
      out(
        `${approved.length} file(s) approved${
          approved.length === 0
            ? '.'
            : running
              ? ': the running docex-sync moves them to the processed and output folders now.'
              : ': docex-sync is not running; it moves them to the processed and output folders when it next starts.'
        }`,
      );
    } finally {
      db.close();
    }
    return unknown(unmatched);
  },
};
