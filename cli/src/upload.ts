/**
 * `docex upload FILE...` (docs/decisions.md, "Fewer requests per document", docex upload): the files
 * are sized and checked before anything is sent, share upload_file requests as docex-sync's and the
 * n8n node's do (uploadMany, extractMany), and with --wait each file's outcome is printed under its
 * own name, in the order given.
 */
import { basename } from 'node:path';
import {
  generalFieldsOf,
  lineItemsOf,
  type DocexClient,
  type DocexError,
  type FileInput,
  type FileOutcome,
  type TaskResult,
} from '@docex/shared';
import { uploadableSize } from '@docex/shared/node';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { Context } from './context.ts';
import { json, render, table } from './output.ts';

/** What the command line says beside the files. */
export interface UploadOptions {
  /** Wait for the tasks (--wait), at most this many seconds (--timeout). */
  wait: boolean;
  timeout: string | undefined;
}

/**
 * A finished task for people: its file and status, then the extracted values and line items. The
 * file is the document's name, else the uploaded file's; the task id is said once.
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

const nameOf = (file: FileInput) =>
  file.fileName ?? ('path' in file ? basename(file.path) : 'upload');

/**
 * When no file was taken and all say the same, that is the command's failure (a refused key, no
 * service): it is thrown, so it is said once, with its hint and exit code, as a single request's.
 */
function commonFailure(errors: readonly (DocexError | undefined)[]): DocexError | undefined {
  const [first] = errors;
  if (!first || !errors.every((e) => e?.message === first.message)) return undefined;
  return first;
}

/** Uploads the files (several per request, within the batch limits) and, with --wait, waits for their tasks. */
export async function runUpload(
  ctx: Context,
  client: DocexClient,
  input: Record<string, unknown>,
  options: UploadOptions,
): Promise<number> {
  const timeout = options.timeout === undefined ? undefined : Number(options.timeout);
  if (options.wait && timeout !== undefined && !(timeout > 0))
    throw new UsageError(`--timeout takes seconds (got "${options.timeout}")`);
  const { files: given, ...rest } = input as { files?: FileInput[] } & Record<string, unknown>;
  // Sized and checked before the first request: a missing or empty file stops the command while
  // nothing is sent, whichever request would have carried it.
  const files: FileInput[] = [];
  for (const file of given ?? [])
    files.push('path' in file ? { ...file, size: await uploadableSize(file.path, 'upload_file') } : file);
  // Replacing one document's file (doc_id) is one request with what was given, as the API has it.
  const batch = rest.doc_id !== undefined ? { maxFiles: files.length, maxBytes: Infinity } : undefined;

  if (!options.wait) {
    const { sent, errors } = await client.uploadMany(files, rest, { batch });
    const failed = commonFailure(errors);
    if (failed && sent.length === 0) throw failed;
    const onlyAnswer = sent.length === 1 && errors.every((e) => e === undefined) ? sent[0]!.answer : undefined;
    const answer = onlyAnswer ?? {
      task_ids: sent.flatMap((s) => s.taskIds),
      uploads: sent.map((s) => ({ files: s.files.map((i) => nameOf(files[i]!)), task_ids: s.taskIds })),
      ...(errors.some(Boolean) && {
        not_sent: errors.flatMap((e, i) => (e ? [{ file: nameOf(files[i]!), error: e.message }] : [])),
      }),
    };
    ctx.out(ctx.json ? json(answer) : render(answer));
    return errors.some(Boolean) ? EXIT.failure : EXIT.ok;
  }

  const { files: outcomes } = await client.extractMany(files, rest, {
    batch,
    timeoutMs: timeout === undefined ? undefined : timeout * 1000,
    // One document listing a round pays for itself from two tasks on; one task is polled alone.
    listing: files.length > 1,
  });
  const errors = outcomes.map((o) => ('error' in o ? o.error : undefined));
  const failed = commonFailure(errors);
  if (failed) throw failed;
  const tasksOf = (o: FileOutcome) => ('results' in o ? o.results : []);
  if (ctx.json)
    ctx.out(
      json({
        task_ids: outcomes.flatMap((o) => ('taskIds' in o ? o.taskIds : [])),
        tasks: outcomes.flatMap(tasksOf),
        files: outcomes.map((o, i) => ({
          file: nameOf(files[i]!),
          ...('error' in o ? { error: o.error.message } : { task_ids: o.taskIds, tasks: o.results }),
        })),
      }),
    );
  else
    ctx.out(
      outcomes
        .flatMap((o, i) =>
          'error' in o
            ? [`${nameOf(files[i]!)}: not extracted: ${o.error.message}`]
            : o.results.map((task) => extracted(task, nameOf(files[i]!))),
        )
        .join('\n\n'),
    );
  const allDone = outcomes.every((o) => 'results' in o && o.results.every((t) => t.status === 'DONE'));
  return allDone ? EXIT.ok : EXIT.failure;
}
