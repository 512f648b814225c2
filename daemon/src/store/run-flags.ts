/**
 * What a run knows of itself beyond the files, kept in the kv table (store/kv.ts) with a typed
 * method per key: who holds the lock, whether the service answers or refused the key, which watches'
 * watchers are blind, the pull's cursor and history. A value that cannot be read (written by hand,
 * or by an older docex-sync) reads as the nearest harmless one, never as an error.
 */
import type { ChangeCursor } from '@docex/shared';
import { KV, type KvRepository } from './kv.ts';

/** A watch whose rescans keep finding files no watcher event reported (intake/watcher.ts). */
export interface BlindWatcherRecord {
  since: number;
  rescans: number;
  files: number;
}

/** One pull, as `status` and the page show it. */
export interface PullRecord {
  at: string;
  status: 'done' | 'failed';
  documents: number;
  error?: string;
}

export class RunFlags {
  private readonly kv: KvRepository;

  constructor(kv: KvRepository) {
    this.kv = kv;
  }

  /** Who holds the DB's lock (pid, host, start), named when a second daemon is refused. */
  holder(): string | undefined {
    return this.kv.get(KV.holder);
  }
  setHolder(holder: string) {
    this.kv.set(KV.holder, holder);
  }

  /** Since when, and why, the service has been unreachable (undefined: it answers). */
  serviceUnreachable(): { since: number; reason: string } | undefined {
    const dated = readDated(this.kv.get(KV.unreachable), 'since', 'reason');
    return dated && { since: dated.at, reason: dated.words };
  }
  markServiceUnreachable(since: number, reason: string) {
    this.kv.set(KV.unreachable, JSON.stringify({ since, reason }));
  }
  markServiceReachable() {
    this.kv.delete(KV.unreachable);
  }

  /** When and why the service last refused the API key, if no run's key check has passed since. */
  keyRefusal(): { at: number; message: string } | undefined {
    const dated = readDated(this.kv.get(KV.keyRefused), 'at', 'message');
    return dated && { at: dated.at, message: dated.words };
  }
  markKeyRefused(at: number, message: string) {
    this.kv.set(KV.keyRefused, JSON.stringify({ at, message }));
  }
  clearKeyRefusal() {
    this.kv.delete(KV.keyRefused);
  }

  /** The watches whose native watcher was found blind, by path. */
  blindWatchers(): Record<string, BlindWatcherRecord> {
    try {
      const value = JSON.parse(this.kv.get(KV.blindWatchers) ?? '{}') as unknown;
      return value && typeof value === 'object' ? (value as Record<string, BlindWatcherRecord>) : {};
    } catch {
      return {};
    }
  }
  /** Records (or, with null, clears) a watch's blind watcher. */
  setBlindWatcher(watch: string, blind: BlindWatcherRecord | null) {
    const all = this.blindWatchers();
    if (blind) all[watch] = blind;
    else if (watch in all) delete all[watch];
    else return;
    if (Object.keys(all).length) this.kv.set(KV.blindWatchers, JSON.stringify(all));
    else this.kv.delete(KV.blindWatchers);
  }

  /** Keeps the last `keep` pulls, newest first. */
  recordPull(record: PullRecord, keep = 10) {
    this.kv.set(KV.pullHistory, JSON.stringify([record, ...this.lastPulls(keep)].slice(0, keep)));
  }
  lastPulls(limit = 10): PullRecord[] {
    try {
      const value = JSON.parse(this.kv.get(KV.pullHistory) ?? '[]') as unknown;
      return Array.isArray(value) ? (value as PullRecord[]).slice(0, limit) : [];
    } catch {
      return [];
    }
  }

  /**
   * Where the next pull starts: the start of the last pull that wrote every document it was told of,
   * and the fingerprints of the documents in its overlap ({}: no pull has finished yet).
   */
  pullCursor(): ChangeCursor {
    const stored = this.kv.get(KV.pullCursor);
    return stored
      ? {
          cursor: new Date(Number(stored)).toISOString(),
          seen: JSON.parse(this.kv.get(KV.pullSeen) ?? '{}') as Record<string, string>,
        }
      : {};
  }
  /** A pull that started at `startedAt` wrote every document: the next one starts there. */
  advancePullCursor(startedAt: number, seen: ChangeCursor['seen']) {
    this.kv.set(KV.pullSeen, JSON.stringify(seen));
    this.kv.set(KV.pullCursor, String(startedAt));
  }
}

/**
 * A moment and its words, as a flag keeps them (JSON, under the names given); a value that is not
 * JSON (written by an older run) is all words, at 0.
 */
function readDated(value: string | undefined, atName: string, wordsName: string) {
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value) as Record<string, unknown>;
    return { at: Number(parsed[atName]), words: String(parsed[wordsName]) };
  } catch {
    return { at: 0, words: value };
  }
}
