/**
 * The work of an operation's command (operation-command.ts): the call through the account's client,
 * and its answer printed: JSON or a table, a download saved or piped, an upload's extracted values.
 */
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import {
  generalFieldsOf,
  lineItemsOf,
  type ApiKeyCheck,
  type BinaryResult,
  type OperationName,
  type TaskResult,
} from '@docex/shared';
import { saveBinary } from '@docex/shared/node';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { OperationCommand } from './commands.ts';
import type { Context } from './context.ts';
import { json, render, table } from './output.ts';

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

/** The name of the one file uploaded (its tasks are that file's), else undefined. */
function onlyFileName(input: Record<string, unknown>): string | undefined {
  const files = Array.isArray(input.files)
    ? (input.files as Array<{ path?: string; fileName?: string }>)
    : [];
  const [file] = files;
  if (files.length !== 1 || !file) return undefined;
  return file.fileName ?? (file.path ? basename(file.path) : undefined);
}

/**
 * A finished task for people: its file and status, then the extracted values and line items. The
 * file is the document's name, else the uploaded file's when there was one; the task id is said once.
 */
function extracted(task: TaskResult, fileName: string | undefined): string {
  const ids = [
    task.document_id !== null && task.document_id !== undefined ? `document ${task.document_id}` : '',
    task.task_id ? `task ${task.task_id}` : '',
  ].filter(Boolean);
  const name = task.document_name ?? fileName;
  const heading = `${name ?? (task.task_id ? `task ${task.task_id}` : 'upload')}: ${task.status}${
    name && ids.length ? ` (${ids.join(', ')})` : !name && ids.length > 1 ? ` (${ids[0]})` : ''
  }${task.status !== 'DONE' && task.status_message ? `: ${task.status_message}` : ''}`;
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
  if (command.operation === 'upload_file' && options.wait) {
    const timeout = options.timeout === undefined ? undefined : Number(options.timeout);
    if (timeout !== undefined && !(timeout > 0))
      throw new UsageError(`--timeout takes seconds (got "${options.timeout}")`);
    const { upload, tasks } = await client.uploadAndWait(input as never, {
      timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    });
    if (ctx.json) ctx.out(json({ task_ids: upload.task_ids, tasks }));
    else ctx.out(tasks.map((task) => extracted(task, onlyFileName(input))).join('\n\n'));
    return tasks.every((t) => t.status === 'DONE') ? EXIT.ok : EXIT.failure;
  }
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
