/** `docex-sync rerun`: a one-off bulk rerun, every flag checked before the first call. */
import { isOn } from '@docex/cli-kit/args';
import type { Command, Io } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { RERUN_FLAGS } from '@docex/cli-kit/flags';
import { rerunSelection, selectsEverything } from '@docex/cli-kit/rerun-flags';
import type { SyncIo } from './io.ts';

/** A rerun without any filter reruns the whole company: only with --all or a yes on a terminal. */
async function confirmWholeCompany(all: boolean, io: Io): Promise<boolean> {
  if (all) return true;
  const stdin = io.stdin ?? process.stdin;
  if (!stdin.isTTY || !io.stderr.isTTY)
    throw new UsageError(
      'no filter given: this would rerun every document of the company; add --all to mean it, or filter with --template, --folder, --from, --to',
    );
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: stdin, output: io.stderr });
  try {
    const answer = await rl.question(
      'No filter given: rerun EVERY document of the company? Type "yes" to go on: ',
    );
    return answer.trim().toLowerCase() === 'yes';
  } finally {
    rl.close();
  }
}

export const command: Command<SyncIo> = {
  name: 'rerun',
  usage:
    'docex-sync rerun --config FILE [--template N] [--folder N] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--override] [--dry-run] [--all]',
  description: `Gathers document ids with fetch_documents and reruns them in chunks of 500.
Without any filter, every document of the company is rerun: that needs --all (or a yes on a terminal).
The service decides which documents are eligible; --override reruns documents it would otherwise skip.`,
  flags: RERUN_FLAGS,
  async run(options, io) {
    // Everything the flags say is checked before the first call (the kit's one parser, as docex's).
    const selection = rerunSelection(options);
    const filters = {
      template_id: selection.template_id,
      folder_id: selection.folder_id,
      created_from: selection.from,
      created_to: selection.to,
    };
    const [override, dryRun] = [isOn(options, 'override'), isOn(options, 'dry-run')];
    const unfiltered = selectsEverything(selection);
    const [{ open }, { StateDb }, { createNotifier }, { runRerun }, { progressBar }] = await Promise.all([
      import('./context.ts'),
      import('../store/state.ts'),
      import('../outputs/notify.ts'),
      import('../jobs/reruns.ts'),
      import('../common/progressbar.ts'),
    ]);
    const ctx = open(options, io);
    const { config } = ctx;
    if (unfiltered && !dryRun && !(await confirmWholeCompany(isOn(options, 'all'), io))) {
      io.stderr.write('docex-sync rerun: not confirmed; nothing was sent.\n');
      return EXIT.failure;
    }
    const log = ctx.logger(config);
    const client = ctx.client(config, log);
    const db = new StateDb(config.state_db);
    const notify = createNotifier(config, log);
    log.info({ ...filters }, 'rerun: gathering the ids of the matching documents (fetch_documents)');
    const bar = progressBar(io.stderr, 'rerun chunks');
    try {
      const r = await runRerun(
        { db, client, log, config, notify, progress: bar.update },
        { name: 'cli', ...filters, override, dry_run: dryRun },
      );
      if (dryRun) {
        ctx.out(
          `Dry run: ${r.documents} document(s) match the filters; nothing was sent. The service decides which of them it reruns${override ? ' (with --override, also documents it would otherwise skip)' : ': without --override, only documents whose fields, instructions or template changed since their last extraction'}, so the real run may rerun fewer.`,
        );
        return EXIT.ok;
      }
      ctx.out(
        `Rerun: ${r.rerun} dispatched, ${r.not_rerun} not rerun, of ${r.documents} document(s).${
          r.refresh
            ? ` Results of ${r.refresh.files} local file(s): ${r.refresh.rewritten} rewritten, ${r.refresh.unchanged} unchanged, ${r.refresh.not_seen} not seen changed.`
            : ''
        }`,
      );
      if (r.rerun === 0 && r.not_rerun > 0 && !override)
        io.stderr.write(
          `docex-sync rerun: the service reran none of the ${r.not_rerun} document(s): it reruns a document only when a field, an instruction or the template changed since its last extraction; add --override to rerun them anyway.\n`,
        );
      return r.status === 'failed' ? EXIT.failure : EXIT.ok;
    } finally {
      bar.finish();
      await notify?.close();
      db.close();
    }
  },
};
