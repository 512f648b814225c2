/**
 * Pulls changed documents (fetch_documents?updated_since=) into the pull folder. The cursor lives in
 * SQLite and moves only after every document of a pull was written; each pull asks again for
 * `overlap_ms` before the cursor, so nothing at the boundary is missed (writes are idempotent).
 */
import { ConfigError } from './config.ts';
import { inside, writeAtomic } from './files.ts';
import type { PipelineDeps } from './pipeline.ts';

const CURSOR = 'pull.cursor';

export async function pullOnce(deps: PipelineDeps) {
  const { db, client, config, log } = deps;
  const pull = config.pull;
  if (!pull) throw new ConfigError('no "pull" section in the config: add pull.schedule and pull.output');
  const now = deps.now ?? Date.now;
  const startedAt = now();
  const cursor = Number(
    db.getValue(CURSOR) ?? (pull.since ? Date.parse(pull.since) : startedAt - pull.overlap_ms),
  );
  const since = new Date(Math.max(0, cursor - pull.overlap_ms));
  const ids = await client.fetchDocuments({
    updated_since: since,
    folder_id: pull.folder_id,
    template_id: pull.template_id,
  });
  for (const [i, id] of ids.entries()) {
    const data = await client.fetchDocumentData({ document_id: id });
    await writeAtomic(
      inside(pull.output, `document-${id}.json`),
      `${JSON.stringify({ document: data, pulled_at: new Date(startedAt).toISOString() }, null, 2)}\n`,
    );
    deps.metrics?.pulls.inc();
    if ((i + 1) % 100 === 0) log.info({ done: i + 1, of: ids.length }, 'pull progress');
  }
  db.setValue(CURSOR, String(startedAt));
  log.info({ documents: ids.length, since: since.toISOString() }, 'pull finished');
  return { documents: ids.length, since };
}
