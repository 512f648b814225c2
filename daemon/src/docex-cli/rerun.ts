/** `docex rerun`: every matching document rerun in chunks of 500 (the flags as in docex-sync rerun). */
import { isOn, text } from '../common/args.ts';
import type { Command } from '../common/command.ts';
import { UsageError } from '../common/errors.ts';
import { EXIT } from '../common/exit-codes.ts';
import { RERUN_FLAGS } from '../common/flags.ts';

export const command: Command = {
  name: 'rerun',
  usage: `docex rerun [--template N] [--folder N] [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                   [--ids N,N,...] [--all] [--override] [--dry-run]`,
  description: `Reruns every document that matches (fetch_documents, then rerun_documents in chunks of 500).
Give a filter, --ids, or --all for every document of the account. --override reruns even documents
whose template did not change.`,
  flags: [...RERUN_FLAGS, { name: 'ids', value: 'N,N,...', help: 'these documents, instead of a filter' }],
  async run(options, io) {
    const number = (name: string) => {
      const v = text(options, name);
      if (v === undefined) return undefined;
      if (!/^\d+$/.test(v)) throw new UsageError(`--${name} must be a whole number`);
      return Number(v);
    };
    const filter = {
      template_id: number('template'),
      folder_id: number('folder'),
      start_date: text(options, 'from'),
      end_date: text(options, 'to'),
    };
    const given = Object.values(filter).some((v) => v !== undefined);
    const idsFlag = text(options, 'ids');
    if (!given && idsFlag === undefined && !isOn(options, 'all'))
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
