/**
 * The rows the operation table adds to docex's table (docex.ts, `moreCommands`), and the main help
 * that lists them beside docex's own commands. This module registers: it imports the pure table
 * (commands.ts) and docex's own rows (table.ts), and loads an operation's Command
 * (operation-command.ts) when it runs; none of them imports it back.
 */
import type { CommandRow } from '@docex/cli-kit/command';
import { columns as pad } from '@docex/cli-kit/help';
import {
  actionsOf,
  COMMON_FLAGS,
  OPERATION_COMMANDS,
  RESOURCE_COMMANDS,
  type OperationCommand,
} from './commands.ts';
import { COMMANDS } from './table.ts';

const operationRow = (name: string, command: OperationCommand): CommandRow => ({
  name,
  summary: command.spec.description,
  load: async () => (await import('./operation-command.ts')).operationCommand(command, name),
});

/**
 * The rows the operation table adds to docex's table (docex.ts, `moreCommands`): `<resource>
 * <action>` and the API name of each operation, the `upload` shortcut, and each resource alone (its
 * actions). docex's own rows come first, so its `templates list` is the one that runs.
 */
export const OPERATION_ROWS: readonly CommandRow[] = [
  ...OPERATION_COMMANDS.map((c) => operationRow(`${c.resource} ${c.action}`, c)),
  ...OPERATION_COMMANDS.map((c) => operationRow(c.operation, c)),
  operationRow(
    'upload',
    OPERATION_COMMANDS.find((c) => c.operation === 'upload_file')!,
  ),
  ...RESOURCE_COMMANDS.map((resource) => ({
    name: resource,
    summary: `the actions on ${resource}`,
    load: async () => (await import('./operation-command.ts')).resourceIndex(resource, COMMANDS),
  })),
];

/** The main help's "Commands": the upload shortcut, docex's own commands (table.ts), version. */
export const EXTRA_COMMANDS: ReadonlyArray<readonly [string, string]> = [
  ['upload FILE... [--template N | --folder N] [--wait]', 'upload files; --wait waits for the results'],
  ...COMMANDS.map((row) => [row.name, row.summary] as const),
  ['version, --version, -v', 'print the version'],
];

export function mainHelp(): string {
  const resources = RESOURCE_COMMANDS.map(
    (r) =>
      [
        r,
        actionsOf(r)
          .map((c) => c.action)
          .join(', '),
      ] as const,
  );
  return `docex — every operation of the Document Extraction Service from the shell.

Usage: docex <resource> <action> [ARGS] [--param value ...]
       docex <command> [ARGS] [flags]

Resources and their actions:
${pad(resources)}

Commands:
${pad(EXTRA_COMMANDS)}

Global flags:
${pad(COMMON_FLAGS)}

Tables on a terminal, JSON when piped or with --json. The API key comes from DOCEX_API_KEY or the
profile's api_key_file; the base URL from the profile's base_url or DOCEX_BASE_URL.
Exit codes: 0 ok, 1 failure, 2 bad usage or config, 3 API key refused, 4 service unreachable,
7 host name not resolved, 8 connection refused, 9 proxy unreachable or refusing,
10 proxy authentication required, 11 certificate from an unknown issuer,
12 certificate name mismatch, 13 certificate expired.
Run "docex <resource> <action> --help" for an action's flags.`;
}
