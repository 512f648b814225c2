/**
 * The work of an operation's command (operation-command.ts): the call through the account's client,
 * and its answer printed: JSON or a table, a download saved or piped, an upload's extracted values.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ApiKeyCheck, BinaryResult, OperationName } from '@docex/shared';
import { saveBinary } from '@docex/shared/node';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { OperationCommand } from './commands.ts';
import type { Context } from './context.ts';
import { json, render } from './output.ts';
import { runUpload } from './upload.ts';

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

/**
 * check_api_key for people: whether the key is valid, then what else the service said, once (the
 * answer as sent repeats `valid`).
 */
function keyCheck(answer: ApiKeyCheck): Record<string, unknown> {
  const raw = answer.details;
  const said = raw && typeof raw === 'object' && !Array.isArray(raw) ? Object.entries(raw) : [];
  return { valid: answer.valid, ...Object.fromEntries(said.filter(([key]) => key !== 'valid')) };
}

const printResult = (ctx: Context, result: unknown, command: OperationCommand) => {
  if (result === undefined) {
    if (!ctx.json) ctx.out(`Done: ${command.spec.description.toLowerCase()}.`);
    return;
  }
  if (ctx.json) ctx.out(json(result));
  else ctx.out(render(command.operation === 'check_api_key' ? keyCheck(result as ApiKeyCheck) : result));
};

/** What the command line says beside the operation's input. */
export interface RunOptions {
  /** upload: wait for the tasks (--wait), at most this many seconds (--timeout). */
  wait: boolean;
  timeout: string | undefined;
  /** A download's file (-o; - for stdout). */
  output: string | undefined;
}

/** Calls the operation and prints its answer; the exit code says how it ended. */
export async function runOperation(
  ctx: Context,
  command: OperationCommand,
  input: Record<string, unknown>,
  options: RunOptions,
): Promise<number> {
  const client = ctx.client();
  if (command.operation === 'upload_file') return runUpload(ctx, client, input, options);
  const result = await client.call(command.operation as OperationName, input as never);
  if (command.spec.output === 'binary') {
    const id = input.document_id ?? input.task_id;
    const fallback = command.operation === 'fetch_files_batch' ? 'documents.zip' : `document-${String(id)}`;
    await writeBinary(ctx, result as BinaryResult, options.output, fallback);
  } else printResult(ctx, result, command);
  // A 200 whose body says the key is not valid is a refused key, as in docex-sync check.
  const refused = command.operation === 'check_api_key' && (result as { valid: boolean }).valid === false;
  return refused ? EXIT.auth : EXIT.ok;
}
