/** Bulk reruns: ids gathered with fetch_documents, sent in chunks of 500, results kept in SQLite. */
import type { Logger } from 'pino';
import type { DocexClient } from '../../shared/src/core/index.ts';
import type { RerunConfig } from './config.ts';
import type { StateDb } from './state.ts';

export interface RerunOutcome {
  status: 'done' | 'dry-run' | 'skipped' | 'failed';
  documents: number;
  rerun: number;
  not_rerun: number;
  errors: unknown[];
}

export async function runRerun(
  deps: { db: StateDb; client: DocexClient; log: Logger; now?: () => number },
  job: Omit<RerunConfig, 'schedule'>,
): Promise<RerunOutcome> {
  const { db, client, log } = deps;
  const now = deps.now ?? Date.now;
  const id = db.startRerun(job.name, job.dry_run, job.override, now());
  if (id === undefined) {
    log.warn({ rerun: job.name }, 'rerun already running: this run is skipped');
    return { status: 'skipped', documents: 0, rerun: 0, not_rerun: 0, errors: [] };
  }
  try {
    const ids = await client.fetchDocuments({
      template_id: job.template_id,
      folder_id: job.folder_id,
      start_date: job.created_from,
      end_date: job.created_to,
    });
    if (job.dry_run) {
      const outcome: RerunOutcome = {
        status: 'dry-run',
        documents: ids.length,
        rerun: 0,
        not_rerun: 0,
        errors: [],
      };
      db.finishRerun(id, outcome, now());
      log.info(
        { rerun: job.name, documents: ids.length, chunks: Math.ceil(ids.length / 500) },
        'dry run: these documents would be rerun',
      );
      return outcome;
    }
    const result = await client.rerunAll(ids, {
      override_extraction: job.override,
      onChunk: ({ index, chunks, result: r, error }) =>
        log.info(
          {
            rerun: job.name,
            chunk: `${index + 1}/${chunks}`,
            rerun_count: r?.rerun,
            not_rerun: r?.not_rerun,
            error: error?.message,
          },
          'rerun progress',
        ),
    });
    const errors = [
      ...result.errors,
      ...result.failedChunks.map((c) => ({ error: c.error.message, doc_ids: c.doc_ids })),
    ];
    const outcome: RerunOutcome = {
      status: result.failedChunks.length ? 'failed' : 'done',
      documents: ids.length,
      rerun: result.rerun,
      not_rerun: result.not_rerun,
      errors,
    };
    db.finishRerun(id, outcome, now());
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
    return outcome;
  } catch (error) {
    const outcome: RerunOutcome = {
      status: 'failed',
      documents: 0,
      rerun: 0,
      not_rerun: 0,
      errors: [(error as Error).message],
    };
    db.finishRerun(id, outcome, now());
    throw error;
  }
}
