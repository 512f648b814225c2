/** `docex rerun`: every matching document rerun in chunks of 500 (the flags as in docex-sync rerun). */
import { isOn, text } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { RERUN_FLAGS } from '@docex/cli-kit/flags';
import { rerunSelection, selectsEverything } from '@docex/cli-kit/rerun-flags';

export const command: Command = {
  name: 'rerun',
  usage: `docex rerun [--template N] [--folder N] [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                   [--ids N,N,...] [--all] [--override] [--dry-run]`,
  description: `Reruns every document that matches (fetch_documents, then rerun_documents in chunks of 500).
Give a filter, --ids, or --all for every document of the account. --override reruns even documents
whose template did not change.`,
  flags: [...RERUN_FLAGS, { name: 'ids', value: 'N,N,...', help: 'these documents, instead of a filter' }],
  async run(options, io) {
    // The same checks as docex-sync rerun, all before the first call.
    const selection = rerunSelection(options);
    const filter = {
      template_id: selection.template_id,
      folder_id: selection.folder_id,
      start_date: selection.from,
      end_date: selection.to,
    };
    const idsFlag = text(options, 'ids');
    if (selectsEverything(selection) && idsFlag === undefined && !isOn(options, 'all'))
      throw new UsageError('give --template, --folder, --from/--to or --ids (or --all for every document)');
    const [{ contextFor }, { json, table }] = await Promise.all([
      import('./context.ts'),
      import('./output.ts'),
    ]);
    const ctx = contextFor(io, options);
    const client = ctx.client();
    const ids =
      idsFlag !== undefined
        ? idsFlag.split(',').map((s) => {
            if (!/^\d+$/.test(s.trim())) throw new UsageError(`--ids takes whole numbers (got "${s}")`);
            return Number(s);
          })
        : await client.fetchDocuments(filter);
    if (isOn(options, 'dry-run')) {
      ctx.out(
        ctx.json
          ? json({ documents: ids.length, doc_ids: ids })
          : `Dry run: ${ids.length} document(s) would be rerun.`,
      );
      return EXIT.ok;
    }
    const r = ids.length
      ? await client.rerunAll(ids, { override_extraction: isOn(options, 'override') })
      : undefined;
    const report = {
      documents: ids.length,
      rerun: r?.rerun ?? 0,
      not_rerun: r?.not_rerun ?? 0,
      rerun_doc_ids: r?.rerun_doc_ids ?? [],
      errors: r?.errors ?? [],
      failed_chunks: r?.failedChunks.map((c) => ({ doc_ids: c.doc_ids, error: c.error.message })) ?? [],
    };
    if (ctx.json) ctx.out(json(report));
    else {
      ctx.out(
        `Rerun: ${report.rerun} dispatched, ${report.not_rerun} not rerun, of ${report.documents} document(s).`,
      );
      if (report.errors.length)
        ctx.out(table(report.errors.map((e) => ({ id: e.id, code: e.error_code, message: e.message }))));
      for (const c of report.failed_chunks)
        io.stderr.write(`docex rerun: ${c.doc_ids.length} document(s) not sent: ${c.error}\n`);
    }
    return report.failed_chunks.length ? EXIT.failure : EXIT.ok;
  },
};
