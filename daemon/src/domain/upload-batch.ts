/**
 * Several files in one upload_file (issue #42, docs/decisions.md "Fewer requests per document"):
 * which due files share a request, what a row records of its request, and which child task is a
 * file's own. Pure: the pipeline's batch-upload.ts carries it out.
 *
 * A row of a batch records, before the request leaves, the names of all files in it and its own
 * place (`UploadBatch`); with the answer, the task ids it listed. A child task is given to a file
 * only on evidence (`pairChildren` of @docex/shared: its document_name, the order this batch's
 * named children showed, elimination, sameness): never a file's result given to another.
 */
import { DocexApiError, DocexError, isFinalStatus, pairChildren, type TaskResult } from '@docex/shared';

/** What a row holds in `upload_batch` (JSON). */
export interface UploadBatch {
  /** The files' names as sent, in the order of the request's `files`. */
  names: string[];
  /** This row's place among them. */
  index: number;
  /** The task ids the answer listed (null until it came). */
  tasks: string[] | null;
}
/** A row marked to go alone (the service took one file of a batch, not this one). */
export const ALONE = '{"alone":true}';

export const encodeBatch = (batch: UploadBatch) => JSON.stringify(batch);

/** The row's batch, or undefined: a lone upload (or a row from before batching, or marked ALONE). */
export function decodeBatch(text: string | null | undefined): UploadBatch | undefined {
  if (!text) return undefined;
  try {
    const v = JSON.parse(text) as Partial<UploadBatch>;
    if (!Array.isArray(v.names) || typeof v.index !== 'number' || v.names.length < 2) return undefined;
    return { names: v.names, index: v.index, tasks: Array.isArray(v.tasks) ? v.tasks : null };
  } catch {
    return undefined;
  }
}

export interface BatchCandidate {
  id: number;
  /** watch and route: the same target (template or folder, metadata) */
  target: string;
  name: string;
  size: number;
  alone: boolean;
}

/**
 * Groups due files into uploads: the same target, in order, at most maxFiles and maxBytes each,
 * names unique within an upload (the name is the evidence that tells a child task's file). A file
 * marked alone, or larger than maxBytes, goes alone.
 */
export function groupUploads(
  files: readonly BatchCandidate[],
  limits: { maxFiles: number; maxBytes: number },
): number[][] {
  const open = new Map<string, { ids: number[]; bytes: number; names: Set<string> }>();
  const groups: number[][] = [];
  for (const f of files) {
    if (f.alone || f.size > limits.maxBytes || limits.maxFiles <= 1) {
      groups.push([f.id]);
      continue;
    }
    let group = open.get(f.target);
    if (
      group &&
      (group.ids.length >= limits.maxFiles ||
        group.bytes + f.size > limits.maxBytes ||
        group.names.has(f.name))
    ) {
      groups.push(group.ids);
      group = undefined;
    }
    if (!group) open.set(f.target, (group = { ids: [], bytes: 0, names: new Set() }));
    group.ids.push(f.id);
    group.bytes += f.size;
    group.names.add(f.name);
  }
  for (const group of open.values()) groups.push(group.ids);
  return groups;
}

/**
 * A batch refused as a whole, so nothing in it was taken and each file may go alone: a 4xx answer
 * but 408 and 429 (took nothing, but asking again is the answer), and but 401, 403 and 404 (the key,
 * the template or folder: the same for each file, handled as the per-file path handles them).
 */
export function refusedWhole(error: unknown): boolean {
  return (
    error instanceof DocexApiError &&
    error.status >= 400 &&
    error.status < 500 &&
    ![401, 403, 404, 408, 429].includes(error.status)
  );
}

/** What a batched row's poll found. */
export type Placement =
  /** Its own child, final: its outcome (`taskId` may differ from the one tried by position). */
  | { kind: 'own'; taskId: string; result: TaskResult }
  /** Its upload answered one task for the batch, which lists the children: follow them. */
  | { kind: 'children'; tasks: string[] }
  /** Not known yet (its child, or the evidence, is still in progress). */
  | { kind: 'wait' }
  /** The service took one file of the batch, another one: this one goes again, alone. */
  | { kind: 'not-taken' }
  /** Every child is final and none can be told to be this file's. */
  | { kind: 'unplaced'; error: DocexError };

/**
 * Which answer is this row's. `ends`: the batch's task answers known so far (final or not), by task
 * id. `polled`: the answer of the task the row polled (its tentative own child, or the batch's one task).
 */
export function placeInBatch(
  batch: UploadBatch,
  polled: { taskId: string; result: TaskResult },
  ends: ReadonlyMap<string, TaskResult>,
): Placement {
  const tasks = batch.tasks ?? [];
  if (tasks.length !== batch.names.length) {
    const name = batch.names[batch.index]!;
    // One task for the whole request: its children, when it lists them, are the files' tasks.
    const children = (polled.result.child_task_ids ?? []).filter((c) => c !== polled.taskId);
    if (children.length > 0) return { kind: 'children', tasks: children };
    if (!isFinalStatus(polled.result.status)) return { kind: 'wait' };
    // No children: the service took one file (the array ignored); its name says which.
    if (polled.result.document_name === name) return { kind: 'own', ...polled };
    if (batch.names.includes(polled.result.document_name ?? '')) return { kind: 'not-taken' };
    return unplaced(batch, tasks.length);
  }
  const finals = tasks.map((t) => {
    const end = ends.get(t);
    return end && isFinalStatus(end.status) ? end : undefined;
  });
  const pairs = pairChildren(batch.names, finals);
  const child = pairs[batch.index];
  if (child !== undefined && finals[child])
    return { kind: 'own', taskId: tasks[child]!, result: finals[child] };
  if (finals.every((f) => f !== undefined)) return unplaced(batch, tasks.length);
  return { kind: 'wait' };
}

function unplaced(batch: UploadBatch, tasks: number): Placement {
  return {
    kind: 'unplaced',
    error: new DocexError(
      'upload_file',
      `the upload of ${batch.names.length} files answered ${tasks} task(s), and none of them can be told to be ${batch.names[batch.index]}'s: look the file up in the service before sending it again (upload.batch_files: 1 sends each file alone)`,
      { kind: 'permanent' },
    ),
  };
}
