/**
 * The hand-off from a final task to the results: the document's data (from the task's answer when
 * it carries all that is needed, else fetch_document_data), the file's names, the review decision,
 * then the result set written (outputs/review.ts: into output, or review_dir when held). The row
 * becomes `done`; archive.ts moves its original in a job of its own.
 */
import { basename } from 'node:path';
import type { TaskResult } from '@docex/shared';
import { describe, type Effect, type FileRow } from '../domain/lifecycle.ts';
import { dataFromTask, templateSent } from '../domain/task-data.ts';
import { plannedArchive, type Archiving } from './archive.ts';
import { named } from './naming.ts';
import type { StepHost } from './step-host.ts';

/** What the lifecycle said to do with a final task. */
export type WriteResults = Extract<Effect, { kind: 'write-results' }>;

/**
 * Writes the results of `row` (as its poll found it), `current` being the row after the task's
 * answer was applied; `task` is null when no poll was needed (the lifecycle had the answer already).
 */
export async function writeResults(
  host: StepHost,
  archiving: Archiving,
  row: FileRow,
  current: FileRow,
  task: TaskResult | null,
  { documentId, outcome }: WriteResults,
) {
  const watch = host.watches.get(row.watch)!;
  // The task's answer may carry all the results need (domain/task-data.ts): one request less.
  const fromTask = dataFromTask(task, watch, templateSent(watch, row.route));
  let data = fromTask;
  try {
    data ??= await host.client.fetchDocumentData({ document_id: documentId });
  } catch (error) {
    host.metrics?.apiErrors.inc({ operation: 'fetch_document_data' });
    return void host.apply(current, { kind: 'poll-failed', error });
  }
  let files: string[];
  try {
    current = await named(host, watch, current, data);
    const review = await host.reviews.decide(watch, current, data, task);
    if (review) current = host.apply(current, { kind: 'review-decided', ...review }).row;
  } catch (error) {
    return void host.apply(current, { kind: 'results-failed', error });
  }
  const planned = current.review_path ?? (await plannedArchive(watch, current));
  try {
    files = await host.reviews.write(watch, current, data, {
      base: current.result_base ?? undefined,
      source: row.path,
      archivedTo: planned,
      sha256: row.sha256,
      task,
      outcome,
      sourceName: basename(row.path),
      message: host.db.mail.mailSourceOf(row.id),
      ...(fromTask ? { documentFrom: 'task' as const } : {}),
    });
  } catch (error) {
    const blocked = host.apply(current, { kind: 'results-failed', error });
    host.log.error(
      { file: row.path, err: describe(error), output: watch.output },
      'could not write the results; will retry',
    );
    return void blocked;
  }
  if (current.result_base !== null) host.results.written(watch, current.result_base, current.id);
  const done = host.apply(current, { kind: 'results-written' }).row;
  // Archived by its own job, as a done row left by a crash is: one route to archiving.
  if (done.state === 'done') archiving.planned(done.id, planned);
  host.log.debug({ file: row.path, documentId, outcome }, 'results written');
  if (done.review === null) host.events.emit('result-written', done, files);
}
