/**
 * `docex completion bash|zsh`: a shell completion script made from the command table, which the
 * table hands in (table.ts registers this command: it does not import the table back).
 */
import type { Command, CommandRow } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';

export const completionCommand = (rows: readonly CommandRow[]): Command => ({
  name: 'completion',
  usage: 'docex completion bash|zsh',
  description: 'Prints a completion script; load it with: source <(docex completion bash)',
  flags: [],
  maxArgs: 1,
  async run(options, io) {
    const [shell] = options.args;
    if (shell !== 'bash' && shell !== 'zsh') throw new UsageError('give bash or zsh');
    const { completionScript } = await import('./completion-script.ts');
    io.stdout.write(completionScript(shell, await Promise.all(rows.map((row) => row.load()))));
    return EXIT.ok;
  },
});
