/** `docex templates list`: every template of the account (or of one folder) as one table. */
import { text } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';

/** A whole number given on the command line, or a usage mistake naming it. */
export function wholeNumber(value: string, what: string): number {
  if (!/^\d+$/.test(value)) throw new UsageError(`${what} must be a whole number (got "${value}")`);
  return Number(value);
}

export const command: Command = {
  name: 'templates list',
  usage: 'docex templates list [--folder N]',
  description: 'Lists every template of the account (or of folder N): id, name, folder, description.',
  flags: [{ name: 'folder', value: 'N', help: 'only the templates of folder N' }],
  async run(options, io) {
    const given = text(options, 'folder');
    const folder = given === undefined ? undefined : wholeNumber(given, '--folder');
    const [{ contextFor }, { json, table }, { readAccount }] = await Promise.all([
      import('./context.ts'),
      import('./output.ts'),
      import('./setup/remote.ts'),
    ]);
    const ctx = contextFor(io, options);
    const account = await readAccount(ctx.client(), { folders: new Set() });
    const folders = account.folders.filter((f) => folder === undefined || f.id === folder);
    if (folder !== undefined && folders.length === 0) throw new UsageError(`no folder ${folder}`);
    const rows = folders.flatMap((f) =>
      f.templates.map((t) => ({ id: t.id, name: t.name, folder_id: f.id, folder: f.name })),
    );
    ctx.out(ctx.json ? json(rows) : table(rows));
    return EXIT.ok;
  },
};
