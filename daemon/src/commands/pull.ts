/** `docex-sync pull`: one pull of the documents changed since the stored cursor. */
import type { Command } from '@docex/cli-kit/command';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'pull',
  usage: 'docex-sync pull --config FILE',
  description:
    'Writes the data of documents changed since the last pull into pull.output; moves the cursor on success.',
  flags: [],
  async run(options, io) {
    const [{ open }, { StateDb }, { pullOnce }, { progressBar }] = await Promise.all([
      import('./context.ts'),
      import('../store/state.ts'),
      import('../jobs/pull.ts'),
      import('../common/progressbar.ts'),
    ]);
    const ctx = open(options, io);
    const { config } = ctx;
    const log = ctx.logger(config);
    const client = ctx.client(config, log);
    const db = new StateDb(config.state_db);
    const bar = progressBar(io.stderr, 'pull documents');
    try {
      const r = await pullOnce({ db, client, config, log }, { progress: bar.update });
      ctx.out(
        `Pulled ${r.documents} document(s) changed since ${r.since.toISOString()} into ${config.pull!.output}.`,
      );
    } finally {
      bar.finish();
      db.close();
    }
    return EXIT.ok;
  },
};
