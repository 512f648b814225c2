/**
 * The first step: a file the intake heard of (a watcher event, a scan's listing) becomes a
 * `discovered` row, unless a row already holds it (domain/lifecycle.ts, `isNewWork`).
 */
import type { WatchConfig } from '../config/config.ts';
import { isNewWork } from '../domain/lifecycle.ts';
import type { Candidate, Listed } from '../intake/walk.ts';
import type { KnownFile } from '../store/state.ts';
import type { StepHost } from './step-host.ts';

/** A file reported by the watcher. */
export function discover(host: StepHost, watch: WatchConfig, file: Candidate) {
  const { db, log } = host;
  if (!isNewWork(file, db.files.current(file.path), watch.on_success)) return;
  let created;
  try {
    created = db.files.discover({ watch: watch.path, ...file }, host.now(), watch.stable_ms);
  } catch (error) {
    if (host.run.diskFull(error)) return; // the rescan after the pause finds it again
    throw error;
  }
  log.debug({ file: file.path, id: created.id }, 'discovered');
  host.metrics?.discovered.inc();
  host.wake();
}

/**
 * What a scan listed (a folder at a time), compared with the DB in one read: paths the pipeline
 * holds are not looked at (a rescan of 100,000 waiting files stats none), the others are, and the
 * new ones are recorded in one transaction. Returns how many were new.
 */
export async function discoverListed(
  host: StepHost,
  watch: WatchConfig,
  listed: Listed[],
  look: (listed: Listed[]) => Promise<Candidate[]>,
): Promise<number> {
  const { db, log } = host;
  const before = db.mark();
  const unheld = db.files
    .unheld(
      watch.path,
      listed.map((l) => l.path),
    )
    .map((i) => listed[i]!);
  if (unheld.length === 0) return 0;
  const files = await look(unheld);
  if (files.length === 0) return 0;
  // Read right before recording: an event may have recorded some of them meanwhile. Unless
  // nothing was written since `unheld` (the start-up scan of a large tree, mostly): then no row
  // holds any of them now either, and only `keep` must see the archived rows `unheld` left out.
  const known =
    watch.on_success === 'keep' || db.changedSince(before)
      ? db.files.known(
          watch.path,
          files.map((f) => f.path),
          watch.on_success === 'keep',
        )
      : new Map<string, KnownFile>();
  const fresh = files.filter((f) => isNewWork(f, known.get(f.path), watch.on_success));
  if (fresh.length) {
    try {
      db.files.discoverMany(watch.path, fresh, host.now(), watch.stable_ms);
      db.flush();
    } catch (error) {
      if (host.run.diskFull(error)) return 0; // the rescan after the pause finds them again
      throw error;
    }
    host.metrics?.discovered.inc(fresh.length);
    for (const f of fresh.slice(0, 20)) log.debug({ file: f.path }, 'discovered');
    host.wake();
  }
  return fresh.length;
}
