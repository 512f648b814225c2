/**
 * Upload and Wait: upload_file, then poll fetch_tasks_results for every file's task (the core's
 * uploadAndWait) and put out one item per file with its final result. A file whose extraction
 * FAILED, or that is a DUPLICATE of an existing document, fails the item unless Continue On Fail is
 * on (then it comes out with an `error` field) or duplicates are accepted.
 */
import { NodeOperationError, type IDataObject, type INodeProperties } from 'n8n-workflow';
import {
  fileNameOf,
  type FileInput,
  type InputOf,
  type WaitResult,
} from '../../../../shared/src/core/index.ts';
import { jsonItem } from '../common.execute.ts';
import type { Runner } from '../node.type.ts';

export const options: INodeProperties[] = [
  {
    displayName: 'Accept Duplicates',
    name: 'acceptDuplicates',
    type: 'boolean',
    default: false,
    description:
      'Whether a file the service already holds (status DUPLICATE) counts as a success; its item then refers to the existing document',
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
    description: 'How long to wait for all files of the upload to be extracted before failing',
  },
];

const describe = (t: WaitResult, fileName: string | undefined) =>
  `${t.document_name ?? fileName ?? t.task_id ?? 'file'}: ${t.status}${t.status_message ? ` (${t.status_message})` : ''}`;

export const run: Runner = async (ctx, client, i, input) => {
  const opts = ctx.getNodeParameter('options', i, {}) as IDataObject;
  const timeoutMs = Math.round(Number(opts.waitTimeout ?? 600) * 1000);
  const intervalMs = Math.round(Number(opts.pollInterval ?? 2) * 1000);
  const acceptDuplicates = opts.acceptDuplicates === true;
  const { tasks } = await client.uploadAndWait(input as InputOf<'upload_file'>, { timeoutMs, intervalMs });
  // One task per file, in the order sent: a failed task has no document name, the file has.
  const files = input.files as FileInput[];
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
          `${done} file(s) of this upload were extracted. FAILED: the service could not extract the file. ` +
          'DUPLICATE: the service already holds this file (turn on "Accept Duplicates" to use the existing document). ' +
          'Turn on "Continue On Fail" to get every file as an item, with an error field on those that did not succeed.',
      },
    );
  }
  return tasks.map((task) => {
    const { children: _children, ...result } = task;
    const ok = !failed.includes(task);
    return jsonItem(
      i,
      ok ? result : { ...result, error: `Extraction ${task.status}: ${describe(task, nameOf(task))}` },
    );
  });
};
