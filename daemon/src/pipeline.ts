/**
 * The pipeline: stability check, upload, task polling, results, archiving. Each step reads the
 * state DB, commits the next state, then does its side effect; a crash resumes from the DB.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, rm, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Logger } from 'pino';
import {
  DocexApiError,
  DocexError,
  DocexInputError,
  type DocexClient,
  type TaskResult,
} from '../../shared/src/core/index.ts';
import type { Config, WatchConfig } from './config.ts';
import { inside, moveInto, writeAtomic } from './files.ts';
import type { Metrics } from './metrics.ts';
import { writeResults } from './results.ts';
import type { FileRow, StateDb } from './state.ts';

export interface PipelineDeps {
  db: StateDb;
  client: DocexClient;
  config: Config;
  log: Logger;
  metrics?: Metrics;
  now?: () => number;
}

const sha256File = (path: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('end', () => resolve(hash.digest('hex')))
      .on('error', reject);
  });

/** Permanent: the same request would fail again (4xx other than 408/429, bad input, unusable answer). */
const isPermanent = (error: unknown) =>
  error instanceof DocexInputError ||
  (error instanceof DocexError &&
    !error.retryable &&
    (!(error instanceof DocexApiError) || error.status < 500));

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

export class Pipeline {
  private readonly deps: PipelineDeps;
  private readonly now: () => number;
  private readonly inflight = new Set<Promise<void>>();
  private readonly watches: Map<string, WatchConfig>;
  private stopping = false;
  private ticking: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(deps: PipelineDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.watches = new Map(deps.config.watch.map((w) => [w.path, w]));
  }

  /** After a restart: uploads cut short go again (see docs/daemon.md), stability is checked anew. */
  recover() {
    const { db, log } = this.deps;
    const now = this.now();
    for (const row of db.inState('uploading', 1_000_000)) {
      db.update(row.id, { state: 'stable', next_at: now }, now);
      log.warn(
        { file: row.path },
        'upload was interrupted before its task id was stored; it will be sent again (a DUPLICATE answer is handled)',
      );
    }
    for (const row of db.inState('discovered', 1_000_000)) db.update(row.id, { stable_since: now }, now);
  }

  /** A file seen by the watcher or a scan. */
  candidate(watch: WatchConfig, path: string, rel: string, size: number, mtimeMs: number) {
    const { db, log } = this.deps;
    const row = db.current(path);
    if (row) {
      if (['discovered', 'stable', 'uploading', 'uploaded', 'done'].includes(row.state)) return;
      if (row.state === 'failed' && !row.finalized) return;
      if (row.size === size && row.mtime_ms === mtimeMs) return; // kept in place after success, unchanged
    }
    const created = db.discover(watch.path, path, rel, size, mtimeMs, this.now());
    log.info({ file: path, id: created.id }, 'discovered');
    this.deps.metrics?.discovered.inc();
  }

  start(intervalMs = 250) {
    const loop = async () => {
      if (this.stopping) return;
      this.ticking = this.tick().catch((error: unknown) =>
        this.deps.log.error({ err: describe(error) }, 'pipeline step failed; retrying'),
      );
      await this.ticking;
      if (!this.stopping) this.timer = setTimeout(() => void loop(), intervalMs);
    };
    void loop();
  }

  /** Stops starting new work and lets uploads and polls in flight reach a state in the DB. */
  async stop() {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    await this.ticking;
    await Promise.allSettled([...this.inflight]);
  }

  async tick() {
    await this.stabilize();
    this.startUploads();
    await this.poll();
    await this.archive();
    await this.finalizeFailures();
  }

  /** Idle: nothing waiting in the pipeline (used by the demo and tests). */
  idle(): boolean {
    const c = this.deps.db.counts();
    return (
      c.discovered + c.stable + c.uploading + c.uploaded + c.done === 0 &&
      this.inflight.size === 0 &&
      this.deps.db.inState('failed').every((r) => r.finalized)
    );
  }

  private async stabilize() {
    const { db, log } = this.deps;
    for (const row of db.inState('discovered')) {
      const watch = this.watches.get(row.watch);
      let info;
      try {
        info = await lstat(row.path);
      } catch {
        db.update(
          row.id,
          { state: 'failed', reason: 'the file disappeared before it was uploaded', finalized: 1 },
          this.now(),
        );
        log.warn({ file: row.path }, 'file disappeared before upload');
        continue;
      }
      const mtime = Math.floor(info.mtimeMs);
      const now = this.now();
      if (info.size !== row.size || mtime !== row.mtime_ms) {
        db.update(row.id, { size: info.size, mtime_ms: mtime, stable_since: now }, now);
        continue;
      }
      if (now - row.stable_since < (watch?.stable_ms ?? 2000)) continue;
      const sha256 = await sha256File(row.path);
      const after = await stat(row.path);
      if (after.size !== info.size || Math.floor(after.mtimeMs) !== mtime) continue; // still being written
      db.update(row.id, { state: 'stable', sha256, next_at: this.now() }, this.now());
      log.debug({ file: row.path, sha256 }, 'stable');
    }
  }

  private startUploads() {
    const { db, config } = this.deps;
    if (this.stopping) return;
    const free = config.api.concurrency - this.inflight.size;
    if (free <= 0) return;
    for (const row of db.due('stable', this.now(), free)) {
      const job = this.upload(row).finally(() => this.inflight.delete(job));
      this.inflight.add(job);
    }
  }

  private async upload(row: FileRow) {
    const { db, client, config, log, metrics } = this.deps;
    const now = this.now();
    const done = db.completedWithHash(row.sha256!, row.id);
    if (done) {
      db.update(
        row.id,
        {
          state: 'uploaded',
          task_id: null,
          document_id: done.document_id,
          outcome: 'duplicate',
          next_at: now,
        },
        now,
      );
      log.info(
        { file: row.path, documentId: done.document_id },
        'same content already processed: not uploaded again',
      );
      return;
    }
    if (db.inFlightWithHash(row.sha256!, row.id)) {
      db.update(row.id, { next_at: now + 2000 }, now);
      return;
    }
    const watch = this.watches.get(row.watch)!;
    const info = await stat(row.path).catch(() => undefined);
    if (!info || info.size !== row.size || Math.floor(info.mtimeMs) !== row.mtime_ms) {
      db.update(
        row.id,
        {
          state: 'discovered',
          stable_since: now,
          size: info?.size ?? row.size,
          mtime_ms: Math.floor(info?.mtimeMs ?? row.mtime_ms),
        },
        now,
      );
      return;
    }
    db.update(row.id, { state: 'uploading', attempts: row.attempts + 1 }, now);
    try {
      const answer = await client.uploadFile({
        files: [{ path: row.path, fileName: basename(row.path).normalize('NFC') }],
        template_id: watch.template_id,
        folder_id: watch.folder_id,
        metadata: watch.metadata,
      });
      const interval = config.poll.interval_ms;
      db.update(
        row.id,
        {
          state: 'uploaded',
          task_id: answer.task_ids[0]!,
          next_at: this.now() + interval,
          poll_interval_ms: interval,
        },
        this.now(),
      );
      metrics?.uploads.inc();
      log.info({ file: row.path, taskId: answer.task_ids[0] }, 'uploaded');
    } catch (error) {
      metrics?.apiErrors.inc({ operation: 'upload_file' });
      if (isPermanent(error) || row.attempts + 1 >= config.upload.max_attempts) {
        this.fail(row, `upload refused: ${describe(error)}`);
      } else {
        const wait = Math.min(config.upload.retry_max_ms, config.upload.retry_base_ms * 2 ** row.attempts);
        db.update(
          row.id,
          { state: 'stable', next_at: this.now() + wait, reason: describe(error) },
          this.now(),
        );
        log.warn({ file: row.path, err: describe(error), retryInMs: wait }, 'upload failed; will retry');
      }
    }
  }

  /** Open tasks, oldest due first, a bounded number per round, each with its own backoff. */
  private async poll() {
    const { db, config } = this.deps;
    const due = db.due('uploaded', this.now(), config.poll.batch_size);
    await Promise.all(due.map((row) => this.pollOne(row)));
  }

  private async pollOne(row: FileRow) {
    const { client, config, log } = this.deps;
    if (row.task_id === null && row.document_id !== null)
      return this.succeed(row, row.document_id, 'duplicate', null);
    let result: TaskResult;
    try {
      result = await client.fetchTasksResults({ task_id: row.task_id! });
    } catch (error) {
      this.deps.metrics?.apiErrors.inc({ operation: 'fetch_tasks_results' });
      if (isPermanent(error)) return this.fail(row, `task ${row.task_id}: ${describe(error)}`);
      return this.later(row, describe(error));
    }
    if (result.status === 'DONE' && result.document_id != null)
      return this.succeed(row, result.document_id, 'processed', result);
    if (result.status === 'DUPLICATE' && result.document_id != null)
      return this.succeed(row, result.document_id, 'duplicate', result);
    if (result.status === 'FAILED')
      return this.fail(row, `extraction failed: ${result.status_message || 'no message'}`);
    if (result.status === 'DONE' || result.status === 'DUPLICATE')
      return this.fail(row, `task ${result.status} without a document id`);
    if (this.now() - row.updated_at > config.poll.task_timeout_ms)
      return this.fail(row, `task ${row.task_id} not finished after ${config.poll.task_timeout_ms} ms`);
    if (result.status !== 'IN PROGRESS')
      log.warn({ file: row.path, status: result.status }, 'unknown task status; still waiting');
    this.later(row);
  }

  private later(row: FileRow, reason?: string) {
    const { db, config } = this.deps;
    const interval = Math.min(
      config.poll.max_interval_ms,
      Math.max(config.poll.interval_ms, Math.round(row.poll_interval_ms * 1.5)),
    );
    db.update(
      row.id,
      { next_at: this.now() + interval, poll_interval_ms: interval, ...(reason ? { reason } : {}) },
      this.now(),
    );
  }

  private async succeed(
    row: FileRow,
    documentId: number,
    outcome: 'processed' | 'duplicate',
    task: TaskResult | null,
  ) {
    const { db, client, log } = this.deps;
    const watch = this.watches.get(row.watch)!;
    db.update(row.id, { document_id: documentId, outcome }, this.now());
    try {
      const data = await client.fetchDocumentData({ document_id: documentId });
      await writeResults(
        watch.output,
        watch.formats,
        data,
        { source: row.path, sha256: row.sha256, task, outcome },
        basename(row.path),
      );
    } catch (error) {
      if (isPermanent(error)) return this.fail(row, `results for document ${documentId}: ${describe(error)}`);
      return this.later(row, describe(error));
    }
    db.update(row.id, { state: 'done', reason: null }, this.now());
    log.info({ file: row.path, documentId, outcome }, 'results written');
    await this.archiveOne({ ...row, state: 'done' });
  }

  private async archive() {
    for (const row of this.deps.db.inState('done')) await this.archiveOne(row);
  }

  private async archiveOne(row: FileRow) {
    const { db, log, metrics } = this.deps;
    const watch = this.watches.get(row.watch)!;
    try {
      if (watch.on_success === 'move') {
        const there = await stat(row.path).then(
          () => true,
          () => false,
        );
        if (there) await moveInto(row.path, watch.processed_dir!, row.rel);
      } else if (watch.on_success === 'delete') {
        await rm(row.path, { force: true });
      }
      db.update(row.id, { state: 'archived' }, this.now());
      metrics?.processed.inc({ outcome: row.outcome ?? 'processed' });
    } catch (error) {
      log.warn({ file: row.path, err: describe(error) }, 'could not archive the source file; will retry');
    }
  }

  private fail(row: FileRow, reason: string) {
    const { db, log, metrics } = this.deps;
    db.update(row.id, { state: 'failed', outcome: 'failed', reason, finalized: 0 }, this.now());
    metrics?.failed.inc();
    log.error({ file: row.path, reason }, 'failed');
  }

  /** Failed files move to the failed folder with <name>.error.json beside them. */
  private async finalizeFailures() {
    const { db, log } = this.deps;
    for (const row of db.inState('failed', 1_000_000).filter((r) => !r.finalized)) {
      const watch = this.watches.get(row.watch);
      if (!watch) continue;
      try {
        const there = await stat(row.path).then(
          () => true,
          () => false,
        );
        const target = there
          ? await moveInto(row.path, watch.failed_dir, row.rel)
          : inside(watch.failed_dir, row.rel);
        const report = {
          file: row.rel,
          status: 'failed',
          reason: row.reason,
          attempts: row.attempts,
          failed_at: new Date(this.now()).toISOString(),
          task_id: row.task_id,
          document_id: row.document_id,
        };
        await writeAtomic(`${target}.error.json`, `${JSON.stringify(report, null, 2)}\n`);
        db.update(row.id, { finalized: 1, path: target }, this.now());
      } catch (error) {
        log.warn({ file: row.path, err: describe(error) }, 'could not move the failed file; will retry');
      }
    }
  }
}
