/** `docex-sync reject`: documents waiting for review, named by id or path, sent to the failed folder with a reason. */
import { text } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
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
    const [
      { open },
      { cliActor },
      { existsSync },
      { namedIds },
      { basename },
      { StateDb },
      { rejectReviewed },
    ] = await Promise.all([
      import('./context.ts'),
      import('./actor.ts'),
      import('node:fs'),
      import('./named-files.ts'),
      import('node:path'),
      import('../store/state.ts'),
      import('../actions/reject.ts'),
    ]);
    const { config, out } = open(options, io);
    const unknown = (missing: string[]) => {
      for (const name of missing)
        io.stderr.write(
          `docex-sync reject: ${name}: no file waiting for review has this id, name, path or pattern (docex-sync review list shows them)\n`,
        );
      return missing.length > 0 ? EXIT.usage : EXIT.ok;
    };
    if (!existsSync(config.state_db)) {
      out('0 file(s) rejected: there is no state DB yet.');
      return unknown(names);
    }
    const db = new StateDb(config.state_db);
    try {
      const waiting = db.inReview(1_000_000);
      // An id (12 or #12) names the row; any other word is a name, path or pattern.
      const isId = (n: string) =>
        /^#?\d+$/.test(n) && waiting.some((r) => r.id === Number(n.replace('#', '')));
      const byId = names.filter(isId).map((n) => Number(n.replace('#', '')));
      const { ids, unmatched } = namedIds(
        waiting,
        names.filter((n) => !isId(n)),
        (r) => (r.review_path === null ? [] : [[r.review_path, basename(r.review_path)]]),
      );
      const which = [...new Set([...byId, ...ids])];
      const { rejected, skipped } = await rejectReviewed(
        { db, config, now: io.now, actor: cliActor(io) },
        which,
        reason,
      );
      for (const s of skipped)
        io.stderr.write(
          `docex-sync reject: not rejected: ${db.get(s.id)?.path ?? `#${s.id}`}: ${s.reason}\n`,
        );
      const running = rejected.length > 0 && db.daemonRunning();
      out(
        `${rejected.length} file(s) rejected${
          rejected.length === 0
            ? '.'
            : running
              ? ': the running docex-sync moves them to the failed folder now.'
              : ': docex-sync is not running; it moves them to the failed folder when it next starts.'
        }`,
      );
      return unknown(unmatched);
    } finally {
      db.close();
    }
  },
};
