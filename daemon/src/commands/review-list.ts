/** `docex-sync review list`: the documents waiting for a person's approval, with why and since when. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { JSON_FLAG } from '@docex/cli-kit/flags';
import type { SyncIo } from './io.ts';

/** `--json`'s schema name: a script can check it, as with `status --json` (docs/daemon.md). */
export const REVIEW_LIST_SCHEMA = 'docex-sync.review-list/1';

export const command: Command<SyncIo> = {
  name: 'review list',
  usage: 'docex-sync review list --config FILE [--json]',
  description: `The documents a review rule held, oldest first: the file as found, its watch and route, since when it
waits, where its original waits (review_dir) and each rule that held it. Approve them with
docex-sync approve (or Approve on the status page). --json: the schema in docs/daemon.md.`,
  flags: [JSON_FLAG],
  async run(options, io) {
    const [{ open }, { existsSync }, { StateDb }, { reviewEntry }] = await Promise.all([
      import('./context.ts'),
      import('node:fs'),
      import('../store/state.ts'),
      import('../status/read-model.ts'),
    ]);
    const { config, out } = open(options, io);
    const exists = existsSync(config.state_db);
    let files: ReturnType<typeof reviewEntry>[] = [];
    if (exists) {
      const db = new StateDb(config.state_db);
      try {
        files = db.fileCounts.inReview(1_000_000).map(reviewEntry);
      } finally {
        db.close();
      }
    }
    if (isOn(options, 'json')) {
      out(JSON.stringify({ schema: REVIEW_LIST_SCHEMA, total: files.length, files }, null, 2));
      return EXIT.ok;
    }
    if (files.length === 0) {
      out(
        exists ? 'No document waits for review.' : 'No document waits for review: there is no state DB yet.',
      );
      return EXIT.ok;
    }
    const lines = [`${files.length} document(s) wait for review, oldest first:`];
    for (const f of files) {
      lines.push(
        `${f.file}`,
        `  watch ${f.watch}${f.route === null ? '' : `, route ${f.route}`}; waiting since ${f.since} in ${f.original}`,
        ...(f.reasons.length ? f.reasons : ['no reason recorded']).map((r) => `  held by: ${r}`),
      );
    }
    lines.push('Approve them with: docex-sync approve --config FILE NAME_OR_PATTERN ... (or --all)');
    out(lines.join('\n'));
    return EXIT.ok;
  },
};
