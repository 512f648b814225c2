/**
 * The typed client. Every operation goes through `call`, which validates the input, sends it through
 * the transport, retries where safe, maps errors and checks the answer with zod. Pure: I/O, time and
 * randomness come in through the options.
 */
import type { z } from 'zod/v4';
import {
  apiErrorFrom,
  DocexAbortError,
  DocexApiError,
  DocexConnectionError,
  DocexError,
  DocexInputError,
  DocexRateLimitError,
  DocexResponseShapeError,
  DocexTimeoutError,
  networkError,
  redactDeep,
} from './errors.ts';
import { DEFAULT_BATCH_LIMITS, pairChildren, planBatches, type BatchLimits } from './batch.ts';
import { fileNameFromContentDisposition, safeFileName } from './files.ts';
import { followTasks, type FollowOptions, type FollowStats } from './follow.ts';
import type { SettingTerms } from './hints.ts';
import {
  getOperation,
  OPERATION_NAMES,
  type OperationName,
  type Operations,
  type OperationSpec,
} from './operations.ts';
import {
  DEFAULT_WAIT_TIMEOUT_MS,
  sleepUnlessAborted,
  throwIfAborted,
  waitForTask,
  type WaitOptions,
  type WaitResult,
} from './poll.ts';
import { bodyIsReplayable, buildRequest, fileNameOf } from './request.ts';
import { DEFAULT_RETRY, retryDelayMs, shouldRetry, type RetryPolicy } from './retry.ts';
import type { BatchFileError, RerunResult, TaskResult, UploadResult } from './schemas.ts';
import {
  NOT_SENT_CODES,
  TransportError,
  type FileInput,
  type Logger,
  type Sleep,
  type Transport,
  type TransportResponse,
} from './transport.ts';

export interface ClientOptions {
  transport: Transport;
  sleep: Sleep;
  /** Wall-clock time in ms (Date.now): reads the server's dates (an HTTP-date Retry-After). */
  now?: () => number;
  /**
   * A steady clock in ms for durations (429 cool-downs, task waits and their deadlines): one that a
   * wall-clock step (NTP, a VM resumed, a manual change) does not move, e.g. performance.now.
   * Default: `now`.
   */
  elapsed?: () => number;
  random?: () => number;
  logger?: Logger;
  retry?: Partial<RetryPolicy>;
  /** Per-request timeout in ms (default 60 s; uploads and downloads may want more). */
  timeoutMs?: number;
  instructionIdIn?: 'query' | 'path';
  /** Scrubs secrets from anything the server echoes into an error message. */
  redact?: (text: string) => string;
  /** Where the program's user sets the URL, key, proxy and CA its messages name (hints.ts; default: these options' names). */
  terms?: SettingTerms;
}

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Among this client's requests waiting for a free slot, higher goes first (default 0; ties in order). */
  priority?: number;
  retry?: Partial<RetryPolicy>;
  instructionIdIn?: 'query' | 'path';
}

/** A downloaded file: read `body` once (stream it to disk, or collect it with readAll). */
export interface BinaryResult {
  /** From Content-Disposition, already made safe (a bare name, no directories). */
  fileName: string | null;
  contentType: string | null;
  size: number | null;
  body: AsyncIterable<Uint8Array>;
}

type KindTypes = {
  integer: number;
  string: string;
  boolean: boolean;
  date: string | Date;
  datetime: string | Date;
  'integer[]': number[];
  'string[]': string[];
  metadata: string | Record<string, unknown>;
  file: FileInput;
  'file[]': FileInput[];
};
type ValueOf<P> = P extends { values: readonly (infer V)[] }
  ? V
  : P extends { kind: infer K extends keyof KindTypes }
    ? KindTypes[K]
    : never;
type ParamsOf<K extends OperationName> = Operations[K]['params'][number];
type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** An operation without parameters takes no keys at all, so `checkApiKey({ signal })` is a type error. */
export type InputOf<K extends OperationName> = [ParamsOf<K>] extends [never]
  ? Record<string, never>
  : Simplify<
      { [P in ParamsOf<K> as P extends { required: true } ? P['name'] : never]: ValueOf<P> } & {
        [P in ParamsOf<K> as P extends { required: true } ? never : P['name']]?: ValueOf<P> | null;
      }
    >;
export type OutputOf<K extends OperationName> = Operations[K] extends { output: 'binary' }
  ? BinaryResult
  : Operations[K] extends { output: 'empty' }
    ? void
    : Operations[K] extends { schema: infer Schema extends z.ZodType }
      ? z.output<Schema>
      : unknown;
export type CallArgs<K extends OperationName> =
  {} extends InputOf<K>
    ? [input?: InputOf<K>, options?: CallOptions]
    : [input: InputOf<K>, options?: CallOptions];

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCase<Tail>>}`
  : S;
export type OperationMethods = {
  [K in OperationName as CamelCase<K>]: (...args: CallArgs<K>) => Promise<OutputOf<K>>;
};
export const camelCase = (name: string) => name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

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

/**
 * `timeoutMs` is the whole wait (as in waitForTask, default 15 min), shared by all the upload's tasks;
 * `requestTimeoutMs` bounds the upload request itself (default: the client's timeoutMs).
 */
export type UploadAndWaitOptions = WaitOptions &
  Omit<CallOptions, 'timeoutMs' | 'instructionIdIn'> & { requestTimeoutMs?: number };

export interface UploadAndWaitResult {
  upload: UploadResult;
  /** One final result per file task (children of a multi-file upload are listed one by one). */
  tasks: WaitResult[];
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

class DocexClientBase {
  readonly options: ClientOptions;
  readonly retryPolicy: RetryPolicy;
  private readonly now: () => number;
  private readonly elapsed: () => number;
  private readonly random: () => number;
  private readonly redact: (s: string) => string;
  private readonly terms: SettingTerms | undefined;
  /**
   * A 429 speaks of the whole client, not of one request: after one, new calls wait until this time
   * too, and the wait grows with each further 429 in a row (reset by any answer that is not a 429).
   * Without it, many callers each retrying on their own keep a busy server's window full.
   */
  private rateLimitedUntil = 0;
  private rateLimitStreak = 0;

  constructor(options: ClientOptions) {
    this.options = options;
    this.retryPolicy = { ...DEFAULT_RETRY, ...options.retry };
    this.now = options.now ?? Date.now;
    this.elapsed = options.elapsed ?? this.now;
    this.random = options.random ?? Math.random;
    this.redact = options.redact ?? ((s) => s);
    this.terms = options.terms;
  }

  /** Any operation by its API name. */
  async call<K extends OperationName>(name: K, ...[input, options = {}]: CallArgs<K>): Promise<OutputOf<K>> {
    const op = getOperation(String(name));
    if (!op) throw new DocexInputError(String(name), 'no such operation');
    const request = buildRequest(op, input as Record<string, unknown> | undefined, {
      instructionIdIn: options.instructionIdIn ?? this.options.instructionIdIn,
    });
    const policy = options.retry ? { ...this.retryPolicy, ...options.retry } : this.retryPolicy;
    const replayable = bodyIsReplayable(request);
    const log = this.options.logger;

    /** An earlier attempt failed in a way that leaves open whether the server carried it out. */
    let mayHaveActed = false;
    const firstAttempt = this.elapsed();
    for (let attempt = 0; ; attempt++) {
      throwIfAborted(options.signal, name);
      const coolDown = this.rateLimitedUntil - this.elapsed();
      if (attempt === 0 && coolDown > 0)
        await sleepUnlessAborted(this.options.sleep, coolDown, options.signal, name);
      const started = this.elapsed();
      let error: DocexError;
      let notSent = false;
      try {
        const response = await this.options.transport.send({
          ...request,
          signal: options.signal,
          timeoutMs: options.timeoutMs ?? this.options.timeoutMs ?? 60_000,
          priority: options.priority,
        });
        log?.debug(
          { operation: name, status: response.status, attempt, ms: this.elapsed() - started },
          'docex request',
        );
        if (response.status !== 429) this.rateLimitStreak = 0;
        if (response.status >= 200 && response.status < 300) return this.parse(op, response) as OutputOf<K>;
        if (response.status === 404 && mayHaveActed && op.method === 'DELETE') {
          // The attempt that timed out (or failed with 5xx) did delete it: what the caller wanted is done.
          log?.info({ operation: name, attempt }, 'docex: already deleted by an earlier attempt');
          return this.parse(op, { status: 200, headers: {}, body: '' }) as OutputOf<K>;
        }
        error = apiErrorFrom(name, response, this.redact, this.now());
      } catch (thrown) {
        if (thrown instanceof DocexError) throw thrown;
        notSent =
          thrown instanceof TransportError &&
          (!thrown.requestSent || (thrown.code !== undefined && NOT_SENT_CODES.has(thrown.code)));
        error = this.fromThrown(name, thrown, options.signal);
        if (error instanceof DocexAbortError) throw error;
      }
      const retryable = shouldRetry(error, { idempotent: op.idempotent, replayable, notSent });
      if (!notSent && !(error instanceof DocexRateLimitError)) mayHaveActed = true;
      const serverWait = error instanceof DocexApiError ? error.retryAfterMs : undefined;
      if (error instanceof DocexRateLimitError) this.coolDown(policy, serverWait);
      // Past maxRetries only a 429 goes on, and only while the retry starts within the budget.
      const budget = error instanceof DocexRateLimitError ? (policy.rateLimitBudgetMs ?? 0) : 0;
      const delay =
        retryable && (attempt < policy.maxRetries || budget > 0)
          ? retryDelayMs(attempt, policy, this.random, serverWait)
          : undefined;
      if (delay === undefined) throw error;
      if (attempt >= policy.maxRetries && this.elapsed() + delay - firstAttempt > budget) throw error;
      log?.warn(
        { operation: name, attempt: attempt + 1, delayMs: delay, error: error.message },
        'docex: retrying',
      );
      await sleepUnlessAborted(this.options.sleep, delay, options.signal, name);
    }
  }

  private coolDown(policy: RetryPolicy, serverWait: number | undefined) {
    // Requests sent before the wait began answer 429 too: one round of them escalates once.
    if (this.elapsed() < this.rateLimitedUntil) return;
    const wait = retryDelayMs(this.rateLimitStreak++, policy, this.random, serverWait);
    // A wait above the cap goes to the caller as an error; it does not freeze every other call.
    if (wait !== undefined) this.rateLimitedUntil = Math.max(this.rateLimitedUntil, this.elapsed() + wait);
  }

  /** Polls fetch_tasks_results until DONE, FAILED or DUPLICATE (and the same for child tasks). */
  waitForTask(taskId: string, options: WaitOptions = {}): Promise<WaitResult> {
    return waitForTask(
      taskId,
      {
        fetchResult: (task_id, signal) =>
          this.call('fetch_tasks_results', { task_id }, { signal }) as Promise<TaskResult>,
        sleep: this.options.sleep,
        now: this.elapsed,
        logger: this.options.logger,
      },
      options,
    );
  }

  /** upload_file, then wait for every task it started. */
  async uploadAndWait(
    input: InputOf<'upload_file'>,
    options: UploadAndWaitOptions = {},
  ): Promise<UploadAndWaitResult> {
    const { signal, retry, requestTimeoutMs } = options;
    const upload = (await this.call('upload_file', input, {
      signal,
      retry,
      timeoutMs: requestTimeoutMs,
    })) as UploadResult;
    // One deadline for all the tasks of the upload, not timeoutMs for each.
    const deadline = this.elapsed() + (options.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS);
    const tasks: WaitResult[] = [];
    for (const taskId of upload.task_ids) {
      const result = await this.waitForTask(taskId, {
        ...options,
        timeoutMs: Math.max(0, deadline - this.elapsed()),
      });
      tasks.push(...(result.children?.length ? result.children : [result]));
    }
    return { upload, tasks };
  }

  /**
   * Uploads many files with as few requests as the API allows (planBatches), without waiting: each
   * request's files and the task ids it answered, or each file's error. A batch refused as a whole
   * (not for the key) is sent again file by file, so that only the bad file fails; a lost answer is
   * never followed by a second upload (docs/decisions.md, "Fewer requests per document").
   */
  async uploadMany(
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
      return (await this.call(
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
          this.options.logger?.info(
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
  async extractMany(
    files: readonly FileInput[],
    input: Omit<InputOf<'upload_file'>, 'files'> = {},
    options: ExtractManyOptions = {},
  ): Promise<ExtractManyResult> {
    const { priority } = options;
    const names = files.map((f) => fileNameOf(f) ?? '');
    const { sent, errors, stats: uploadStats } = await this.uploadMany(files, input, options);
    const stats = { ...uploadStats, arraysIgnored: 0 };
    const outcomes: (FileOutcome | undefined)[] = errors.map((error) => (error ? { error } : undefined));

    const follow = (taskIds: string[]) =>
      followTasks(
        taskIds,
        {
          fetchResult: (task_id, s) =>
            this.call('fetch_tasks_results', { task_id }, { signal: s, priority }) as Promise<TaskResult>,
          listDocumentIds: (updated_since, s) =>
            this.call('fetch_documents', { updated_since }, { signal: s, priority }) as Promise<number[]>,
          sleep: this.options.sleep,
          now: this.elapsed,
          wallClock: this.now,
          logger: this.options.logger,
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
      const again = await this.extractMany(
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
  async rerunAll(docIds: readonly number[], options: RerunAllOptions = {}): Promise<RerunAllResult> {
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
        const result = (await this.call(
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

  private parse(op: OperationSpec, response: TransportResponse): unknown {
    if (op.output === 'empty') return undefined;
    if (op.output === 'binary') {
      const header = (n: string) => {
        const v = response.headers[n];
        return Array.isArray(v) ? v[0] : v;
      };
      const length = Number(header('content-length'));
      return {
        fileName: nameOrNull(fileNameFromContentDisposition(header('content-disposition'))),
        contentType: header('content-type') ?? null,
        size: Number.isFinite(length) && header('content-length') !== undefined ? length : null,
        body: toAsyncIterable(response.body),
      } satisfies BinaryResult;
    }
    const parsed = op.schema!.safeParse(response.body);
    if (parsed.success) return parsed.data;
    const { path, message } = deepestIssue(parsed.error.issues);
    throw new DocexResponseShapeError(
      op.name,
      formatPath(path),
      this.redact(message),
      redactDeep(response.body, this.redact),
    );
  }

  private fromThrown(operation: string, thrown: unknown, signal?: AbortSignal): DocexError {
    if (signal?.aborted || (thrown instanceof TransportError && thrown.kind === 'abort')) {
      return new DocexAbortError(operation, 'aborted', { cause: signal?.reason });
    }
    if (thrown instanceof TransportError) {
      if (thrown.failure) return networkError(operation, thrown.failure, thrown.code, undefined, this.terms);
      const message = this.redact(thrown.message);
      return thrown.kind === 'timeout'
        ? new DocexTimeoutError(operation, `timed out: ${message}`, { code: thrown.code })
        : new DocexConnectionError(operation, `connection failed: ${message}`, { code: thrown.code });
    }
    const message = thrown instanceof Error ? thrown.message : String(thrown);
    return new DocexConnectionError(operation, `request failed: ${this.redact(message)}`);
  }
}

function asDocId(id: unknown): number {
  if (typeof id === 'number' && Number.isSafeInteger(id)) return id;
  if (typeof id === 'string' && /^\d{1,15}$/.test(id.trim())) return Number(id);
  throw new DocexInputError('rerun_documents', `doc_ids must be integers (got ${JSON.stringify(id)})`);
}

const nameOrNull = (name: string | undefined) => (name === undefined ? null : safeFileName(name));

interface Issue {
  path: PropertyKey[];
  message: string;
  code?: string;
  errors?: Issue[][];
}

/**
 * The issue to report: for a union (e.g. `{folders}` or a bare list) none of whose branches matched,
 * the branch that got furthest into the answer, so the path points at the bad value itself.
 */
function deepestIssue(issues: readonly Issue[]): { path: PropertyKey[]; message: string } {
  let best: { path: PropertyKey[]; message: string } | undefined;
  for (const issue of issues) {
    let candidate = { path: issue.path, message: issue.message };
    if (issue.code === 'invalid_union' && issue.errors?.length) {
      const inner = issue.errors.map((branch) => deepestIssue(branch));
      const deepest = inner.reduce((a, b) => (b.path.length > a.path.length ? b : a));
      if (deepest.path.length > 0)
        candidate = { path: [...issue.path, ...deepest.path], message: deepest.message };
    }
    if (!best || candidate.path.length > best.path.length) best = candidate;
  }
  return best ?? { path: [], message: 'invalid' };
}

function formatPath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
}

function toAsyncIterable(body: unknown): AsyncIterable<Uint8Array> {
  if (body && typeof body === 'object' && Symbol.asyncIterator in body)
    return body as AsyncIterable<Uint8Array>;
  const bytes =
    body instanceof Uint8Array
      ? body
      : body instanceof ArrayBuffer
        ? new Uint8Array(body)
        : new TextEncoder().encode(String(body ?? ''));
  return (async function* () {
    yield bytes;
  })();
}

/** Collects a downloaded body (fine for small files; stream big ones). */
export async function readAll(body: AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    total += chunk.byteLength;
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

for (const name of OPERATION_NAMES) {
  Object.defineProperty(DocexClientBase.prototype, camelCase(name), {
    value: function (this: DocexClientBase, ...args: unknown[]) {
      return (this.call as (n: string, ...a: unknown[]) => Promise<unknown>)(name, ...args);
    },
    writable: true,
    configurable: true,
  });
}

export type DocexClient = DocexClientBase & OperationMethods;
/** `new DocexClient(options)`: `call(name, input)` plus one camelCase method per operation. */
export const DocexClient = DocexClientBase as unknown as new (options: ClientOptions) => DocexClient;
