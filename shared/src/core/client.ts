/**
 * The typed client. Every operation goes through `call`, which validates the input, sends it through
 * the transport, retries where safe, maps errors and checks the answer with zod. Pure: I/O, time and
 * randomness come in through the options.
 */
import type {
  CallArgs,
  CallFn,
  CallOptions,
  ClientOptions,
  InputOf,
  OperationMethods,
  OutputOf,
  BinaryResult,
} from './client-types.ts';
import { camelCase } from './client-types.ts';
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
  redactDeep,
} from './errors.ts';
import { fileNameFromContentDisposition, safeFileName } from './files.ts';
import { networkError } from './network-errors.ts';
import type { SettingTerms } from './hints.ts';
import {
  extractMany,
  rerunAll,
  uploadMany,
  type ExtractManyOptions,
  type ExtractManyResult,
  type ManyHost,
  type RerunAllOptions,
  type RerunAllResult,
  type UploadManyOptions,
  type UploadManyResult,
} from './many.ts';
import { getOperation, OPERATION_NAMES, type OperationName, type OperationSpec } from './operations.ts';
import {
  DEFAULT_WAIT_TIMEOUT_MS,
  sleepUnlessAborted,
  throwIfAborted,
  waitForTask,
  type WaitOptions,
  type WaitResult,
} from './poll.ts';
import { bodyIsReplayable, buildRequest } from './request.ts';
import { DEFAULT_RETRY, retryDelayMs, shouldRetry, type RetryPolicy } from './retry.ts';
import type { TaskResult, UploadResult } from './schemas.ts';
import { NOT_SENT_CODES, TransportError, type FileInput, type TransportResponse } from './transport.ts';

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

  /** uploadMany (many.ts): the files in as few requests as the API allows, without waiting. */
  uploadMany(
    files: readonly FileInput[],
    input: Omit<InputOf<'upload_file'>, 'files'> = {},
    options: UploadManyOptions = {},
  ): Promise<UploadManyResult> {
    return uploadMany(this.host, files, input, options);
  }

  /** extractMany (many.ts): the files uploaded in few requests, their tasks followed together. */
  extractMany(
    files: readonly FileInput[],
    input: Omit<InputOf<'upload_file'>, 'files'> = {},
    options: ExtractManyOptions = {},
  ): Promise<ExtractManyResult> {
    return extractMany(this.host, files, input, options);
  }

  /** rerunAll (many.ts): rerun_documents for any number of ids, in chunks of at most 500. */
  rerunAll(docIds: readonly number[], options: RerunAllOptions = {}): Promise<RerunAllResult> {
    return rerunAll(this.host, docIds, options);
  }

  /** This client as many.ts needs it. */
  private get host(): ManyHost {
    return {
      call: this.call.bind(this) as CallFn,
      logger: this.options.logger,
      sleep: this.options.sleep,
      elapsed: this.elapsed,
      now: this.now,
    };
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
