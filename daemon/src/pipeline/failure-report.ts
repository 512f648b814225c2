/** A failed file's last step: into the failed folder with <name>.error.json beside it (just the report if it is gone). */
import { lstat } from 'node:fs/promises';
import type { WatchConfig } from '../config/config.ts';
import { freeTarget, noFailureThere, noReportThere, writeAtomic } from '../common/files.ts';
import { moveInto } from '../common/move.ts';
import { describe, type FileRow } from '../domain/lifecycle.ts';
import type { StepHost } from './step-host.ts';

export type ReportHost = Pick<StepHost, 'db' | 'log' | 'apply'>;

/** A failed file moves to the failed folder with <name>.error.json beside it (just the report if it is gone). */
export async function reportFailure(host: ReportHost, watch: WatchConfig, row: FileRow) {
  const { log } = host;
  await host.db.durable(); // `failed` (and its reason) is committed before the file moves
  try {
    const there = await lstat(row.path).then(
      () => true,
      () => false,
    );
    // A name with no other file's failure report beside it: each failed file keeps its own.
    const target = there
      ? await moveInto(row.path, watch.failed_dir, row.rel, noFailureThere)
      : await freeTarget(watch.failed_dir, row.rel, { free: noReportThere });
    const report = {
      file: row.rel,
      status: 'failed',
      reason: row.reason,
      attempts: row.attempts,
      failed_at: new Date(row.updated_at).toISOString(),
      task_id: row.task_id,
      document_id: row.document_id,
      ...(there ? {} : { note: 'the file itself was no longer there' }),
    };
    await writeAtomic(`${target}.error.json`, `${JSON.stringify(report, null, 2)}\n`);
    host.apply(row, { kind: 'failure-reported', path: target });
  } catch (error) {
    host.apply(row, { kind: 'report-failed', error });
    log.warn({ file: row.path, err: describe(error) }, 'could not move the failed file; will retry');
  }
}
