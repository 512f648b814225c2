/** `docex templates export`: the account's folders, templates, fields and instructions as YAML. */
import { text, texts } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';

export const command: Command = {
  name: 'templates export',
  usage: 'docex templates export [--folder NAME ...] [-o FILE]',
  description: `Writes folders, templates (with locales), fields and instructions as YAML, in a stable order and
without server ids. --folder (repeatable) keeps only those folders and their templates.`,
  flags: [
    {
      name: 'folder',
      value: 'NAME',
      help: 'only this folder and its templates (repeatable)',
      repeatable: true,
    },
    { name: 'output', short: 'o', value: 'FILE', help: 'write the YAML there (default: stdout)' },
  ],
  async run(options, io) {
    const [{ writeFile }, { contextFor }, { readAccount }, { setupToYaml, toSetup }] = await Promise.all([
      import('node:fs/promises'),
      import('./context.ts'),
      import('./setup/remote.ts'),
      import('./setup/model.ts'),
    ]);
    const ctx = contextFor(io, options);
    const folders = texts(options, 'folder');
    const scope = folders.length ? new Set(folders) : undefined;
    const account = await readAccount(ctx.client(), { folders: scope });
    const missing = folders.filter((f) => !account.folders.some((a) => a.name === f));
    if (missing.length) throw new UsageError(`no folder named ${missing.map((m) => `"${m}"`).join(', ')}`);
    const yaml = setupToYaml(toSetup(account, scope));
    const output = text(options, 'output');
    if (output !== undefined && output !== '-') await writeFile(output, yaml);
    else io.stdout.write(yaml);
    return EXIT.ok;
  },
};
