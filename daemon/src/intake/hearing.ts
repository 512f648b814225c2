/**
 * Whether a folder's native watcher hears anything: the evidence of each rescan (events heard since
 * the last one, files it found that no event reported) in, a verdict out. Pure: the watcher logs,
 * reports and changes how it rescans on the verdict (watcher.ts).
 */

/**
 * A native watcher is blind (a network share: inotify hears only this machine's writes) when this
 * many rescans found files that no event had reported, with no event at all since the first of
 * them. A working watcher reports a file before the rescan, or soon after it when the two race,
 * and any event it reports starts the count over (docs/decisions.md, "docex-sync: a blind watcher").
 */
export const BLIND_AFTER_RESCANS = 3;

/** What a blind watcher's warning, status and /healthz say. */
export interface BlindWatcher {
  /** When the first of the rescans ran (ms). */
  since: number;
  /** Rescans that found files no event reported, and how many files they found. */
  rescans: number;
  files: number;
}

/**
 * What a rescan's evidence changes: `report` is what to record (null: hearing, clear any record;
 * undefined: nothing to record), `turned` says when the watcher just turned blind or hearing again.
 */
export interface Verdict {
  report?: BlindWatcher | null;
  turned?: 'blind' | 'hearing';
}

export class WatcherHearing {
  private heard = 0;
  /** The rescans since the last event that found files no event reported. */
  private unheard: BlindWatcher | null = null;
  private blindNow = false;
  /** Whether a rescan found that events were heard in this run. */
  private heardOnce = false;

  /** The watcher reported something (a hint that was a real entry). */
  event() {
    this.heard++;
  }

  /** Whether the watcher is taken for blind: its watch then reads every folder at every rescan. */
  get blind() {
    return this.blindNow;
  }

  /** After a rescan that recorded `fresh` new files, at `now`. */
  afterRescan(fresh: number, now: number): Verdict {
    const heard = this.heard;
    this.heard = 0;
    if (heard > 0) {
      this.unheard = null;
      const wasBlind = this.blindNow;
      const first = !this.heardOnce;
      this.blindNow = false;
      this.heardOnce = true;
      // Also the first time in a run: an earlier run may have recorded this watcher as blind.
      return {
        ...(wasBlind || first ? { report: null } : {}),
        ...(wasBlind ? { turned: 'hearing' as const } : {}),
      };
    }
    if (fresh === 0) return {}; // nothing happened: no evidence either way
    const unheard = (this.unheard ??= { since: now, rescans: 0, files: 0 });
    unheard.rescans++;
    unheard.files += fresh;
    if (unheard.rescans < BLIND_AFTER_RESCANS) return {};
    const turned = this.blindNow ? {} : { turned: 'blind' as const };
    this.blindNow = true;
    return { report: { ...unheard }, ...turned };
  }
}
