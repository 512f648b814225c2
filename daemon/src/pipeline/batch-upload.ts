/**
 * Batched uploads, the shell (issue #42): files due at once for the same watch and route go in one
 * upload_file request, and each batched file's poll finds its own child task. The decisions are
 * domain/upload-batch.ts; the per-file steps (a file's checks before upload, one file's request and
 * what its answer or error does) stay the pipeline's and come in through `BatchHost`.
 *
 * Crash safety: every file of a request is `uploading` with the request's names in `upload_batch`,
 * committed before the request leaves, so a kill -9 mid-request ends each file as one mid-upload
 * alone does (sent again after the restart; a DUPLICATE answer is handled). A lost answer (a reset,
 * a time-out, a 5xx) is each file's failed upload, as alone; a request refused as a whole (a 4xx
 * that took nothing) sends each file alone.
 */
import { basename } from 'node:path';
import type { Logger } from 'pino';
import { isFinalStatus, type DocexClient, type TaskResult } from '@docex/shared';
import type { FileRow, Observation } from '../domain/lifecycle.ts';
import type { Routed } from '../domain/routes.ts';
import {
  ALONE,
  encodeBatch,
  groupUploads,
  placeInBatch,
  refusedWhole,
  type Placement,
  type UploadBatch,
} from '../domain/upload-batch.ts';
import type { StateDb } from '../store/state.ts';
import { crashPoint } from '../common/crash-point.ts';

/** A file ready to go: its row (still `stable`) and where it is sent. */
export interface ReadyFile {
  row: FileRow;
  route: Routed;
}

/** What the batch steps need of the pipeline. */
export interface BatchHost {
  db: StateDb;
  client: DocexClient;
  log: Logger;
  apply(row: FileRow, observation: Observation): FileRow;
  /** The file's checks before upload (route, still there, unchanged); undefined: it does not go now. */
  readyToGo(row: FileRow): Promise<ReadyFile | undefined>;
  /** One file's request, the row already `uploading` and committed. */
  send(uploading: FileRow, route: Routed): Promise<void>;
  /** The service answered: the row's task id is stored. */
  answered(uploading: FileRow, taskId: string): void;
  /** The request failed: the row's upload failed as alone it would. */
  failed(uploading: FileRow, error: unknown): void;
  priority(): number;
  stopped(): boolean;
}

/** Bytes of files in one request (their sizes as last seen). */
const MAX_BATCH_BYTES = 32 * 1024 * 1024;
/** Batches whose task answers are kept while their files are placed (oldest forgotten first). */
const KEPT_BATCHES = 2000;

const nameOf = (row: FileRow) => basename(row.path).normalize('NFC');
const targetOf = (route: Routed) =>
  JSON.stringify([route.template_id ?? null, route.folder_id ?? null, route.metadata ?? null]);

export class BatchUploads {
  private readonly host: BatchHost;
  /** Per batch (its task ids): the answers seen, so a file's placement reuses its siblings' polls. */
  private readonly answers = new Map<string, Map<string, TaskResult>>();

  constructor(host: BatchHost) {
    this.host = host;
  }

  /**
   * Due rows (already past `upload-due`) in requests: the same watch and route, at most `maxFiles`
   * files and 32 MiB each; the first `maxJobs` requests, and the rows left for the next turn.
   */
  group(rows: FileRow[], maxFiles: number, maxJobs: number): { jobs: FileRow[][]; left: FileRow[] } {
    const byId = new Map(rows.map((r) => [r.id, r]));
    const groups = groupUploads(
      rows.map((r) => ({
        id: r.id,
        target: `${r.watch}\0${r.route ?? ''}`,
        name: nameOf(r),
        size: r.size,
        alone: r.upload_batch === ALONE,
      })),
      { maxFiles, maxBytes: MAX_BATCH_BYTES },
    ).map((ids) => ids.map((id) => byId.get(id)!));
    return { jobs: groups.slice(0, maxJobs), left: groups.slice(maxJobs).flat() };
  }

  /** One file alone: the per-file path (upload_batch cleared, so a later poll is a lone one's). */
  async single(ready: ReadyFile) {
    const { db, apply } = this.host;
    let row = ready.row;
    if (row.upload_batch != null) row = apply(row, { kind: 'upload-batch', batch: null });
    const uploading = apply(row, { kind: 'upload-starting' });
    if (uploading.state !== 'uploading') return;
    await db.durable(); // the attempt is on disk before the request leaves
    await this.host.send(uploading, ready.route);
  }

  /** The job of a group of due rows: each checked, then sent together (or alone when one is left). */
  async upload(rows: FileRow[]) {
    const ready: ReadyFile[] = [];
    for (const row of rows) {
      const r = await this.host.readyToGo(row);
      if (r) ready.push(r);
    }
    if (this.host.stopped()) return;
    // A reloaded config may have changed a route since the rows were grouped.
    const byTarget = new Map<string, ReadyFile[]>();
    for (const r of ready) {
      const key = targetOf(r.route);
      byTarget.set(key, [...(byTarget.get(key) ?? []), r]);
    }
    for (const group of byTarget.values()) {
      if (group.length === 1) await this.single(group[0]!);
      else await this.together(group);
    }
  }

  private async together(group: ReadyFile[]) {
    const { db, client, log, apply } = this.host;
    const names = group.map((r) => nameOf(r.row));
    const route = group[0]!.route;
    // Each row says which request it is in, committed with `uploading` before the request leaves.
    const uploading = group.map(({ row }, index) => {
      const marked = apply(row, { kind: 'upload-batch', batch: encodeBatch({ names, index, tasks: null }) });
      return apply(marked, { kind: 'upload-starting' });
    });
    await db.durable();
    if (uploading.some((row) => row.state !== 'uploading')) {
      // Not all could start (none should fail to: nothing waits between the checks and here): the
      // request's names would not be the files sent, so the ones that did go alone.
      for (const row of uploading.filter((r) => r.state === 'uploading'))
        await this.host.send(apply(row, { kind: 'upload-batch', batch: null }), route);
      return;
    }
    let taskIds: string[];
    try {
      const answer = await client.uploadFile(
        {
          files: group.map(({ row }, i) => ({ path: row.path, fileName: names[i]! })),
          template_id: route.template_id,
          folder_id: route.folder_id,
          metadata: route.metadata,
        },
        { priority: this.host.priority() },
      );
      taskIds = answer.task_ids;
      crashPoint('batch-answered');
    } catch (error) {
      if (refusedWhole(error)) {
        // Nothing was taken: each file goes alone, and only a bad one fails, with its own answer.
        log.info(
          { files: group.length, err: (error as Error).message },
          'a batched upload was refused; uploading its files one by one',
        );
        for (const row of uploading) {
          if (this.host.stopped()) break;
          await this.host.send(apply(row, { kind: 'upload-batch', batch: null }), route);
        }
        return;
      }
      // Whether the service took the files is unknown: each file's upload failed, as alone.
      for (const row of uploading) this.host.failed(row, error);
      return;
    }
    for (const [index, row] of uploading.entries()) {
      const marked = apply(row, {
        kind: 'upload-batch',
        batch: encodeBatch({ names, index, tasks: taskIds }),
      });
      // One task id per file: tried by position, placed on evidence when its poll answers. One
      // task for the request: each file follows it until its children or its name tell.
      this.host.answered(marked, taskIds.length === names.length ? taskIds[index]! : taskIds[0]!);
    }
  }

  /**
   * A batched row's poll answered: the answer that is its own to go on with (an IN PROGRESS one
   * while the evidence is not in), or undefined when the row was given another step here.
   */
  async resolve(
    row: FileRow,
    batch: UploadBatch,
    result: TaskResult,
  ): Promise<{ row: FileRow; task: TaskResult } | undefined> {
    const { apply } = this.host;
    const placed = await this.place(batch, row.task_id!, result);
    const waiting = (r: FileRow, message: string) => ({
      row: r,
      task: { ...result, status: 'IN PROGRESS' as const, status_message: message },
    });
    switch (placed.kind) {
      case 'own':
        if (placed.taskId === row.task_id) return { row, task: placed.result };
        // Its own child was another than the one tried by position: the DB records the right one.
        return {
          row: apply(row, { kind: 'upload-batch', batch: row.upload_batch ?? null, taskId: placed.taskId }),
          task: placed.result,
        };
      case 'children': {
        const next = { ...batch, tasks: placed.tasks };
        const own = placed.tasks.length === batch.names.length ? placed.tasks[batch.index]! : row.task_id!;
        const r = apply(row, { kind: 'upload-batch', batch: encodeBatch(next), taskId: own });
        return waiting(r, 'its upload listed the child tasks; following its own');
      }
      case 'wait':
        return waiting(row, "waiting for the other files of its upload to tell which task is this one's");
      case 'not-taken':
        this.host.log.warn(
          { file: row.path },
          'its batched upload took another file only; sending it again alone',
        );
        apply(row, { kind: 'upload-not-taken' });
        return undefined;
      case 'unplaced':
        apply(row, { kind: 'poll-failed', error: placed.error });
        return undefined;
    }
  }

  /** A final answer already read for this task by a sibling's placement (no request needed). */
  known(batch: UploadBatch, taskId: string): TaskResult | undefined {
    const end = this.answers.get(keyOf(batch))?.get(taskId);
    return end && isFinalStatus(end.status) ? end : undefined;
  }

  /**
   * Which answer is the row's, after its poll of `taskId` answered `result`. When its own answer is
   * final but not evidence enough (a DUPLICATE or FAILED names no file of the batch), the siblings'
   * tasks not known final are asked once.
   */
  async place(batch: UploadBatch, taskId: string, result: TaskResult): Promise<Placement> {
    const ends = this.endsOf(batch);
    ends.set(taskId, result);
    let placed = placeInBatch(batch, { taskId, result }, ends);
    const tasks = batch.tasks ?? [];
    if (placed.kind === 'wait' && isFinalStatus(result.status) && tasks.length === batch.names.length) {
      for (const other of tasks) {
        if (ends.has(other) && isFinalStatus(ends.get(other)!.status)) continue;
        try {
          ends.set(other, await this.host.client.fetchTasksResults({ task_id: other }));
        } catch {
          break; // asked again at its next poll
        }
      }
      placed = placeInBatch(batch, { taskId, result }, ends);
    }
    return placed;
  }

  private endsOf(batch: UploadBatch): Map<string, TaskResult> {
    const key = keyOf(batch);
    let ends = this.answers.get(key);
    if (!ends) {
      this.answers.set(key, (ends = new Map()));
      if (this.answers.size > KEPT_BATCHES) this.answers.delete(this.answers.keys().next().value!);
    }
    return ends;
  }
}

const keyOf = (batch: UploadBatch) => JSON.stringify([batch.names, batch.tasks]);
