/**
 * Several files in one upload_file (docs/decisions.md, "Fewer requests per document"): which files
 * may share a request, and which child task is which file. Pure.
 *
 * The document promises `files` as an array and `child_task_ids` in the task result, but not that the
 * children come in the order of the files. A child is given to a file only on evidence: its
 * document_name (the original file's name, and names are unique within a batch), then the order
 * once this very batch's names showed the service keeps it, then elimination (one child and one
 * file left), then sameness (the children left all say the same thing, so which is which changes
 * no file's outcome). A child none of these places stays unpaired: its file gets an error, never a
 * result that may be another file's.
 */
import { fileNameOf } from './request.ts';
import type { TaskResult } from './schemas.ts';
import type { FileInput } from './transport.ts';

export interface BatchLimits {
  /** Files per upload_file request (the document gives no limit; default 20). */
  maxFiles: number;
  /** Bytes per request, known sizes summed (default 32 MiB); a larger or unsized file goes alone. */
  maxBytes: number;
}

export const DEFAULT_BATCH_LIMITS: BatchLimits = { maxFiles: 20, maxBytes: 32 * 1024 * 1024 };

/** A file's size when it is known without reading it. */
export function knownSize(file: FileInput): number | undefined {
  if ('data' in file) return file.data.byteLength;
  return file.size;
}

/**
 * Groups file indexes into uploads: in order, at most maxFiles and maxBytes each, names unique
 * within an upload (the name is how a child is told apart). A stream goes alone: it cannot be sent
 * a second time, and the per-file path is the fallback of a refused batch. So does a file whose
 * size is unknown here (a path the caller did not size: the Node transport reads it).
 */
export function planBatches(files: readonly FileInput[], limits: Partial<BatchLimits> = {}): number[][] {
  const { maxFiles, maxBytes } = { ...DEFAULT_BATCH_LIMITS, ...limits };
  const batches: number[][] = [];
  let current: number[] = [];
  let bytes = 0;
  let names = new Set<string>();
  const close = () => {
    if (current.length > 0) batches.push(current);
    current = [];
    bytes = 0;
    names = new Set();
  };
  for (const [index, file] of files.entries()) {
    const size = knownSize(file);
    const name = fileNameOf(file) ?? '';
    const alone = 'stream' in file || size === undefined || size > maxBytes || maxFiles <= 1;
    if (alone) {
      close();
      batches.push([index]);
      continue;
    }
    if (current.length >= maxFiles || bytes + size > maxBytes || names.has(name)) close();
    current.push(index);
    bytes += size;
    names.add(name);
  }
  close();
  return batches;
}

/** A child's end as the pairing sees it: its final result, or none (its poll failed). */
export type ChildEnd = TaskResult | undefined;

/**
 * For each file of a batch (by position), the index of its child among `children` (the order the
 * service listed them), or undefined when no evidence places one.
 */
export function pairChildren(
  fileNames: readonly string[],
  children: readonly ChildEnd[],
): (number | undefined)[] {
  const fileOf: (number | undefined)[] = fileNames.map(() => undefined);
  const taken = new Set<number>();
  const pair = (file: number, child: number) => {
    fileOf[file] = child;
    taken.add(child);
  };
  const freeFiles = () => fileNames.map((_, i) => i).filter((i) => fileOf[i] === undefined);
  const freeChildren = () => children.map((_, c) => c).filter((c) => !taken.has(c));

  // 1. By name: the document's document_name is the original file's name.
  for (const [c, end] of children.entries()) {
    const name = end?.document_name;
    if (!name) continue;
    const matches = freeFiles().filter((f) => fileNames[f] === name);
    if (matches.length === 1) pair(matches[0]!, c);
  }
  // 2. By order, when this batch's own named pairs show the service keeps it.
  const named = fileOf.flatMap((c, f) => (c === undefined ? [] : [[f, c] as const]));
  if (children.length === fileNames.length && named.length > 0 && named.every(([f, c]) => f === c)) {
    for (const f of freeFiles()) if (!taken.has(f)) pair(f, f);
  }
  // 3. Elimination.
  if (freeFiles().length === 1 && freeChildren().length === 1) pair(freeFiles()[0]!, freeChildren()[0]!);
  // 4. Sameness: the children left say the same thing, so which file gets which changes nothing.
  const files = freeFiles();
  const rest = freeChildren();
  if (files.length > 1 && files.length === rest.length) {
    // Everything but the task's own ids: status, message, document, fields, fraud.
    const says = (c: number) => {
      const end = children[c];
      return end ? JSON.stringify({ ...end, task_id: null, child_task_ids: null }) : 'no answer';
    };
    if (rest.every((c) => says(c) === says(rest[0]!)) && says(rest[0]!) !== 'no answer')
      files.forEach((f, k) => pair(f, rest[k]!));
  }
  return fileOf;
}
