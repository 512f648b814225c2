/**
 * Bulk reruns: ids gathered with fetch_documents, sent in chunks of 500, results kept in SQLite.
 * Afterwards the results of the local files concerned are fetched again and rewritten in their
 * watch's output when the re-extraction changed them (docs/reference/results.md, "Results after a rerun").
 */
import { basename } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DocexClient, DocumentData } from '@docex/shared';
import type { ConfigSlice, RerunConfig, WatchConfig } from '../config/config.ts';
import type { Notifier } from '../outputs/notify.ts';
import { allWatches } from '../intake/sources.ts';
import { jsonResultPath, readResultJson, ResultWriter } from '../outputs/results.ts';
import type { FileRow, StateDb } from '../store/state.ts';
import { AuditTrail } from '../store/audit.ts';
import { reapplyCorrections, type Correction, type Reapplied } from '../outputs/review-decisions.ts';

export interface RefreshOutcome {
  /** Local files whose documents were rerun. */
  files: number;
  rewritten: number;
  unchanged: number;
  /** Not seen changed on the service before the window closed. */
  not_seen: number;
}

export interface RerunOutcome {
  status: 'done' | 'dry-run' | 'skipped' | 'failed';
  documents: number;
  rerun: number;
  not_rerun: number;
  errors: unknown[];
  refresh?: RefreshOutcome;
}

export interface RefreshOptions {
  /** How long to look for the re-extracted documents after the dispatch. */
  windowMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
}
export const DEFAULT_REFRESH: RefreshOptions = {
  windowMs: 15 * 60_000,
  firstDelayMs: 2_000,
  maxDelayMs: 60_000,
};

/** What a rerun's refresh reads of the config: the watches and mailboxes whose results it rewrites. */
export type RerunRefreshConfig = ConfigSlice<'watch' | 'mailboxes'>;

export interface RerunDeps {
  db: StateDb;
  client: DocexClient;
  log: Logger;
  now?: () => number;
  /** With the config, the results of rerun documents that came from watched folders are refreshed. */
  config?: RerunRefreshConfig;
  results?: ResultWriter;
  refresh?: Partial<RefreshOptions>;
  notify?: Notifier;
  signal?: AbortSignal;
  /** Told after each chunk: chunks sent so far and in all (the CLI's progress bar on a terminal). */
  progress?: (done: number, total: number) => void;
}

export async function runRerun(deps: RerunDeps, job: Omit<RerunConfig, 'schedule'>): Promise<RerunOutcome> {
  const { db, client, log } = deps;
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const id = db.reruns.startRerun(job.name, job.dry_run, job.override, startedAt);
  if (id === undefined) {
    log.warn({ rerun: job.name }, 'rerun already running: this run is skipped');
    return { status: 'skipped', documents: 0, rerun: 0, not_rerun: 0, errors: [] };
  }
  let outcome: RerunOutcome;
  let rerunIds: number[] = [];
  try {
    const ids = await client.fetchDocuments({
      template_id: job.template_id,
      folder_id: job.folder_id,
      start_date: job.created_from,
      end_date: job.created_to,
    });
    if (job.dry_run) {
      outcome = { status: 'dry-run', documents: ids.length, rerun: 0, not_rerun: 0, errors: [] };
      db.reruns.finishRerun(id, outcome, now());
      log.info(
        { rerun: job.name, documents: ids.length, chunks: Math.ceil(ids.length / 500) },
        'dry run: these documents would be rerun',
      );
      deps.notify?.rerunFinished(job.name, outcome);
      return outcome;
    }
    const result = await client.rerunAll(ids, {
      override_extraction: job.override,
      onChunk: ({ index, chunks, result: r, error }) => {
        deps.progress?.(index + 1, chunks);
        log.info(
          {
            rerun: job.name,
            chunk: `${index + 1}/${chunks}`,
            rerun_count: r?.rerun,
            not_rerun: r?.not_rerun,
            error: error?.message,
          },
          'rerun progress',
        );
      },
    });
    rerunIds = result.rerun_doc_ids;
    const errors = [
      ...result.errors,
      ...result.failedChunks.map((c) => ({ error: c.error.message, doc_ids: c.doc_ids })),
    ];
    outcome = {
      status: result.failedChunks.length ? 'failed' : 'done',
      documents: ids.length,
      rerun: result.rerun,
      not_rerun: result.not_rerun,
      errors,
    };
    db.reruns.finishRerun(id, outcome, now());
    log.info(
      {
        rerun: job.name,
        documents: ids.length,
        rerun_count: result.rerun,
        not_rerun: result.not_rerun,
        failed_chunks: result.failedChunks.length,
      },
      'rerun finished',
    );
  } catch (error) {
    outcome = { status: 'failed', documents: 0, rerun: 0, not_rerun: 0, errors: [(error as Error).message] };
    db.reruns.finishRerun(id, outcome, now());
    deps.notify?.rerunFinished(job.name, outcome);
    throw error;
  }
  if (deps.config && rerunIds.length) {
    outcome.refresh = await refreshAfterRerun(
      { ...deps, config: deps.config, now },
      job.name,
      rerunIds,
      startedAt,
    );
  }
  deps.notify?.rerunFinished(job.name, outcome);
  return outcome;
}

/**
 * What a rerun may change in a document's reading. `withList: false` for results written from the
 * task's answer (`document_from: "task"`), which have no General_fields_list: the same reading is
 * then the same fields, not a list that was never there.
 */
const extractionOf = (d: DocumentData, withList = true) => {
  const o = d as Record<string, unknown>;
  return JSON.stringify([
    o.General_fields ?? null,
    withList ? (o.General_fields_list ?? null) : null,
    o.Line_fields ?? null,
    o.Fraud_verdict ?? null,
    o.Fraud_score ?? null,
  ]);
};

/** A rerun changes the document's updated time; clocks may differ this much between us and the service. */
const CLOCK_SKEW_MS = 5_000;

/**
 * Looks, with backoff and for a bounded window, for the rerun documents the service marks as
 * changed (fetch_documents updated_since the rerun's start, one call a round); fetches each one's
 * data once and rewrites its files' results when the extraction differs from what is on disk.
 */
export async function refreshAfterRerun(
  deps: RerunDeps & { config: RerunRefreshConfig; now: () => number },
  rerunName: string,
  documentIds: number[],
  startedAt: number,
): Promise<RefreshOutcome> {
  const { db, client, log, config, now } = deps;
  const options = { ...DEFAULT_REFRESH, ...deps.refresh };
  const results = deps.results ?? new ResultWriter(client, { log, now });
  results.layouts.clear();
  const watches = allWatches(config);
  const pending = new Map<number, FileRow[]>();
  for (const row of db.files.filesOfDocuments(documentIds)) {
    if (!watches.has(row.watch)) continue;
    pending.set(row.document_id!, [...(pending.get(row.document_id!) ?? []), row]);
  }
  const outcome: RefreshOutcome = {
    files: [...pending.values()].reduce((n, rows) => n + rows.length, 0),
    rewritten: 0,
    unchanged: 0,
    not_seen: 0,
  };
  if (!pending.size) return outcome;
  log.info(
    { rerun: rerunName, files: outcome.files },
    'waiting for the rerun documents to refresh their results',
  );
  const deadline = now() + options.windowMs;
  const since = new Date(startedAt - CLOCK_SKEW_MS);
  for (let wait = options.firstDelayMs; ; wait = Math.min(options.maxDelayMs, wait * 2)) {
    try {
      const changed = await client.fetchDocuments({ updated_since: since });
      for (const documentId of changed) {
        const rows = pending.get(documentId);
        if (!rows) continue;
        const data = await client.fetchDocumentData({ document_id: documentId });
        for (const row of rows) {
          const watch = watches.get(row.watch)!;
          if (await rewriteIfChanged(results, watch, row, data, rerunName, { db, log, now }))
            outcome.rewritten++;
          else outcome.unchanged++;
        }
        pending.delete(documentId);
      }
    } catch (error) {
      log.warn(
        { rerun: rerunName, err: (error as Error).message },
        'refreshing results after the rerun: will try again',
      );
    }
    if (!pending.size || now() + wait > deadline || deps.signal?.aborted) break;
    await sleep(wait, undefined, { signal: deps.signal }).catch(() => undefined);
  }
  outcome.not_seen = [...pending.values()].reduce((n, rows) => n + rows.length, 0);
  log.info({ rerun: rerunName, ...outcome }, 'results refreshed after the rerun');
  return outcome;
}

/**
 * Rewrites a file's results from its document's new data when its extraction changed. A person's
 * corrections (listed in the result JSON) are put back over the new data, so "changed" means the
 * service now reads something else, not that a person once corrected a value; each correction kept
 * over a new reading, or dropped because the field is gone, is a warning in the log and a row of the
 * audit trail (docs/decisions.md, "Corrections and reruns").
 */
async function rewriteIfChanged(
  results: ResultWriter,
  watch: WatchConfig,
  row: FileRow,
  data: DocumentData,
  rerunName: string,
  deps: { db: StateDb; log: Logger; now: () => number },
): Promise<boolean> {
  const sourceName = basename(row.rel);
  const before = watch.formats.includes('json')
    ? await readResultJson(jsonResultPath(watch.output, sourceName, data.document_id, row.result_base))
    : undefined;
  const corrected = (before?.corrections ?? []) as Correction[];
  const reapplied = corrected.length ? reapplyCorrections(data, corrected) : undefined;
  const document = reapplied?.document ?? data;
  const withList = before?.document_from !== 'task';
  if (before && extractionOf(before.document, withList) === extractionOf(document, withList)) return false;
  await results.write(watch, document, {
    source: before?.source_file ?? row.path,
    archivedTo: before?.archived_to ?? null,
    sha256: row.sha256,
    task: before?.task ?? null,
    outcome: row.outcome === 'duplicate' ? 'duplicate' : 'processed',
    sourceName,
    refreshedBy: rerunName,
    message: before?.message,
    base: row.result_base ?? undefined,
    ...(reapplied?.corrections.length ? { corrections: reapplied.corrections } : {}),
  });
  if (reapplied) noteCorrections(deps, row, rerunName, reapplied);
  return true;
}

/** Each correction a rerun kept over the service's new reading, or dropped: a log warning and an audit row. */
function noteCorrections(
  { db, log, now }: { db: StateDb; log: Logger; now: () => number },
  row: FileRow,
  rerunName: string,
  { kept, dropped }: Reapplied,
) {
  const trail = new AuditTrail(db.db);
  const actor = { who: `rerun ${rerunName}`, via: 'cli' as const };
  const show = (v: unknown) => JSON.stringify(v ?? null);
  /** The person's value `to` kept (the row's new value is the same) or dropped (none). */
  const record = (field: string, to: unknown, still: boolean, note: string) =>
    trail.record(
      actor,
      {
        action: 'rerun',
        fileId: row.id,
        file: row.path,
        field,
        oldValue: show(to),
        newValue: still ? show(to) : null,
        note,
      },
      now(),
    );
  for (const { correction: c, reading } of kept) {
    // A warning when the service now reads something else than what the person corrected.
    log[JSON.stringify(reading) === JSON.stringify(c.service_value) ? 'info' : 'warn'](
      { file: row.path, field: c.field, value: c.to, reading, rerun: rerunName },
      'correction kept after the rerun',
    );
    record(
      c.field,
      c.to,
      true,
      `correction kept: the service now reads ${show(reading)} (it read ${show(c.service_value)} when ${c.by} corrected it)`,
    );
  }
  for (const c of dropped) {
    log.warn(
      { file: row.path, field: c.field, value: c.to, rerun: rerunName },
      'correction dropped after the rerun',
    );
    record(
      c.field,
      c.to,
      false,
      `correction dropped: the rerun's extraction has no field "${c.field}" (${c.by} had corrected ${show(c.from)} to ${show(c.to)})`,
    );
  }
  db.flush();
}
