/**
 * The status read model: what `docex-sync status`, the status page, /api/status and /healthz say,
 * read from the state DB in one place so that they cannot disagree.
 */
import { HINTS } from '@docex/shared';
import { syncTerms } from '@docex/cli-kit/api-config';
import type { ConfigSlice } from '../config/config.ts';
import { FILE_STATES, type FileRow, type FileState } from '../domain/lifecycle.ts';
import { mailboxHealth, mailboxStatus, type MailboxStatus } from '../mail/status.ts';
import type { BlindWatcherRecord, PullRecord, StateDb } from '../store/state.ts';
import { heldReview } from '../outputs/review.ts';
import { stateDbSpace, type StateDbRoomConfig } from '../store/room.ts';
import { diskReason, isLow } from '../domain/disk-space.ts';

/** What the page shows; also GET /api/status. */
export interface StatusSnapshot {
  generated_at: string;
  health: Health;
  files: Record<FileState, number>;
  outcomes: Record<string, number>;
  watches: Array<{
    path: string;
    template_id: number | null;
    folder_id: number | null;
    files: Record<FileState, number>;
    paused: { reason: string; since: string } | null;
    /** Rescans keep finding files no watcher event reported (a network share): set polling: true. */
    blind_watcher: { since: string; rescans: number; files: number; advice: string } | null;
    /** With routes: counts per route (route null: the watch's own template or folder). */
    routes: Array<{
      route: string | null;
      template_id: number | null;
      folder_id: number | null;
      files: Record<FileState, number>;
    }>;
  }>;
  /** Files no route maps, waiting for a config that does (newest first). */
  held: { total: number; files: Array<{ id: number; file: string; watch: string; reason: string | null }> };
  /** Documents a review rule held, waiting for a person to approve them (oldest first). */
  review: {
    total: number;
    files: Array<{
      id: number;
      file: string;
      watch: string;
      route: string | null;
      /** Where the original waits (review_dir; its watched place when on_success is keep). */
      original: string;
      document_id: number | null;
      /** Each rule that fired, in words (field, value and threshold in `rules`). */
      reasons: string[];
      rules: Array<{ rule: string; field?: string; value?: unknown; found?: number; threshold?: number }>;
      since: string;
    }>;
  };
  failed: {
    total: number;
    files: Array<{
      id: number;
      file: string;
      watch: string;
      reason: string | null;
      attempts: number;
      task_id: string | null;
      at: string;
      /** Moved to the failed folder with its .error.json (false: still being moved). */
      moved: boolean;
    }>;
  };
  blocked: Array<{ id: number; file: string; state: FileState; problem: string }>;
  /** Each configured mailbox (mail intake). */
  mailboxes: MailboxStatus[];
  service: { reachable: boolean; since: string | null; reason: string | null; key_refused: boolean };
  reruns: Array<{
    name: string;
    status: string;
    started_at: string;
    finished_at: string | null;
    documents: number | null;
    rerun: number | null;
    not_rerun: number | null;
  }>;
  pulls: PullRecord[];
  throughput: {
    /**
     * Files finished (archived), failed and gone to review (still waiting there) in the last hour,
     * and per 10 minutes, newest first.
     */
    last_hour: { processed: number; failed: number; review: number };
    per_10_minutes: Array<{ from: string; processed: number; failed: number; review: number }>;
  };
}

/**
 * One definition of health, said the same by `status` (and its exit code), the page's banner,
 * /api/status and /healthz: failing (the run cannot work), needs attention (a person should look),
 * healthy. `ok` is `level === 'healthy'`.
 */
export type HealthLevel = 'healthy' | 'attention' | 'failing';
/** The level in words: `status`'s first line and the page's banner. */
export const HEADLINE: Record<HealthLevel, string> = {
  healthy: 'Healthy',
  attention: 'Needs attention',
  failing: 'Failing',
};
export interface Health {
  level: HealthLevel;
  ok: boolean;
  reasons: string[];
}

const iso = (ms: number | null | undefined) => (ms == null ? null : new Date(ms).toISOString());
const zero = () => Object.fromEntries(FILE_STATES.map((s) => [s, 0])) as Record<FileState, number>;

/** What the read model reads of the config: the watches and mailboxes it reports, when health turns failing. */
export type StatusConfig = ConfigSlice<'watch' | 'mailboxes' | 'http'> & StateDbRoomConfig;

export interface StatusSource {
  db: StateDb;
  config: StatusConfig;
  now?: () => number;
  /**
   * In the daemon: why its work is paused for lack of room, when a write failed with the free space
   * above the threshold (the check below cannot see that; no other process can).
   */
  diskPaused?: () => string | undefined;
}

/**
 * The state DB's room, measured here and now (the daemon cannot record it: its disk is full), so
 * `status` in its own process says the same as the daemon, with the same threshold.
 */
function diskProblem(source: StatusSource): string | undefined {
  const space = stateDbSpace(source.config);
  if (space && isLow(space)) return diskReason(space);
  return source.diskPaused?.();
}

/**
 * Kept in the state DB by the run that met it, so `status` says it after that run exited 3, until
 * the key check of a later run passes.
 */
function keyRefusalReason(refusal: { at: number; message: string }) {
  const what = refusal.message.includes('DOCEX_API_KEY')
    ? refusal.message
    : `${refusal.message}; ${HINTS.keyRefused(syncTerms())}`;
  return `the service refused the API key (${iso(refusal.at)}) and docex-sync run stopped (exit 3): ${what}, then start docex-sync run again (its key check clears this)`;
}

export function healthOf(source: StatusSource): Health {
  const { db, config } = source;
  const now = (source.now ?? Date.now)();
  const failing: string[] = [];
  const attention: string[] = [];
  const refusal = db.flags.keyRefusal();
  if (refusal) failing.push(keyRefusalReason(refusal));
  const disk = diskProblem(source);
  if (disk) failing.push(disk);
  const down = db.flags.serviceUnreachable();
  const limit = config.http?.unhealthy_after_ms ?? 300_000;
  if (down) {
    const reason = `the service has been unreachable for ${Math.round((now - down.since) / 1000)} s: ${down.reason}`;
    (now - down.since >= limit ? failing : attention).push(reason);
  }
  for (const w of db.watches.pausedWatches()) attention.push(`watch ${w.path} is paused: ${w.paused_reason}`);
  const blind = db.flags.blindWatchers();
  for (const w of config.watch)
    if (blind[w.path]) attention.push(`watch ${w.path}: ${blindAdvice(blind[w.path]!)}`);
  const counts = db.fileCounts.counts(); // once: it reads the tallies and the index
  const failed = counts.failed;
  if (failed)
    attention.push(
      `${failed} failed file(s): fix the cause, then docex-sync retry --all (or Retry on the status page)`,
    );
  const unrouted = counts.held;
  if (unrouted)
    attention.push(
      `${unrouted} file(s) held: no route of their watch matches their sub-folder; add a route (or move them), they are never sent with a guessed template`,
    );
  const waiting = counts.review;
  if (waiting)
    attention.push(
      `${waiting} document(s) wait for review: look at them in their review_dir, then approve them (docex-sync approve, or Approve on the status page)`,
    );
  const held = db.fileCounts.blocked(101).length;
  if (held)
    attention.push(
      `${held > 100 ? 'over 100' : held} file(s) held back by a local problem (see "held back")`,
    );
  // Mail that cannot be fetched is an intake that does not work: as failing as a refused API key.
  failing.push(...mailboxHealth(config.mailboxes.map((m) => mailboxStatus(db, m))));
  const level: HealthLevel = failing.length ? 'failing' : attention.length ? 'attention' : 'healthy';
  return { level, ok: level === 'healthy', reasons: [...failing, ...attention] };
}

export type ReviewEntry = StatusSnapshot['review']['files'][number];
/** A document waiting for review as the page, `status` and `review list` say it: where, since when, why. */
export function reviewEntry(r: FileRow): ReviewEntry {
  const { reasons } = heldReview(r);
  return {
    id: r.id,
    file: r.path,
    watch: r.watch,
    route: r.route,
    original: r.review_path ?? r.path,
    document_id: r.document_id,
    reasons: reasons.map((x) => x.message),
    rules: reasons.map(({ message: _, ...rule }) => rule),
    since: iso(r.updated_at)!,
  };
}

/** What a blind watcher means and what to do, said the same everywhere. */
export const blindAdvice = (b: BlindWatcherRecord) =>
  `its watcher reports no events: ${b.rescans} rescans found ${b.files} file(s) no event reported (a network share, SMB/NFS?), so new files wait for the next rescan; set polling: true for this folder`;

export function statusSnapshot(source: StatusSource, failedLimit = 100): StatusSnapshot {
  const { db, config } = source;
  const now = (source.now ?? Date.now)();
  const perWatch = new Map<string, Record<FileState, number>>();
  for (const r of db.fileCounts.countsByWatch()) {
    const counts = perWatch.get(r.watch) ?? zero();
    counts[r.state] = r.n;
    perWatch.set(r.watch, counts);
  }
  const perRoute = new Map<string, Record<FileState, number>>();
  if (config.watch.some((w) => w.routes.length > 0))
    for (const r of db.fileCounts.countsByRoute()) {
      const key = `${r.watch}\u0000${r.route ?? ''}`;
      const counts = perRoute.get(key) ?? zero();
      counts[r.state] = r.n;
      perRoute.set(key, counts);
    }
  const heldRows = db.fileCounts.lastHeld(failedLimit);
  const paused = new Map(db.watches.pausedWatches().map((w) => [w.path, w]));
  const blind = db.flags.blindWatchers();
  const failedRows = db.fileCounts.lastFailed(failedLimit);
  const hourAgo = now - 3_600_000;
  const finished = db.fileCounts.finishedSince(hourAgo);
  const buckets = Array.from({ length: 6 }, (_, i) => ({
    from: now - (i + 1) * 600_000,
    processed: 0,
    failed: 0,
    review: 0,
  }));
  const bucketOf = (at: number) => buckets[Math.max(0, Math.min(5, Math.floor((now - at) / 600_000)))]!;
  for (const f of finished) {
    const bucket = bucketOf(f.updated_at);
    if (f.state === 'archived') bucket.processed++;
    else bucket.failed++;
  }
  const reviewed = db.fileCounts.reviewSince(hourAgo);
  for (const at of reviewed) bucketOf(at).review++;
  const down = db.flags.serviceUnreachable();
  const reruns = db.reruns.lastReruns(5) as Array<{
    name: string;
    status: string;
    started_at: number;
    finished_at: number | null;
    documents: number | null;
    rerun: number | null;
    not_rerun: number | null;
  }>;
  const files = db.fileCounts.counts();
  return {
    generated_at: iso(now)!,
    health: healthOf(source),
    files,
    outcomes: db.fileCounts.outcomes(),
    watches: config.watch.map((w) => ({
      path: w.path,
      template_id: w.template_id ?? null,
      folder_id: w.folder_id ?? null,
      files: perWatch.get(w.path) ?? zero(),
      paused: paused.has(w.path)
        ? { reason: paused.get(w.path)!.paused_reason, since: iso(paused.get(w.path)!.paused_at)! }
        : null,
      blind_watcher: blind[w.path]
        ? {
            since: iso(blind[w.path]!.since)!,
            rescans: blind[w.path]!.rescans,
            files: blind[w.path]!.files,
            advice: 'set polling: true for this folder',
          }
        : null,
      routes:
        w.routes.length === 0
          ? []
          : [
              ...w.routes.map((r) => ({
                route: r.name ?? r.match,
                template_id: r.template_id ?? null,
                folder_id: r.folder_id ?? null,
              })),
              { route: null, template_id: w.template_id ?? null, folder_id: w.folder_id ?? null },
            ].map((r) => ({ ...r, files: perRoute.get(`${w.path}\u0000${r.route ?? ''}`) ?? zero() })),
    })),
    held: {
      total: files.held,
      files: heldRows.map((r) => ({ id: r.id, file: r.path, watch: r.watch, reason: r.reason })),
    },
    review: {
      total: files.review,
      files: db.fileCounts.inReview(failedLimit).map(reviewEntry),
    },
    failed: {
      total: files.failed,
      files: failedRows.map((r) => ({
        id: r.id,
        file: r.path,
        watch: r.watch,
        reason: r.reason,
        attempts: r.attempts,
        task_id: r.task_id,
        at: iso(r.updated_at)!,
        moved: r.finalized === 1,
      })),
    },
    blocked: db.fileCounts
      .blocked(20)
      .map((r) => ({ id: r.id, file: r.path, state: r.state, problem: r.blocked ?? '' })),
    mailboxes: config.mailboxes.map((m) => mailboxStatus(db, m)),
    service: {
      reachable: !down,
      since: iso(down?.since),
      reason: down?.reason ?? null,
      key_refused: db.flags.keyRefusal() !== undefined,
    },
    reruns: reruns.map((r) => ({
      name: r.name,
      status: r.status,
      started_at: iso(r.started_at)!,
      finished_at: iso(r.finished_at),
      documents: r.documents,
      rerun: r.rerun,
      not_rerun: r.not_rerun,
    })),
    pulls: db.flags.lastPulls(5),
    throughput: {
      last_hour: {
        processed: finished.filter((f) => f.state === 'archived').length,
        failed: finished.filter((f) => f.state === 'failed').length,
        review: reviewed.length,
      },
      per_10_minutes: buckets.map((b) => ({ ...b, from: iso(b.from)! })),
    },
  };
}
