/**
 * The one Command of every operation of the table (`docex <resource> <action>`, its API name, the
 * `upload` shortcut), made from the operation's spec, and the Command of a resource alone (its
 * actions). Reached through docex's table like every other command (operation-rows.ts registers it);
 * its work (client, output) is imported when it runs, so its --help loads only the operation table.
 */
import { text } from '@docex/cli-kit/args';
import { write, type Command, type CommandRow } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { columns } from '@docex/cli-kit/help';
import {
  actionsOf,
  flagsOf,
  operationHelp,
  resourceHelp,
  usageOf,
  type OperationCommand,
} from './commands.ts';
import { inputOf } from './operation-input.ts';

/** `name`: the words that ran it ("folders list", "fetch_all_folders", "upload"). */
export function operationCommand(operation: OperationCommand, name: string): Command {
  const where = `docex ${name}`;
  return {
    name,
    usage: usageOf(operation),
    description: operation.spec.description,
    flags: flagsOf(operation),
    // inputOf takes the positional words a parameter's flag left free, and refuses the rest.
    maxArgs: Infinity,
    help: () => operationHelp(operation),
    async run(options, io) {
      const input = inputOf(operation, options, where);
      const timeout = text(options, 'timeout');
      const [{ contextFor }, { runOperation }] = await Promise.all([
        import('./context.ts'),
        import('./operation-run.ts'),
      ]);
      return runOperation(contextFor(io, options), operation, input, {
        wait: options.values.wait === true,
        timeout,
        output: text(options, 'output'),
      });
    },
  };
}

/**
 * `docex folders`: the resource's actions (exit 2 without --help), and a mistaken action named.
 * `ownRows`: docex's own commands (table.ts), given by the module that registers this one.
 */
export function resourceIndex(resource: string, ownRows: readonly CommandRow[]): Command {
  const own = ownRows.filter((row) => row.name.startsWith(`${resource} `));
  const also = own.length
    ? `\n\nAlso:\n${columns(own.map((row) => [row.name.slice(resource.length + 1), row.summary]))}\n\nRun "docex ${resource} <action> --help" for their flags.`
    : '';
  const help = `${resourceHelp(resource)}${also}`;
  return {
    name: resource,
    usage: `docex ${resource} <action> [flags]`,
    description: `The actions on ${resource}.`,
    flags: [],
    maxArgs: 1,
    help: () => help,
    async run(options, io) {
      const [action] = options.args;
      if (action === undefined) {
        write(io, help);
        return EXIT.usage;
      }
      const actions = [
        ...actionsOf(resource).map((c) => c.action),
        ...own.map((row) => row.name.split(' ')[1]),
      ];
      throw new UsageError(`docex ${resource}: unknown action "${action}" (actions: ${actions.join(', ')})`);
    },
  };
}
