/**
 * What the rescans of one watch remember of its folders, so that a rescan's cost follows what
 * changed: a folder whose own stats are as they were when it was last read, and whose watcher has
 * been the same one since, is not read again (its files are not listed, looked up or stat'ed); only
 * its sub-folders are walked into. Kept per folder, never per file: memory follows the folders.
 *
 * A folder's mtime and ctime change when an entry is added, removed or renamed in it (POSIX), and
 * its inode and birth time tell which folder is at the path. What its stats do not show, and who
 * sees it instead (docs/reference/engine.md, "Scans"):
 * - a file changed in place leaves its folder as it was: the folder's watcher reports it (and the
 *   pipeline checks files in flight itself until they are stable), so a folder is left alone only
 *   while the same watcher has watched it since it was read;
 * - a change in the same tick of the folder's clock as the read (FAT counts in 2 s, ext4 in
 *   jiffies): a folder changed less than RACY_MS before it was read is read again next time;
 * - file systems that report neither reliably (network shares: attribute caching, another
 *   machine's clock): `polling: true` watches and blind watchers read every folder at every
 *   rescan, and every watch reads every folder at least once per full_rescan_interval_ms.
 */
import type { Stats } from 'node:fs';
import type { FolderMemory } from './walk.ts';

/**
 * A folder modified less than this before it was read may change again without a new mtime (FAT
 * keeps mtimes in steps of 2 s; ext4 in jiffies, a few ms): it is not trusted, and read again.
 */
export const RACY_MS = 3000;

/** What is compared: the folder's identity, its times and its size and links (sub-folder count). */
const signature = (info: Stats) =>
  `${info.dev}:${info.ino}:${info.birthtimeMs}:${info.mtimeMs}:${info.ctimeMs}:${info.size}:${info.nlink}`;

interface Remembered {
  signature: string;
  subfolders: string[];
  /** The watcher the folder had when it was read: another one (or none) may have missed a change. */
  watcher: object;
}

export class FolderMemoryOfWatch implements FolderMemory {
  private readonly folders = new Map<string, Remembered>();
  /** Whether unchanged folders may be left alone in the walk under way (false: a full scan). */
  private skipping = false;
  /** When each folder being read was looked at (lstat), by the wall clock its mtime is in. */
  private readonly readingSince = new Map<string, number>();
  private readonly watcherOf: (dir: string) => object | undefined;
  private readonly racyMs: number;
  /** Folders left alone and folders read since `begin`. */
  left = 0;
  readCount = 0;

  /** `watcherOf`: the live watcher of a folder now, if any. */
  constructor(watcherOf: (dir: string) => object | undefined, racyMs = RACY_MS) {
    this.watcherOf = watcherOf;
    this.racyMs = racyMs;
  }

  /** A walk begins: `skip` false reads every folder (and remembers them anew). */
  begin(skip: boolean) {
    this.skipping = skip;
    this.left = 0;
    this.readCount = 0;
  }

  unchanged(dir: string, info: Stats): string[] | undefined {
    if (!this.skipping) return undefined;
    const known = this.folders.get(dir);
    if (!known || known.signature !== signature(info)) return undefined;
    const watcher = this.watcherOf(dir);
    if (!watcher || watcher !== known.watcher) return undefined;
    this.left++;
    return known.subfolders;
  }

  reading(dir: string) {
    this.folders.delete(dir);
    this.readingSince.set(dir, Date.now());
    this.readCount++;
  }

  read(dir: string, info: Stats, subfolders: string[]) {
    const since = this.readingSince.get(dir);
    this.readingSince.delete(dir);
    if (since === undefined) return;
    const watcher = this.watcherOf(dir);
    // Unwatched (no watcher could be made, or it failed meanwhile): its changes in place are heard
    // by nobody, so it is read at every rescan.
    if (!watcher) return;
    // Changed just before it was read: a change in the same tick would leave the same stats.
    if (since - Math.max(info.mtimeMs, info.ctimeMs) < this.racyMs) return;
    this.folders.set(dir, { signature: signature(info), subfolders, watcher });
  }

  /** Forgets the folders a whole-tree walk did not pass through (removed, or now excluded). */
  keepOnly(passed: Set<string>) {
    for (const dir of this.folders.keys()) if (!passed.has(dir)) this.folders.delete(dir);
    for (const dir of this.readingSince.keys()) if (!passed.has(dir)) this.readingSince.delete(dir);
  }

  /** Folders remembered (for tests and the log). */
  get size() {
    return this.folders.size;
  }
}
