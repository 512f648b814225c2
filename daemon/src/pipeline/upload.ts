/**
 * A stable file is uploaded: alone, or with others of its watch and route in one request
 * (upload.batch_files, batch-upload.ts). The lifecycle says whether a due row goes (`upload-due`:
 * the same bytes processed or on their way keep it back); this step picks the rows that start now
 * within api.concurrency, checks each file once more, sends it and stores the task id the service
 * gave (group commit), and says how urgent uploads are beside polls (`priority`).
 */
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { crashPoint } from '../common/crash-point.ts';
import { describe, type FileRow, type SameBytes } from '../domain/lifecycle.ts';
import type { Routed } from '../domain/routes.ts';
import { BatchUploads, type ReadyFile } from './batch-upload.ts';
import type { ExtractionTimes } from './extraction-times.ts';
import type { Scheduler } from './scheduler.ts';
import { routed } from './stabilize.ts';
import type { JobKind, StepHost } from './step-host.ts';

/** See Uploads.priority. */
const UPLOAD_FIRST_SECONDS = 30;
/** Where the rate is not what bounds throughput (a high requests_per_second), the count still is. */
const UPLOAD_FIRST_MAX = 1000;

/** Tasks awaiting results below which uploads go first (Uploads.priority). */
export const uploadFirstCap = (requestsPerSecond: number) =>
  Math.min(UPLOAD_FIRST_MAX, requestsPerSecond * UPLOAD_FIRST_SECONDS);

/** What the upload step needs of the dispatcher's jobs. */
export interface UploadJobs {
  scheduler: Pick<Scheduler<JobKind>, 'has' | 'running' | 'spare' | 'stopped'>;
  /** Starts the row's upload as a job of the scheduler (leased while it runs). */
  start(row: FileRow, run: () => Promise<void>): void;
  /** The pipeline has stopped: leases are left as they are. */
  stopped(): boolean;
}

export class Uploads {
  private readonly host: StepHost;
  private readonly jobs: UploadJobs;
  private readonly timing: ExtractionTimes;
  /** Several files in one upload, and each one's own task (the poll step resolves them too). */
  readonly batches: BatchUploads;
  /** Hashes being uploaded now: a second row with the same bytes waits (checked before any await). */
  private readonly uploadingHashes = new Set<string>();
  /**
   * Task ids the service gave whose commit failed (a full disk): stored when work resumes, so the
   * file is not uploaded a second time.
   */
  private readonly unsavedAnswers = new Map<number, { row: FileRow; taskId: string }>();

  constructor(host: StepHost, jobs: UploadJobs, timing: ExtractionTimes) {
    this.host = host;
    this.jobs = jobs;
    this.timing = timing;
    this.batches = new BatchUploads({
      db: host.db,
      client: host.client,
      log: host.log,
      apply: (row, observation) => host.apply(row, observation).row,
      readyToGo: (row) => this.readyToGo(row),
      send: (row, route) => this.send(row, route),
      answered: (row, taskId) => this.answered(row, taskId),
      failed: (row, error) => this.failed(row, error),
      priority: () => this.priority(),
      stopped: () => jobs.scheduler.stopped,
    });
  }

  /**
   * Uploads go before polls and data fetches waiting for the same request slots while fewer than
   * UPLOAD_FIRST_SECONDS × requests_per_second tasks (at most UPLOAD_FIRST_MAX) wait for their
   * results, then take their turn:
   * under the rate limit, a batch sent first keeps the service extracting while its results are
   * fetched (bench/requests.bench.ts: 0.88x -> 0.93x of the bound; the last upload no longer
   * leaves the limiter idle through the last extraction), and a large drop still shows results
   * within about a minute rather than after its last upload.
   */
  priority(): number {
    const cap = uploadFirstCap(this.host.config.api.requests_per_second);
    return this.host.db.dueWork.awaitingResults(cap) < cap ? 1 : 0;
  }

  /** Starts the uploads due now: paused watches' probes first, then up to api.concurrency requests. */
  start(now: number) {
    const { db, config } = this.host;
    const { scheduler } = this.jobs;
    const limit = config.api.concurrency;
    /** Whether the row may go now (same bytes looked at before any await: two names of one content never both go). */
    const due = (row: FileRow): boolean => {
      if (scheduler.has(row.id) || scheduler.running('upload') >= limit) return false;
      const next = this.host.apply(row, { kind: 'upload-due', sameBytes: this.sameBytes(row) });
      if (next.decision.effect.kind !== 'upload') {
        if (next.row.state === 'uploaded')
          this.host.log.info(
            { file: row.path, documentId: next.row.document_id },
            'same content already processed: not uploaded again',
          );
        return false;
      }
      if (row.sha256) this.uploadingHashes.add(row.sha256);
      return true;
    };
    const done = (rows: FileRow[]) => {
      for (const r of rows) {
        if (r.sha256) this.uploadingHashes.delete(r.sha256);
        this.host.run.probeOver(r);
      }
    };
    const starting = (rows: FileRow[], job: () => Promise<void>) => {
      const [first, ...others] = rows;
      for (const other of others) db.dueWork.lease(other.id);
      this.jobs.start(first!, () =>
        job().finally(() => {
          done(rows);
          if (!this.jobs.stopped()) for (const other of others) db.dueWork.release(other.id);
        }),
      );
    };
    // A probe goes alone; one that does not start now gives up its mark (its watch probes again when next due).
    for (const row of this.host.run.dueProbes(now))
      if (due(row)) starting([row], () => this.batches.upload([row]));
      else this.host.run.probeOver(row);
    const spare = scheduler.spare('upload', limit);
    if (spare <= 0) return;
    const perRequest = config.upload.batch_files;
    if (perRequest <= 1) {
      for (const row of db.dueWork.dueForUpload(now, spare))
        if (due(row)) starting([row], () => this.batches.upload([row]));
      return;
    }
    // Batched (batch-upload.ts): up to `spare` requests of up to batch_files files each.
    const ready = db.dueWork.dueForUpload(now, spare * perRequest).filter(due);
    const { jobs, left } = this.batches.group(ready, perRequest, spare);
    for (const r of left) if (r.sha256) this.uploadingHashes.delete(r.sha256);
    for (const rows of jobs) starting(rows, () => this.batches.upload(rows));
  }

  /**
   * After a pause for lack of room: the task ids the service gave meanwhile are stored; an upload
   * whose outcome could not be stored goes again (as after a restart: a DUPLICATE answer is handled).
   * Rows whose other steps were rolled back are simply due again; files whose discovery was rolled
   * back are found by the rescan the daemon runs on `disk-resumed`.
   */
  redoAfterDiskPause() {
    const { db, log } = this.host;
    for (const { row, taskId } of this.unsavedAnswers.values()) this.storeAnswer(row, taskId);
    for (const row of db.files.inState('uploading'))
      if (!this.jobs.scheduler.has(row.id)) {
        this.host.apply(row, { kind: 'restarted' });
        log.warn(
          { file: row.path },
          'the outcome of this upload could not be stored (the disk was full); it will be sent again (a DUPLICATE answer is handled)',
        );
      }
    db.flush();
  }

  /** Other rows with the row's bytes: processed (reused), or being uploaded by this run or waiting for their task. */
  private sameBytes(row: FileRow): SameBytes {
    const { db } = this.host;
    if (!row.sha256) return { doneDocumentId: null, inFlight: false };
    const done = db.files.completedWithHash(row.sha256, row.id);
    if (done) return { doneDocumentId: done.document_id!, inFlight: false };
    return {
      doneDocumentId: null,
      inFlight:
        this.uploadingHashes.has(row.sha256) || db.files.inFlightWithHash(row.sha256, row.id) !== undefined,
    };
  }

  /** A file's checks before its upload: its route (a reloaded config may have changed it), still there and unchanged. */
  private async readyToGo(row: FileRow): Promise<ReadyFile | undefined> {
    const watch = this.host.watches.get(row.watch)!;
    const route = routed(this.host, row, watch);
    if (!route) return undefined;
    const info = await stat(row.path).catch(() => undefined);
    if (!info) return void this.host.apply(row, { kind: 'file-vanished' });
    const seen = this.host.apply(row, {
      kind: 'file-seen',
      size: info.size,
      mtimeMs: Math.floor(info.mtimeMs),
    });
    if (seen.decision.effect.kind !== 'upload' || this.jobs.scheduler.stopped) return undefined;
    return { row: seen.row, route };
  }

  /** One file's request (the row `uploading`, committed), and what its answer or error does. */
  private async send(uploading: FileRow, route: Routed) {
    let taskId: string;
    try {
      const answer = await this.host.client.uploadFile(
        {
          files: [{ path: uploading.path, fileName: basename(uploading.path).normalize('NFC') }],
          template_id: route.template_id,
          folder_id: route.folder_id,
          metadata: route.metadata,
        },
        { priority: this.priority() },
      );
      taskId = answer.task_ids[0]!;
    } catch (error) {
      return this.failed(uploading, error);
    }
    this.answered(uploading, taskId);
  }

  private failed(uploading: FileRow, error: unknown) {
    this.host.metrics?.apiErrors.inc({ operation: 'upload_file' });
    this.host.run.uploadFailed(uploading.watch);
    const after = this.host.apply(uploading, { kind: 'upload-failed', error });
    if (after.row.state === 'stable' && after.decision.effect.kind === 'none')
      this.host.log.warn(
        { file: uploading.path, err: describe(error), retryAt: new Date(after.row.next_at).toISOString() },
        'upload failed; will retry',
      );
  }

  private answered(uploading: FileRow, taskId: string) {
    // Outside the request's try: a commit that fails (a full disk) is no failed upload.
    this.storeAnswer(uploading, taskId);
    this.host.metrics?.uploads.inc();
    this.host.run.reachable();
    this.host.run.uploadAccepted(uploading.watch);
    this.host.log.debug({ file: uploading.path, taskId }, 'uploaded');
  }

  /**
   * Stores the task id the service gave, committed with the batch (group commit): a crash before
   * that commit sends the file again, as one during the request would, and the next upload's
   * `durable()` commits it, so at most api.concurrency answers are ever uncommitted. Kept in memory
   * until the commit succeeded (a commit that failed for lack of room: see redoAfterDiskPause).
   */
  private storeAnswer(uploading: FileRow, taskId: string) {
    this.unsavedAnswers.set(uploading.id, { row: uploading, taskId });
    this.host.apply(uploading, {
      kind: 'upload-answered',
      taskId,
      firstPollMs: this.timing.uploadAnswered(uploading),
    });
    crashPoint('answer-stored');
    this.host.db.durable().then(
      () => this.unsavedAnswers.delete(uploading.id),
      () => undefined, // the batch's failure pauses work (onCommitFailed); the answer is stored on resume
    );
  }
}
