/**
 * An uploaded file's task is polled until it is final (poll_interval_ms, backing off), then its
 * results are written (write-results.ts). What the polls learn of how long a template's
 * extractions take sets when the next uploads are first polled (domain/poll-timing.ts).
 */
import { isFinalStatus, type TaskResult } from '@docex/shared';
import type { FileRow } from '../domain/lifecycle.ts';
import { firstPollDueMs, observePoll } from '../domain/poll-timing.ts';
import { decodeBatch } from '../domain/upload-batch.ts';
import type { Archiving } from './archive.ts';
import type { BatchUploads } from './batch-upload.ts';
import { extractionKey, type ExtractionTimes } from './extraction-times.ts';
import type { StepHost } from './step-host.ts';
import { writeResults } from './write-results.ts';

export interface PollSteps {
  timing: ExtractionTimes;
  /** A file sent with others finds its own answer among its batch's (batch-upload.ts). */
  batches: BatchUploads;
  archiving: Archiving;
}

export class Polls {
  private readonly host: StepHost;
  private readonly timing: ExtractionTimes;
  private readonly batches: BatchUploads;
  private readonly archiving: Archiving;

  constructor(host: StepHost, steps: PollSteps) {
    this.host = host;
    this.timing = steps.timing;
    this.batches = steps.batches;
    this.archiving = steps.archiving;
  }

  /** An `uploaded` row's job: its task's result, then the document's data and the result files. */
  async poll(row: FileRow) {
    const { client } = this.host;
    const { extraction, pollsOut, uploadsSeen } = this.timing;
    const poll = this.host.config.poll;
    const key = extractionKey(row);
    const elapsedMs = row.uploaded_at === null ? 0 : this.host.now() - row.uploaded_at;
    const out = pollsOut.get(key);
    const newestOut = out ? this.host.now() - Math.max(...out.values()) : undefined; // never kept empty
    const firstPollMs = firstPollDueMs(this.timing.estimateOf(row), poll, elapsedMs, newestOut);
    let next = this.host.apply(row, { kind: 'poll-due', firstPollMs }).decision.effect;
    let current = row;
    let task: TaskResult | null = null;
    const seenWhole = uploadsSeen.has(row.id);
    if (next.kind === 'poll') {
      const first = row.poll_interval_ms === 0;
      // Only a poll whose answer will teach something holds first polls back (firstPollDueMs).
      const polls = seenWhole ? (out ?? new Map<number, number>()) : undefined; // nothing awaited since `out` was read
      if (polls) pollsOut.set(key, polls.set(row.id, this.host.now()));
      const batch = decodeBatch(row.upload_batch);
      try {
        task =
          (batch && this.batches.known(batch, row.task_id!)) ??
          (await client.fetchTasksResults({ task_id: row.task_id! }));
        // A file sent with others: the answer that is its own, on evidence (batch-upload.ts).
        const own = batch ? await this.batches.resolve(row, batch, task) : { row, task };
        if (!own) return;
        ({ row, task } = own);
      } catch (error) {
        this.host.metrics?.apiErrors.inc({ operation: 'fetch_tasks_results' });
        return void this.host.apply(row, { kind: 'poll-failed', error });
      } finally {
        polls?.delete(row.id);
        if (polls?.size === 0) pollsOut.delete(key);
      }
      this.host.run.reachable();
      if (row.uploaded_at !== null)
        extraction.set(
          key,
          observePoll(
            this.timing.estimateOf(row),
            {
              elapsedMs: this.host.now() - row.uploaded_at,
              final: isFinalStatus(task.status),
              first,
              previousMs: row.updated_at - row.uploaded_at,
              seenWhole,
            },
            poll,
          ),
        );
      const answered = this.host.apply(row, { kind: 'task', result: task });
      next = answered.decision.effect;
      if (next.kind !== 'write-results' && task.status !== 'IN PROGRESS' && answered.row.state === 'uploaded')
        this.host.log.warn({ file: row.path, status: task.status }, 'unknown task status; still waiting');
      current = answered.row;
    }
    // Waiting no more (final, failed, timed out): its polls have nothing left to teach.
    if (current.state !== 'uploaded') uploadsSeen.delete(row.id);
    if (next.kind !== 'write-results') return;
    await writeResults(this.host, this.archiving, row, current, task, next);
  }
}
