/** File-system helpers: atomic writes, moves that never leave their folder, free names. */
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { safeFileName } from '@docex/shared';

/** `child` resolved inside `dir`, or an error: nothing may be written outside the configured folders. */
export function inside(dir: string, child: string): string {
  const target = resolve(dir, child);
  const rel = relative(resolve(dir), target);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel))
    throw new Error(`refusing to write outside ${dir}: ${child}`);
  return target;
}

/**
 * Folders writeAtomic made (or found) in this process: not made again for every file. Names from the
 * data make a folder per supplier or month, so over months the set is emptied when it reaches
 * MADE_DIRS_MAX (a forgotten folder costs one more mkdir, nothing else).
 */
const madeDirs = new Set<string>();
const MADE_DIRS_MAX = 4096;
const TEMP = /^\..+\.[0-9a-f]{8}\.tmp$/;

/** Makes `dir` (and its parents) unless this process made or found it before (see madeDirs). */
export async function ensureFolder(dir: string) {
  if (madeDirs.has(dir)) return;
  await mkdir(dir, { recursive: true });
  if (madeDirs.size >= MADE_DIRS_MAX) madeDirs.clear();
  madeDirs.add(dir);
}

/** Forgets that this process made `dir` (it was found removed): true when it was remembered. */
export const forgetFolder = (dir: string) => madeDirs.delete(dir);

/**
 * The 8 hex digits of a temp file's name: a random start per process, then one more per temp file.
 * Unique within the process; another process's names meet ours only by chance (then `wx` refuses
 * and the write fails, to be tried again). A `randomBytes` per name was 1.2% of the daemon's main
 * thread in an ingest of small files (three result files each).
 */
let lastTempNumber = randomBytes(4).readUInt32BE(0);
export function tempSuffix(): string {
  lastTempNumber = (lastTempNumber + 1) >>> 0;
  return lastTempNumber.toString(16).padStart(8, '0');
}

/** Text written as it is made (a large document's results): each piece written before the next is made. */
export type Pieces = AsyncIterable<string>;

/**
 * Writes through a temp file, flushed to disk, and a rename: a reader never sees half a file, and
 * after a power loss the file is either the old one or the whole new one. `data` may come in
 * pieces, written in turn: a large file is never held whole in memory, nor made in one go.
 */
export async function writeAtomic(path: string, data: string | Uint8Array | Pieces) {
  const dir = dirname(path);
  await ensureFolder(dir);
  const temp = join(dir, `.${basename(path)}.${tempSuffix()}.tmp`);
  try {
    const file = await open(temp, 'wx');
    try {
      if (typeof data === 'string' || data instanceof Uint8Array) await file.writeFile(data);
      else
        for await (const piece of data) {
          const bytes = Buffer.from(piece);
          for (let at = 0; at < bytes.length;) at += (await file.write(bytes, at)).bytesWritten;
        }
      await file.datasync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    madeDirs.delete(dir); // it may have been removed: made again on the next try
    throw error;
  }
}

/**
 * Folder fsyncs, grouped: a caller waits for an fsync of the folder that starts after its call (one
 * already running may have begun before the caller's rename), and every caller that comes while one
 * runs shares the next. So a rename is durable when the promise resolves, and many documents' result
 * files pay one folder fsync per group rather than one each. `fsync` is injected for the tests.
 */
export function folderSyncer(fsync: (dir: string) => Promise<void>): (dir: string) => Promise<void> {
  const syncs = new Map<string, { running?: Promise<void>; next?: Promise<void> }>();
  return (dir) => {
    let sync = syncs.get(dir);
    if (!sync) syncs.set(dir, (sync = {}));
    if (sync.next) return sync.next;
    const state = sync;
    const next: Promise<void> = (state.running ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        state.next = undefined;
        state.running = next;
        try {
          await fsync(dir);
        } finally {
          if (state.running === next) state.running = undefined;
          if (!state.running && !state.next) syncs.delete(dir);
        }
      });
    state.next = next;
    return next;
  };
}

/** Where a folder cannot be opened for an fsync or does not take one, its entries are as durable as the file system makes them. */
const FOLDER_SYNC_UNSUPPORTED = new Set(['EINVAL', 'EISDIR', 'ENOTSUP', 'EOPNOTSUPP', 'EPERM', 'EACCES']);

async function fsyncFolder(dir: string) {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (error) {
    if (!FOLDER_SYNC_UNSUPPORTED.has((error as NodeJS.ErrnoException).code ?? '')) throw error;
  } finally {
    await handle?.close();
  }
}

/** Makes the entries of `dir` (renames into it) durable, grouped with concurrent callers (folderSyncer). */
export const syncFolder = folderSyncer(fsyncFolder);

/** Removes the temp files of writes a crash cut short (`.<name>.<8 hex>.tmp`) under `dir`; returns how many. */
export async function removeStaleTemps(dir: string): Promise<number> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true, recursive: true });
  } catch {
    return 0;
  }
  const stale = entries.filter((e) => e.isFile() && TEMP.test(e.name));
  await Promise.all(stale.map((e) => rm(join(e.parentPath, e.name), { force: true })));
  return stale.length;
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/**
 * The n-th name of the one rule every free name follows (originals, failed files, result sets):
 * "a", "a (2)", "a (3)", ..., before the extension.
 */
export const nthName = (stem: string, n: number): string => (n === 1 ? stem : `${stem} (${n})`);

/**
 * Names a free-name search gave out whose files are not there yet (a move or a write still to come),
 * each held by one file (its state DB row id): a later search skips them, so two files that want one
 * name at the same moment never both get it. The holder releases its name once the file is there.
 */
export class Reservations {
  private readonly held = new Map<string, number>();

  /** Holds `name` for `holder`: false when another holder has it. */
  take(name: string, holder: number): boolean {
    const current = this.held.get(name);
    if (current !== undefined && current !== holder) return false;
    this.held.set(name, holder);
    return true;
  }

  /** Gives `name` back (only its holder can). */
  release(name: string, holder: number) {
    if (this.held.get(name) === holder) this.held.delete(name);
  }

  holderOf(name: string): number | undefined {
    return this.held.get(name);
  }
}

/** How a free-name search tells a free name (see freeTarget). */
export interface FreeNameOptions {
  /** A name that already holds this file is given too (heldByFileOf: a move a crash cut short). */
  linkOf?: string;
  /** A name another file holds here is skipped; the name given is held for `holder` (released by the caller once its file is there). */
  reserve?: { in: Reservations; holder: number };
  /** Whether a name is free; default: nothing is there. A failed file's name is free only with no failure report beside it either. */
  free?: (candidate: string) => Promise<boolean>;
}

/** Nothing is there by that name. */
export const nothingThere = async (path: string) => !(await exists(path));

/** A failed file's place: neither a file nor a failure report (`<name>.error.json`) there. */
export const noFailureThere = async (path: string) =>
  (await nothingThere(path)) && (await nothingThere(`${path}.error.json`));

/** A failure report's place, the file itself gone: no other report there (a file of ours without one may be). */
export const noReportThere = (path: string) => nothingThere(`${path}.error.json`);

/** The names a free-name search tries for `rel` in `dir`, in order: "a.pdf", "a (2).pdf", ... (each part made safe). */
export function* candidateNames(dir: string, rel: string): Generator<string, never> {
  const parts = rel.split(/[\\/]/).map((p) => safeFileName(p));
  const wanted = inside(dir, parts.join(sep));
  const ext = extname(wanted);
  const stem = wanted.slice(0, wanted.length - ext.length);
  for (let n = 1; ; n++) yield `${nthName(stem, n)}${ext}`;
}

/** A free name in `dir` for `rel` (sub-folders kept, each part made safe): "a.pdf", "a (2).pdf", ... (FreeNameOptions). */
export async function freeTarget(dir: string, rel: string, options: FreeNameOptions = {}): Promise<string> {
  const { linkOf, reserve, free = nothingThere } = options;
  for (const candidate of candidateNames(dir, rel)) {
    // Held before the await: two searches at the same moment never give out one name.
    const heldBefore = reserve?.in.holderOf(candidate);
    if (reserve && !reserve.in.take(candidate, reserve.holder)) continue;
    if (await free(candidate)) return candidate;
    if (linkOf !== undefined && (await heldByFileOf(linkOf, candidate))) return candidate;
    if (reserve && heldBefore === undefined) reserve.in.release(candidate, reserve.holder);
  }
  throw new Error('unreachable: candidateNames never ends');
}

/**
 * Whether `name` holds `source`'s file: one inode (a hard link), or across file systems the copy a
 * move made (move.ts: same size, and the source's mtime given to it, to the millisecond). A move a crash cut short
 * after the new name was made leaves exactly this.
 */
export async function heldByFileOf(source: string, name: string): Promise<boolean> {
  const [x, y] = await Promise.all([lstat(source), lstat(name)].map((p) => p.catch(() => undefined)));
  if (x === undefined || y === undefined || !x.isFile() || !y.isFile()) return false;
  if (x.dev === y.dev) return x.ino === y.ino;
  // The copy's mtime was set from the source's in seconds (a double): equal to well under a millisecond.
  return x.size === y.size && Math.abs(x.mtimeMs - y.mtimeMs) < 1;
}
