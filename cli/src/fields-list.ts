/** `docex fields list`: a template's fields in display order, as one table. */
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { wholeNumber } from './templates-list.ts';

export const command: Command = {
  name: 'fields list',
  usage: 'docex fields list TEMPLATE_ID',
  description:
    'Lists the fields of a template in display order: id, name, type, format, position, description.',
  flags: [],
  maxArgs: 1,
  async run(options, io) {
    const [id] = options.args;
    if (id === undefined) throw new UsageError('give one TEMPLATE_ID (see docex fields list --help)');
    const templateId = wholeNumber(id, 'TEMPLATE_ID');
    const [{ contextFor }, { json, table }] = await Promise.all([
      import('./context.ts'),
      import('./output.ts'),
    ]);
    const ctx = contextFor(io, options);
    const client = ctx.client();
    const template = await client.fetchTemplate({ template_id: templateId });
    const fields = await Promise.all(
      (template.field_ids ?? []).map((field_id) => client.fetchField({ field_id })),
    );
    const rows = fields
      .sort((a, b) => (a.position ?? Infinity) - (b.position ?? Infinity) || a.id - b.id)
      .map((f) => ({
        id: f.id,
        name: f.name,
        type: f.type,
        format: f.format,
        position: f.position,
        desc: f.desc,
      }));
    ctx.out(ctx.json ? json(rows) : table(rows));
    return EXIT.ok;
  },
};
