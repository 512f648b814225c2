/**
 * `docex <resource> <action>`: the commands made from the operation table (and the `upload`
 * shortcut), which docex.ts hands everything its table (table.ts) does not name; and the mapping of
 * every docex command's errors to a line and an exit code.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  DocexInputError,
  generalFieldsOf,
  lineItemsOf,
  type BinaryResult,
  type OperationName,
  type TaskResult,
} from '@docex/shared';
import { saveBinary } from '@docex/shared/node';
import type { Io } from '../common/command.ts';
import { ConfigError, UsageError } from '../common/errors.ts';
import { EXIT, exitCodeFor } from '../common/exit.ts';
import { columns } from '../common/help.ts';
import { booleanTest, extrasFor, inputOf, parseArgs } from './args.ts';
import {
  actionsOf,
  findOperationCommand,
  operationHelp,
  resourceHelp,
  RESOURCE_COMMANDS,
  type OperationCommand,
} from './commands.ts';
import { contextFor, type Context } from './context.ts';
import { json, render, table } from './output.ts';
import { PlanError } from './setup/plan.ts';
import { COMMANDS } from './table.ts';

async function writeBinary(ctx: Context, result: BinaryResult, output: string | undefined, fallback: string) {
  if (output === '-' || (output === undefined && !ctx.io.stdout.isTTY)) {
    for await (const chunk of result.body) {
      if (!ctx.io.stdout.write(chunk)) await new Promise((r) => ctx.io.stdout.once('drain', r));
    }
    return;
  }
  const path = resolve(output ?? result.fileName ?? fallback);
  if (output === undefined && existsSync(path)) {
    for await (const _ of result.body) break; // let go of the download
    throw new UsageError(`${path} exists already; choose another name with -o FILE`);
  }
  const bytes = await saveBinary(result, path);
  ctx.out(ctx.json ? json({ file: path, bytes }) : `Saved ${path} (${bytes} bytes)`);
}

const printResult = (ctx: Context, result: unknown, command: OperationCommand) => {
  if (result === undefined) {
    if (!ctx.json) ctx.out(`Done: ${command.spec.description.toLowerCase()}.`);
    return;
  }
  ctx.out(ctx.json ? json(result) : render(result));
};

/** A finished task for people: its file and status, then the extracted values and line items. */
function extracted(task: TaskResult): string {
  const ids = [
    task.document_id !== null && task.document_id !== undefined ? `document ${task.document_id}` : '',
    task.task_id ? `task ${task.task_id}` : '',
  ].filter(Boolean);
  const heading = `${task.document_name ?? task.task_id ?? 'upload'}: ${task.status}${ids.length ? ` (${ids.join(', ')})` : ''}${
    task.status !== 'DONE' && task.status_message ? `: ${task.status_message}` : ''
  }`;
  if (task.status !== 'DONE') return heading;
  const general = generalFieldsOf(task);
  const lines = lineItemsOf(task);
  const width = Math.max(0, ...general.map((f) => f.name.length));
  const show = (v: unknown) =>
    v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v);
  return [
    heading,
    ...(general.length
      ? general.map((f) => `  ${f.name.padEnd(width)}  ${show(f.value)}`)
      : ['  (no fields extracted)']),
    ...(lines.length
      ? [
          `  Line items (${lines.length}):`,
          ...table(
            lines.map((l) => Object.fromEntries(Object.entries(l).map(([k, v]) => [k, show(v.value)]))),
          )
            .split('\n')
            .map((l) => `    ${l}`),
        ]
      : []),
  ].join('\n');
}

async function runOperation(
  ctx: Context,
  command: OperationCommand,
  input: Record<string, unknown>,
  options: Record<string, string | boolean>,
) {
  const client = ctx.client();
  if (command.operation === 'upload_file' && options.wait === true) {
    const timeout = options.timeout === undefined ? undefined : Number(options.timeout);
    if (timeout !== undefined && !(timeout > 0))
      throw new UsageError(`--timeout takes seconds (got "${String(options.timeout)}")`);
    const { upload, tasks } = await client.uploadAndWait(input as never, {
      timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    });
    if (ctx.json) ctx.out(json({ task_ids: upload.task_ids, tasks }));
    else ctx.out(tasks.map(extracted).join('\n\n'));
    return tasks.every((t) => t.status === 'DONE') ? EXIT.ok : EXIT.failure;
  }
  const result = await client.call(command.operation as OperationName, input as never);
  if (command.spec.output === 'binary') {
    const id = input.document_id ?? input.task_id;
    const fallback = command.operation === 'fetch_files_batch' ? 'documents.zip' : `document-${String(id)}`;
    await writeBinary(ctx, result as BinaryResult, options.output as string | undefined, fallback);
  } else printResult(ctx, result, command);
  // A 200 whose body says the key is not valid is a refused key, as in docex-sync check.
  const refused = command.operation === 'check_api_key' && (result as { valid: boolean }).valid === false;
  return refused ? EXIT.auth : EXIT.ok;
}

async function dispatch(argv: string[], io: Io): Promise<number> {
  const [first = '', second] = argv;
  const words = first === 'upload' ? ['tasks', 'upload', ...argv.slice(1)] : argv;
  const found = findOperationCommand(words);
  if (!found) {
    if (RESOURCE_COMMANDS.includes(first)) {
      if (second === undefined || second === '--help' || second === '-h') {
        io.stdout.write(`${resourceHelp(first)}\n`);
        const own = COMMANDS.filter((row) => row.name.startsWith(`${first} `));
        if (own.length)
          io.stdout.write(
            `\nAlso:\n${columns(own.map((row) => [row.name.slice(first.length + 1), row.summary]))}\n\nRun "docex ${first} <action> --help" for their flags.\n`,
          );
        return second ? EXIT.ok : EXIT.usage;
      }
      const actions = [
        ...actionsOf(first).map((c) => c.action),
        ...COMMANDS.filter((row) => row.name.startsWith(`${first} `)).map((row) => row.name.split(' ')[1]),
      ];
      throw new UsageError(`docex ${first}: unknown action "${second}" (actions: ${actions.join(', ')})`);
    }
    throw new UsageError(`unknown command "${first}" (see docex --help)`);
  }
  const { command, used } = found;
  const extras = extrasFor(command);
  const parsed = parseArgs(words.slice(used), booleanTest(command, extras));
  if (parsed.flags.some((f) => f.name === 'help')) {
    const extra: Array<[string, string]> =
      command.operation === 'upload_file'
        ? [
            [
              '--wait',
              'wait for the tasks to finish and print their results (exit 1 when one did not end DONE)',
            ],
            ['--timeout SECONDS', 'with --wait: give up after this long (default 900)'],
          ]
        : [];
    io.stdout.write(`${operationHelp(command, extra)}\n`);
    return EXIT.ok;
  }
  const { input, options } = inputOf(command, parsed, extras);
  return runOperation(contextFor(io, { values: options, args: [] }), command, input, options);
}

export async function runDocex(argv: string[], io: Io): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    return failure(error, 'docex', io);
  }
}

/** A failed docex command: one line on stderr (the stack too with DOCEX_DEBUG), and its exit code. */
export function failure(error: unknown, where: string, io: Io): number {
  const message = error instanceof Error ? error.message : String(error);
  // Usage errors name their command ("docex rerun: ..."); others get the program's name.
  const prefix = error instanceof UsageError ? where : 'docex';
  io.stderr.write(message.startsWith('docex ') ? `${message}\n` : `${prefix}: ${message}\n`);
  if (io.env.DOCEX_DEBUG && error instanceof Error) io.stderr.write(`${error.stack}\n`);
  if (error instanceof UsageError || error instanceof DocexInputError || error instanceof ConfigError)
    return EXIT.usage;
  if (error instanceof PlanError) return EXIT.failure;
  return exitCodeFor(error);
}
