/**
 * A done row's original goes where on_success says (moved to processed_dir, deleted or kept), or,
 * when review rules fired, into review_dir to wait for a person. The only route to `archived`,
 * whether the results were just written or a crash left the row done.
 */
import { lstat, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import type { WatchConfig } from '../config/config.ts';
import { freeTarget } from '../common/files.ts';
import { movedInto, moveInto } from '../common/move.ts';
import { crashPoint } from '../common/crash-point.ts';
import { describe, reviewStepOf, type FileRow } from '../domain/lifecycle.ts';
import type { StepHost } from './step-host.ts';

/** Where the original will go after success, written into the JSON before it moves (corrected after if need be). */
export async function plannedArchive(watch: WatchConfig, row: FileRow): Promise<string | null> {
  if (watch.on_success === 'move') return freeTarget(watch.processed_dir!, row.archive_rel ?? row.rel);
  return watch.on_success === 'keep' ? row.path : null;
}

export class Archiving {
  private readonly host: StepHost;
  /** Done rows whose results this process wrote → where their JSON says the original goes. */
  private readonly plannedArchives = new Map<number, string | null>();

  constructor(host: StepHost) {
    this.host = host;
  }

  /** The results of a done row were written saying its original goes to `planned`. */
  planned(rowId: number, planned: string | null) {
    this.plannedArchives.set(rowId, planned);
  }

  /** A `done` row's job: its original archived (or held for review), the row `archived`. */
  async archive(row: FileRow) {
    const { log, metrics } = this.host;
    const watch = this.host.watches.get(row.watch)!;
    // Where the JSON written by this process says the original goes; unknown after a restart, so
    // the JSON is then corrected whatever the target.
    let planned = this.plannedArchives.get(row.id);
    // The row's `done` is committed before its original moves: a crash after the move then
    // finds the source gone and only records it (never polls and writes the results again).
    await this.host.db.durable();
    const step = reviewStepOf(row);
    if (step === 'hold') return this.holdForReview(watch, row);
    // An approved file's original waits in review_dir: it is archived from there.
    const source = row.review_path ?? row.path;
    let movedTo: string | undefined;
    try {
      if (step === 'release') {
        const released = await this.host.reviews.release(watch, row, () => plannedArchive(watch, row));
        if (released) {
          planned = released.planned;
          this.host.events.emit('result-written', row, released.files);
        }
      }
      if (watch.on_success === 'move') {
        const there = await lstat(source).then(
          () => true,
          () => false,
        );
        // Gone from its place: a move a crash cut short before its commit put it in processed_dir.
        const target = there
          ? await moveInto(source, watch.processed_dir!, row.archive_rel ?? row.rel)
          : await movedInto(watch.processed_dir!, row.archive_rel ?? row.rel, {
              ino: row.ino,
              size: row.size,
              mtimeMs: row.mtime_ms,
            });
        if (there) crashPoint('original-moved');
        if (target) {
          movedTo = target;
          if (row.document_id !== null && target !== planned)
            await this.host.results.recordArchive(
              watch,
              basename(row.path),
              row.document_id,
              target,
              row.result_base,
            );
        }
      } else if (watch.on_success === 'delete') {
        await rm(source, { force: true });
      }
    } catch (error) {
      this.host.apply(row, { kind: 'archive-failed', error });
      log.warn({ file: row.path, err: describe(error) }, 'could not archive the source file; will retry');
      return;
    }
    this.plannedArchives.delete(row.id);
    const archived = this.host.apply(row, { kind: 'archived', path: movedTo }).row;
    metrics?.processed.inc({ outcome: row.outcome ?? 'processed' });
    this.host.events.emit('file-archived', archived);
  }

  /** Review rules fired: the original into review_dir, then the row waits in `review` for a person. */
  private async holdForReview(watch: WatchConfig, row: FileRow) {
    try {
      await this.host.reviews.hold(watch, row);
    } catch (error) {
      this.host.apply(row, { kind: 'archive-failed', error });
      this.host.log.warn(
        { file: row.path, err: describe(error), review_dir: watch.review_dir },
        'could not move the file into the review folder; will retry',
      );
      return;
    }
    this.plannedArchives.delete(row.id);
    const held = this.host.apply(row, { kind: 'held-for-review' }).row;
    this.host.log.info({ file: row.path, original: row.review_path, review: held.review }, 'held for review');
    this.host.events.emit('file-held-for-review', held);
  }
}
