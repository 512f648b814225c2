/**
 * Extract (the node's default operation): upload the input items' binary file(s) with upload_file,
 * wait for every file's task and put out one item per file, paired with its input item. The items
 * of one execution share their uploads and polls (runAll, the core's extractMany).
 *
 * - Simplify (on by default) gives each file's data as plain values (simplify.ts); when the task
 *   result carries no fields, they are read with fetch_document_data. Off: the task result as sent.
 * - A file whose extraction FAILED, or that is a DUPLICATE of a document the service already holds,
 *   fails the item with the file name, status and the service's message, unless Continue On Fail is
 *   on (then it is an item with `status` and `error`) or duplicates are accepted (then the item
 *   describes the existing document, with `status: "DUPLICATE"`).
 * - The file comes from a binary field, a URL or base64 text (sources.ts); Route for Review sends
 *   the items that break a review rule to the second output (review.ts).
 */
import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeProperties,
} from 'n8n-workflow';
import { fileNameOf, type DocexClient, type FileInput, type InputOf, type WaitResult } from '@docex/shared';
import { jsonItem } from '../common.execute.ts';
import type { BatchRunner, ItemEnd, Runner } from '../node.type.ts';
import { itemRules, markForReview, reasonsFor, routing } from '../review.ts';
import { hasFields, INCLUDE_CONFIDENCE, SIMPLIFY, simplifyDocument } from '../simplify.ts';

export const properties: INodeProperties[] = [SIMPLIFY];

export const options: INodeProperties[] = [
  {
    displayName: 'Accept Duplicates',
    name: 'acceptDuplicates',
    type: 'boolean',
    default: false,
    description:
      'Whether a file the service already holds (status DUPLICATE) counts as a success; its item then describes the existing document',
  },
  {
    displayName: 'Poll Interval (Seconds)',
    name: 'pollInterval',
    type: 'number',
    typeOptions: { minValue: 0.1 },
    default: 2,
    description: 'First pause between two status checks; it grows by half each time, up to 15 seconds',
  },
  {
    displayName: 'Timeout (Seconds)',
    name: 'waitTimeout',
    type: 'number',
    typeOptions: { minValue: 1 },
    default: 600,
    description:
      'How long to wait for all files of the item to be extracted before failing. The wait holds the execution (and in queue mode a worker); for long extractions use Task > Upload without waiting and the Document Extraction Trigger instead (docs: "Long extractions").',
  },
  INCLUDE_CONFIDENCE,
];

const describe = (t: WaitResult, fileName: string | undefined) =>
  `${t.document_name ?? fileName ?? t.task_id ?? 'file'}: ${t.status}${t.status_message ? ` (${t.status_message})` : ''}`;

/** A finished file's task result with its fields, read from the document when the task has none. */
async function withFields(client: DocexClient, task: WaitResult) {
  return hasFields(task) || typeof task.document_id !== 'number'
    ? task
    : { ...task, ...(await client.fetchDocumentData({ document_id: task.document_id })) };
}

interface ExtractSettings {
  simplify: boolean;
  timeoutMs: number;
  intervalMs: number;
  acceptDuplicates: boolean;
  includeConfidence: boolean;
}

function settingsOf(ctx: IExecuteFunctions, i: number): ExtractSettings {
  const opts = ctx.getNodeParameter('options', i, {}) as IDataObject;
  return {
    simplify: ctx.getNodeParameter('simplify', i, true) === true,
    timeoutMs: Math.round(Number(opts.waitTimeout ?? 600) * 1000),
    intervalMs: Math.round(Number(opts.pollInterval ?? 2) * 1000),
    acceptDuplicates: opts.acceptDuplicates === true,
    includeConfidence: opts.includeConfidence === true,
  };
}

/** One item's output items from its files' final task results (one per file, in the order sent). */
async function itemsOf(
  ctx: IExecuteFunctions,
  client: DocexClient,
  i: number,
  files: FileInput[],
  tasks: WaitResult[],
  settings: ExtractSettings,
) {
  const { simplify, acceptDuplicates, includeConfidence } = settings;
  const rules = routing(ctx) ? itemRules(ctx, i) : undefined;
  // One task per file, in the order sent: a failed task has no document name, the file has.
  const nameOf = (t: WaitResult) =>
    tasks.length === files.length ? fileNameOf(files[tasks.indexOf(t)]) : undefined;
  const failed = tasks.filter(
    (t) => !(t.status === 'DONE' || (acceptDuplicates && t.status === 'DUPLICATE')),
  );
  if (failed.length > 0 && !ctx.continueOnFail()) {
    const done = tasks.length - failed.length;
    throw new NodeOperationError(
      ctx.getNode(),
      `Extraction did not succeed for ${failed.length} of ${tasks.length} file(s): ${failed.map((t) => describe(t, nameOf(t))).join('; ')}`,
      {
        itemIndex: i,
        description:
          `${done} file(s) of this item were extracted. FAILED: the service could not extract the file. ` +
          'DUPLICATE: the service already holds this file (turn on "Accept Duplicates" to use the existing document). ' +
          'Turn on "Continue On Fail" to get every file as an item, with an error field on those that did not succeed.',
      },
    );
  }
  const items = [];
  for (const task of tasks) {
    // A multi-file upload's children come out as items of their own: not repeated inside this one.
    const result = { ...task };
    delete result.children;
    if (failed.includes(task)) {
      const error = `Extraction ${task.status}: ${describe(task, nameOf(task))}`;
      const json = simplify
        ? {
            document_id: task.document_id ?? null,
            document_name: task.document_name ?? nameOf(task) ?? null,
            status: task.status,
            error,
          }
        : { ...result, error };
      items.push(jsonItem(i, json));
    } else {
      const data = simplify || rules ? await withFields(client, task) : task;
      let json = result as IDataObject;
      if (simplify) {
        json = simplifyDocument(data, { includeConfidence });
        if (task.status !== 'DONE') json.status = task.status;
      }
      const item = jsonItem(i, json);
      items.push(rules ? markForReview(item, reasonsFor(data, rules)) : item);
    }
  }
  return items;
}

/** One item alone: its files in one upload, its tasks waited for (uploadAndWait). */
export const run: Runner = async (ctx, client, i, input) => {
  const settings = settingsOf(ctx, i);
  const { tasks } = await client.uploadAndWait(input as InputOf<'upload_file'>, {
    timeoutMs: settings.timeoutMs,
    intervalMs: settings.intervalMs,
  });
  return itemsOf(ctx, client, i, input.files as FileInput[], tasks, settings);
};

/**
 * All items of the execution together (docs/decisions.md, "Fewer requests per document"): the
 * files of items with the same upload parameters and wait options share uploads (the core's
 * extractMany), and their tasks are followed together; each item then gets exactly the items `run`
 * would give it. An item that replaces a document (Document ID) is uploaded alone, as the API
 * replaces one document per upload.
 */
/** An upload's parameters without its files (what items must share to share an upload). */
function withoutFiles<T extends { files?: unknown }>(input: T): Omit<T, 'files'> {
  const params = { ...input };
  delete params.files;
  return params;
}

export const runAll: BatchRunner = async (ctx, client, entries) => {
  const ends: ItemEnd[] = entries.map(() => ({ error: new Error('not run') }));
  const groups = new Map<string, number[]>();
  const settings = entries.map(({ i }) => settingsOf(ctx, i));
  for (const [k, { input }] of entries.entries()) {
    const params = withoutFiles(input);
    const { timeoutMs, intervalMs } = settings[k]!;
    const key = JSON.stringify([params, timeoutMs, intervalMs, input.doc_id != null ? k : null]);
    groups.set(key, [...(groups.get(key) ?? []), k]);
  }
  for (const members of groups.values()) {
    const first = entries[members[0]!]!.input;
    const params = withoutFiles(first);
    const filesOf = members.map((k) => entries[k]!.input.files as FileInput[]);
    const { timeoutMs, intervalMs } = settings[members[0]!]!;
    let outcome;
    try {
      outcome = await client.extractMany(filesOf.flat(), params as Omit<InputOf<'upload_file'>, 'files'>, {
        timeoutMs,
        intervalMs,
      });
    } catch (error) {
      for (const k of members) ends[k] = { error };
      continue;
    }
    let offset = 0;
    for (const [m, k] of members.entries()) {
      const files = filesOf[m]!;
      const mine = outcome.files.slice(offset, offset + files.length);
      offset += files.length;
      const failure = mine.find((f) => 'error' in f);
      if (failure && 'error' in failure) {
        ends[k] = { error: failure.error };
        continue;
      }
      const tasks = mine.flatMap((f) => ('results' in f ? f.results : []));
      try {
        ends[k] = { items: await itemsOf(ctx, client, entries[k]!.i, files, tasks, settings[k]!) };
      } catch (error) {
        ends[k] = { error };
      }
    }
  }
  return ends;
};
