/**
 * Many files or documents in few requests (docs/decisions.md, "Fewer requests per document"): files
 * share upload_file requests (uploadMany), their tasks are followed together and paired back to
 * their files (extractMany), reruns go in chunks of 500 (rerunAll). Functions over the client's
 * `call` (the client's methods of the same names hand them itself), so they retry, pace and map
 * errors as every call does. Pure, as the client is.
 */
import { DEFAULT_BATCH_LIMITS, pairChildren, planBatches, type BatchLimits } from './batch.ts';
import type { CallFn, CallOptions, InputOf } from './client-types.ts';
import {
  DocexAbortError,
  DocexApiError,
  DocexError,
  DocexInputError,
  DocexResponseShapeError,
} from './errors.ts';
import { followTasks, type FollowOptions, type FollowStats } from './follow.ts';
import type { WaitResult } from './poll.ts';
import { fileNameOf } from './request.ts';
import type { BatchFileError, RerunResult, TaskResult, UploadResult } from './schemas.ts';
import type { FileInput, Logger, Sleep } from './transport.ts';

/** What the functions here need of a client: its call, its logger and its clocks. */
export interface ManyHost {
  call: CallFn;
  logger?: Logger;
  sleep: Sleep;
  /** The steady clock (durations, deadlines). */
  elapsed: () => number;
  /** The wall clock (updated_since). */
  now: () => number;
}

export interface RerunAllOptions {
  override_extraction?: boolean;
  /** At most 500 (the service's limit). */
  chunkSize?: number;
  signal?: AbortSignal;
  onChunk?: (info: {
    index: number;
    chunks: number;
    doc_ids: number[];
    result?: RerunResult;
    error?: DocexError;
  }) => void;
}
export interface RerunAllResult {
  rerun: number;
  not_rerun: number;
  rerun_doc_ids: number[];
  errors: RerunResult['errors'];
  chunks: number;
  /** Chunks whose request failed as a whole (after retries); their documents may or may not have been dispatched. */
  failedChunks: Array<{ doc_ids: number[]; error: DocexError }>;
}

export type UploadManyOptions = Omit<CallOptions, 'timeoutMs' | 'instructionIdIn'> & {
  requestTimeoutMs?: number;
  /** Files per upload and bytes per upload; `{ maxFiles: 1 }` is the per-file path. */
  batch?: Partial<BatchLimits>;
};

/** One upload_file request that was answered: its files (indexes), the task ids, the answer. */
export interface SentUpload {
  files: number[];
  taskIds: string[];
  /** A file sent alone (its tasks are its own, whatever their number). */
  single: boolean;
  answer: UploadResult;
}

export interface UploadManyResult {
  /** In the order sent. */
  sent: SentUpload[];
  /** Per file, in the order given: why it was not taken (undefined when a request carried it). */
  errors: (DocexError | undefined)[];
  stats: { uploads: number; batchesRefused: number };
}

export type ExtractManyOptions = FollowOptions & UploadManyOptions;

/** One file's end: its task's final result (several when the service split the file into children), or why there is none. */
export type FileOutcome = { results: WaitResult[]; taskIds: string[] } | { error: DocexError };

export interface ExtractManyResult {
  /** In the order of the files given. */
  files: FileOutcome[];
  stats: FollowStats & { uploads: number; batchesRefused: number; arraysIgnored: number };
}

function asDocId(id: unknown): number {
  if (typeof id === 'number' && Number.isSafeInteger(id)) return id;
  if (typeof id === 'string' && /^\d{1,15}$/.test(id.trim())) return Number(id);
  throw new DocexInputError('rerun_documents', `doc_ids must be integers (got ${JSON.stringify(id)})`);
}

const MAX_RERUN_CHUNK = 500;

/**
 * A refusal of the whole request that took nothing in and that one of its files may have caused, so
 * that each file sent alone finds the bad one (a 429 and 5xx are retried by call, or leave the
 * outcome open). A refused key (401, 403) is no file's fault: sent alone, each would be refused too.
 */
const refusedWhole = (error: unknown) =>
  error instanceof DocexApiError &&
  error.status >= 400 &&
  error.status < 500 &&
  ![401, 403, 408, 429].includes(error.status);

/**
 * Uploads many files with as few requests as the API allows (planBatches), without waiting: each
 * request's files and the task ids it answered, or each file's error. A batch refused as a whole
 * (not for the key) is sent again file by file, so that only the bad file fails; a lost answer is
 * never followed by a second upload (docs/decisions.md, "Fewer requests per document").
 */
export async function uploadMany(
  host: ManyHost,
  files: readonly FileInput[],
  input: Omit<InputOf<'upload_file'>, 'files'> = {},
  options: UploadManyOptions = {},
): Promise<UploadManyResult> {
  const { signal, retry, requestTimeoutMs, priority } = options;
  const limits = { ...DEFAULT_BATCH_LIMITS, ...options.batch };
  const stats = { uploads: 0, batchesRefused: 0 };
  const errors: (DocexError | undefined)[] = files.map(() => undefined);
  const sent: SentUpload[] = [];

  const upload = async (indexes: number[]) => {
    stats.uploads++;
    return (await host.call(
      'upload_file',
      { ...input, files: indexes.map((i) => files[i]!) } as InputOf<'upload_file'>,
      { signal, retry, timeoutMs: requestTimeoutMs, priority },
    )) as UploadResult;
  };
  const uploadEach = async (indexes: number[]) => {
    for (const i of indexes) {
      try {
        const answer = await upload([i]);
        sent.push({ files: [i], taskIds: answer.task_ids, single: true, answer });
      } catch (error) {
        if (!(error instanceof DocexError) || error instanceof DocexAbortError) throw error;
        errors[i] = error;
      }
    }
  };

  for (const batch of planBatches(files, limits)) {
    if (batch.length === 1) {
      await uploadEach(batch);
      continue;
    }
    try {
      const answer = await upload(batch);
      sent.push({ files: batch, taskIds: answer.task_ids, single: false, answer });
    } catch (error) {
      if (!(error instanceof DocexError) || error instanceof DocexAbortError) throw error;
      if (refusedWhole(error)) {
        // Refused as a whole (one bad file, a limit): nothing was taken, each file goes alone
        // and only the bad one fails, with its own message.
        stats.batchesRefused++;
        host.logger?.info(
          { files: batch.length, status: (error as DocexApiError).status },
          'docex: a batched upload was refused; uploading its files one by one',
        );
        await uploadEach(batch);
      } else {
        // The answer was lost or the server failed: whether it took the files is unknown, and
        // sending them again could make duplicates. Or the key was refused: no file of it can go.
        // Each file reports the error, as alone it would.
        for (const i of batch) errors[i] = error;
      }
    }
  }
  return { sent, errors, stats };
}

/**
 * Uploads many files with as few requests as the API allows and follows all their tasks at once
 * (docs/decisions.md, "Fewer requests per document"): files share upload_file requests
 * (uploadMany), their child tasks are followed together (followTasks: one document listing per
 * round, a poll per task when its document appears) and paired back to their files on evidence
 * (pairChildren). Every file gets exactly one outcome, in the order given; none is uploaded twice
 * unless the service refused its batch as a whole or ignored the array (then it goes alone).
 */
export async function extractMany(
  host: ManyHost,
  files: readonly FileInput[],
  input: Omit<InputOf<'upload_file'>, 'files'> = {},
  options: ExtractManyOptions = {},
): Promise<ExtractManyResult> {
  const { priority } = options;
  const names = files.map((f) => fileNameOf(f) ?? '');
  const { sent, errors, stats: uploadStats } = await uploadMany(host, files, input, options);
  const stats = { ...uploadStats, arraysIgnored: 0 };
  const outcomes: (FileOutcome | undefined)[] = errors.map((error) => (error ? { error } : undefined));

  const follow = (taskIds: string[]) =>
    followTasks(
      taskIds,
      {
        fetchResult: (task_id, s) =>
          host.call('fetch_tasks_results', { task_id }, { signal: s, priority }) as Promise<TaskResult>,
        listDocumentIds: (updated_since, s) =>
          host.call('fetch_documents', { updated_since }, { signal: s, priority }) as Promise<number[]>,
        sleep: host.sleep,
        now: host.elapsed,
        wallClock: host.now,
        logger: host.logger,
      },
      options,
    );
  const { outcomes: ends, stats: followStats } = await follow(sent.flatMap((s) => s.taskIds));
  const resultOf = (id: string) => {
    const end = ends.get(id);
    return end && 'result' in end ? end.result : undefined;
  };
  const errorOf = (id: string) => {
    const end = ends.get(id);
    return end && 'error' in end ? end.error : undefined;
  };
  const alone: number[] = [];

  for (const batch of sent) {
    // A lone file: its task(s), children flattened as uploadAndWait does.
    if (batch.single) {
      const i = batch.files[0]!;
      const failure = batch.taskIds.map(errorOf).find((e) => e !== undefined);
      if (failure) {
        outcomes[i] = { error: failure };
        continue;
      }
      const results = batch.taskIds.map((id) => resultOf(id)!);
      outcomes[i] = {
        taskIds: batch.taskIds,
        results: results.flatMap((r) => (r.children?.length ? r.children : [r])),
      };
      continue;
    }
    // The children: listed by the upload, or by the one task it answered.
    let childIds = batch.taskIds;
    let childEnds = childIds.map(resultOf);
    if (childIds.length === 1) {
      const parent = resultOf(childIds[0]!);
      const listed = parent?.children;
      if (listed?.length) {
        childIds = listed.map((c) => c.task_id ?? '');
        childEnds = listed;
      } else if (parent) {
        // One task for several files: the service took one file (the array ignored). The one
        // its name shows is done; the others were not taken and go alone.
        stats.arraysIgnored++;
        const match = batch.files.filter((f) => names[f] === parent.document_name);
        const mine = match.length === 1 ? match[0]! : undefined;
        if (mine !== undefined) outcomes[mine] = { taskIds: childIds, results: [parent] };
        for (const f of batch.files) if (f !== mine) alone.push(f);
        continue;
      }
    }
    const pairs = pairChildren(
      batch.files.map((f) => names[f]!),
      childEnds,
    );
    for (const [k, f] of batch.files.entries()) {
      const c = pairs[k];
      const end = c === undefined ? undefined : childEnds[c];
      if (c !== undefined && end) outcomes[f] = { taskIds: [childIds[c]!], results: [end] };
      else
        outcomes[f] = {
          error:
            (c !== undefined ? errorOf(childIds[c]!) : undefined) ??
            new DocexResponseShapeError(
              'upload_file',
              'child_task_ids',
              `the upload of ${batch.files.length} files answered ${childIds.length} task(s), and none of them could be told to be ${names[f]}'s; look the file up in the service before sending it again`,
              null,
            ),
        };
    }
  }
  if (alone.length > 0) {
    const again = await extractMany(
      host,
      alone.map((i) => files[i]!),
      input,
      { ...options, batch: { ...options.batch, maxFiles: 1 } },
    );
    alone.forEach((i, k) => (outcomes[i] = again.files[k]));
    stats.uploads += again.stats.uploads;
    followStats.polls += again.stats.polls;
    followStats.listings += again.stats.listings;
    followStats.missedPolls += again.stats.missedPolls;
  }
  return { files: outcomes.map((o) => o!), stats: { ...followStats, ...stats } };
}

/** rerun_documents for any number of ids: de-duplicated, sent in chunks of at most 500, answers merged. */
export async function rerunAll(
  host: ManyHost,
  docIds: readonly number[],
  options: RerunAllOptions = {},
): Promise<RerunAllResult> {
  const size = Math.min(MAX_RERUN_CHUNK, Math.max(1, options.chunkSize ?? MAX_RERUN_CHUNK));
  // Checked up front: a bad id would otherwise fail its whole chunk after others were sent.
  const ids = [...new Set(docIds.map((id) => asDocId(id)))];
  const chunks: number[][] = [];
  for (let i = 0; i < ids.length; i += size) chunks.push(ids.slice(i, i + size));
  const merged: RerunAllResult = {
    rerun: 0,
    not_rerun: 0,
    rerun_doc_ids: [],
    errors: [],
    chunks: chunks.length,
    failedChunks: [],
  };
  for (const [index, doc_ids] of chunks.entries()) {
    try {
      const result = (await host.call(
        'rerun_documents',
        { doc_ids, override_extraction: options.override_extraction ?? false },
        { signal: options.signal },
      )) as RerunResult;
      merged.rerun += result.rerun;
      merged.not_rerun += result.not_rerun;
      merged.rerun_doc_ids.push(...result.rerun_doc_ids);
      merged.errors.push(...(result.errors as BatchFileError[]));
      options.onChunk?.({ index, chunks: chunks.length, doc_ids, result });
    } catch (error) {
      if (!(error instanceof DocexError) || error instanceof DocexAbortError) throw error;
      merged.failedChunks.push({ doc_ids, error });
      options.onChunk?.({ index, chunks: chunks.length, doc_ids, error });
    }
  }
  return merged;
}
