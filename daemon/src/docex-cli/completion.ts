/** `docex completion bash|zsh`: a shell completion script made from the command table. */
import type { Command } from '../common/command.ts';
import { UsageError } from '../common/errors.ts';
import { EXIT } from '../common/exit-codes.ts';

export const command: Command = {
  name: 'completion',
  usage: 'docex completion bash|zsh',
  description: 'Prints a completion script; load it with: source <(docex completion bash)',
  flags: [],
  maxArgs: 1,
  async run(options, io) {
    const [shell] = options.args;
    if (shell !== 'bash' && shell !== 'zsh') throw new UsageError('give bash or zsh');
    const [{ completionScript }, { COMMANDS }] = await Promise.all([
      import('./completion-script.ts'),
      import('./table.ts'),
    ]);
    io.stdout.write(completionScript(shell, await Promise.all(COMMANDS.map((row) => row.load()))));
    return EXIT.ok;
  },
};
