/**
 * Pulls changed documents (fetch_documents?updated_since=) into the pull folder, with the core's
 * changesSince: data read 4 at a time, documents deleted meanwhile skipped, documents unchanged in
 * the overlap (same fingerprint) not written again. The cursor and the fingerprints live in SQLite
 * and move only after every reported document was written; each pull asks again for `overlap_ms`
 * before the cursor, so nothing at the boundary is missed.
 */
import { changesSince } from '@docex/shared';
import { ConfigError, type ConfigSlice } from '../config/config.ts';
import { inside, writeAtomic } from '../common/files.ts';
import type { PipelineDeps } from '../pipeline/pipeline.ts';

/** What a pull needs: the pipeline's store, client and log, and the config's pull section. */
export type PullDeps = Pick<PipelineDeps, 'db' | 'client' | 'log' | 'now'> & {
  config: ConfigSlice<'pull'>;
  /** Counts the documents written (status/metrics.ts gives a Prometheus counter). */
  metrics?: { pulls: { inc(value?: number): void } };
};

interface PullOptions {
  /** Told as each document's data is read (the CLI's progress bar on a terminal). */
  progress?: (done: number, total: number) => void;
}

/**
 * One pull, scheduled or one-off (`docex-sync pull`); either way it goes into the pull history that
 * `status` and the status page show, failed ones with their reason.
 */
export async function pullOnce(deps: PullDeps, options: PullOptions = {}) {
  if (!deps.config.pull)
    throw new ConfigError('no "pull" section in the config: add pull.schedule and pull.output');
  const startedAt = (deps.now ?? Date.now)();
  const at = new Date(startedAt).toISOString();
  try {
    const result = await pullChanges(deps, options, startedAt);
    deps.db.flags.recordPull({ at, status: 'done', documents: result.documents });
    return result;
  } catch (error) {
    deps.db.flags.recordPull({ at, status: 'failed', documents: 0, error: (error as Error).message });
    throw error;
  }
}

async function pullChanges(deps: PullDeps, { progress }: PullOptions, startedAt: number) {
  const { db, client, config, log } = deps;
  const pull = config.pull!;
  const changes = await changesSince(client, db.flags.pullCursor(), {
    now: new Date(startedAt),
    overlapMs: pull.overlap_ms,
    // The first pull reaches back by the overlap from pull.since too.
    startTime: pull.since ? new Date(Date.parse(pull.since) - pull.overlap_ms) : undefined,
    folderId: pull.folder_id,
    templateId: pull.template_id,
    onProgress: progress && (({ done, total }) => progress(done, total)),
  });
  for (const [i, data] of changes.documents.entries()) {
    await writeAtomic(
      inside(pull.output, `document-${data.document_id}.json`),
      `${JSON.stringify({ document: data, pulled_at: new Date(startedAt).toISOString() }, null, 2)}\n`,
    );
    deps.metrics?.pulls.inc();
    if ((i + 1) % 100 === 0) log.info({ done: i + 1, of: changes.documents.length }, 'pull progress');
  }
  db.flags.advancePullCursor(startedAt, changes.next.seen);
  const since = new Date(changes.since);
  log.info(
    { documents: changes.documents.length, listed: changes.listed, vanished: changes.vanished, since },
    'pull finished',
  );
  return { documents: changes.documents.length, since };
}
