/**
 * What holds for the whole run rather than one file: the API key was refused (the run stops), the
 * service cannot be reached (files wait), a watch is paused because the service does not know its
 * template or folder (one upload of it probes now and then), the state DB's disk is full (all work
 * pauses until there is room). The lifecycle reports most of these as effects of a file's step; this
 * unit remembers them, writes them to the state DB (all but the full disk, which it cannot) and
 * tells subscribers.
 */
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { StateDb } from '../store/state.ts';
import { describe, type Effect, type FileRow } from '../domain/lifecycle.ts';
import { diskReason, diskStep, isDiskFull, type DiskPause, type DiskSpace } from '../domain/disk-space.ts';

/** The run-level events (part of the pipeline's). */
export interface RunEvents {
  'watch-paused': [watch: string, reason: string];
  'watch-resumed': [watch: string];
  'service-unreachable': [reason: string];
  /** The API key was refused: the run must stop (exit 3). */
  'run-refused': [error: unknown];
  /** The state DB's disk is full (the reason, as status says it): all work pauses. */
  'disk-full': [reason: string];
  /** There is room again: work resumes (writes rolled back meanwhile are made again). */
  'disk-resumed': [];
}

export interface RunStateDeps {
  db: StateDb;
  log: Logger;
  now: () => number;
  /** How long a paused watch waits before one of its files probes the service again. */
  probeIntervalMs: number;
  /** Where the run-level events go (the pipeline, which subscribers listen to). */
  events: Pick<EventEmitter<RunEvents>, 'emit'>;
  /** Measures the free space of the state DB's filesystem (undefined: cannot be measured). */
  diskSpace: () => DiskSpace | undefined;
}

export class RunState {
  private readonly deps: RunStateDeps;
  private refused: unknown;
  /** Whether the DB says the service is unreachable; only this run writes it, so it is read once. */
  private unreachableSet: boolean | undefined;
  /** Paused watches → the row whose probing upload is under way. */
  private readonly probing = new Map<string, number>();
  /** Set while work is paused for lack of room for the state DB. */
  private diskPause: (DiskPause & { reason: string }) | undefined;

  constructor(deps: RunStateDeps) {
    this.deps = deps;
  }

  /** The run was refused (API key): the error, else undefined. */
  get refusal(): unknown {
    return this.refused;
  }

  /** Carries out a run-level effect of `row`'s step (`row` undefined: outside any file's step). */
  apply(effect: Effect, row: FileRow | undefined) {
    if (effect.kind === 'stop-run') this.refuse(effect.error);
    else if (effect.kind === 'pause-watch' && row) this.pauseWatch(row.watch, effect.reason);
    else if (effect.kind === 'service-unreachable') this.unreachable(effect.reason);
  }

  refuse(error: unknown) {
    if (this.refused !== undefined) return;
    this.refused = error;
    this.deps.log.fatal(
      { err: describe(error) },
      'the service refused the API key: stopping; no file was changed',
    );
    this.deps.events.emit('run-refused', error);
  }

  unreachable(reason: string) {
    if (this.isUnreachable()) return;
    this.deps.db.flags.markServiceUnreachable(this.deps.now(), reason);
    this.unreachableSet = true;
    this.deps.log.error({ reason }, 'the service cannot be reached; files wait and are retried');
    this.deps.events.emit('service-unreachable', reason);
  }

  reachable() {
    if (!this.isUnreachable()) return;
    this.deps.db.flags.markServiceReachable();
    this.unreachableSet = false;
    this.deps.log.info('the service can be reached again');
  }

  /**
   * Measures the state DB's room (before each scheduler pump) and pauses or resumes all work:
   * `paused` while there is too little, `resumed` once when there is room again.
   */
  checkDisk(): 'paused' | 'resumed' | 'ok' {
    const space = this.deps.diskSpace();
    if (!space) return this.diskPause ? 'paused' : 'ok';
    const step = diskStep(this.diskPause, space);
    if (step === 'pause') this.pauseForDisk(space, undefined);
    else if (step === 'resume') {
      this.diskPause = undefined;
      this.deps.log.warn(
        { path: space.path, freeBytes: space.freeBytes, minFreeBytes: space.minFreeBytes },
        'the state DB has room again: work resumes',
      );
      this.deps.events.emit('disk-resumed');
      return 'resumed';
    }
    return this.diskPause ? 'paused' : 'ok';
  }

  /** A write failed: if for lack of room, work pauses (true), as the free-space check would pause it. */
  diskFull(error: unknown): boolean {
    const space = this.deps.diskSpace();
    if (!space || !isDiskFull(error, space)) return false;
    if (!this.diskPause) this.pauseForDisk(space, describe(error));
    return true;
  }

  /** Why work is paused for lack of room (status says it), else undefined. */
  get diskPaused(): string | undefined {
    return this.diskPause?.reason;
  }

  private pauseForDisk(space: DiskSpace, error: string | undefined) {
    const reason = diskReason(space, error);
    this.diskPause = { since: this.deps.now(), freeBytes: space.freeBytes, error, reason };
    this.unreachableSet = undefined; // a write of it may have been rolled back
    this.deps.log.error(
      { path: space.path, freeBytes: space.freeBytes, minFreeBytes: space.minFreeBytes },
      reason,
    );
    this.deps.events.emit('disk-full', reason);
  }

  private isUnreachable(): boolean {
    this.unreachableSet ??= this.deps.db.flags.serviceUnreachable() !== undefined;
    return this.unreachableSet;
  }

  private pauseWatch(watch: string, reason: string) {
    const { db, log } = this.deps;
    const now = this.deps.now();
    const retryInMs = this.deps.probeIntervalMs;
    const already = db.watches.pausedWatches().some((w) => w.path === watch);
    db.watches.pauseWatch(watch, reason, now, now + retryInMs);
    if (already) return; // another upload of the same watch found it out at the same time
    log.error(
      { folder: watch, reason, retryInMs },
      'watch paused: the service does not know its template or folder; files stay queued until it is fixed',
    );
    this.deps.events.emit('watch-paused', watch, reason);
  }

  /**
   * The rows that probe their paused watch now (one per watch whose probe is due and not already
   * running); a paused watch with nothing left to send is resumed. Each is marked as probing until
   * `probeOver`: the caller releases the mark of a probe it does not start.
   */
  dueProbes(now: number): FileRow[] {
    const { db } = this.deps;
    const rows: FileRow[] = [];
    for (const paused of db.watches.pausedWatches()) {
      if (paused.probe_at > now || this.probing.has(paused.path)) continue;
      const row = db.files.probeRow(paused.path);
      if (!row) {
        db.watches.resumeWatch(paused.path);
        continue;
      }
      this.probing.set(paused.path, row.id);
      db.watches.pauseWatch(
        paused.path,
        paused.paused_reason,
        paused.paused_at,
        now + this.deps.probeIntervalMs,
      );
      rows.push(row);
    }
    return rows;
  }

  /** An upload of `watch` was accepted: a paused watch it probed for resumes. */
  uploadAccepted(watch: string) {
    if (!this.probing.delete(watch)) return;
    this.deps.db.watches.resumeWatch(watch);
    this.deps.log.warn({ folder: watch }, 'watch resumed: the service accepted an upload again');
    this.deps.events.emit('watch-resumed', watch);
  }

  /** An upload of `watch` failed: its probe, if it was one, is over (the lifecycle says what follows). */
  uploadFailed(watch: string) {
    this.probing.delete(watch);
  }

  /**
   * The row's upload ended or never started (upload limit, same bytes in flight, file gone, a failed
   * write): if it was its watch's probe, the mark goes, and the watch probes again when next due.
   */
  probeOver(row: Pick<FileRow, 'id' | 'watch'>) {
    if (this.probing.get(row.watch) === row.id) this.probing.delete(row.watch);
  }
}
