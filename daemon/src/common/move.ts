/**
 * The one way docex-sync moves a file it owns: into the archive or the failed folder (moveInto, a
 * free name), into the review folder or back into its watched folder on a retry (moveTo, a name
 * recorded before the move). Both keep three promises at every step, a crash included:
 * - never over another file: a name is taken only by a hard link, which the file system refuses
 *   when the name exists, or (across file systems) by linking a complete copy;
 * - never half a file at the new name: a copy across file systems is made under a temp name beside
 *   the target (`.<name>.<8 hex>.tmp`, skipped by intake and removed at start where the daemon
 *   writes), then linked;
 * - never two copies kept: a move cut short after the new name was made finds its own file there
 *   the next time (the same inode, or across file systems the copy it made: same size, same mtime),
 *   finishes by removing the source, and gives that name.
 * Where hard links are not supported at all (some network shares), a rename after a check that the
 * name is free: the check and the rename are two steps, the best such a file system allows.
 */
import { constants } from 'node:fs';
import { copyFile, link, lstat, rename, rm, utimes } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import {
  candidateNames,
  ensureFolder,
  forgetFolder,
  freeTarget,
  heldByFileOf,
  nothingThere,
  tempSuffix,
} from './files.ts';

/** Link errors of file systems without hard links. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP']);

const code = (error: unknown) => (error as NodeJS.ErrnoException).code;

/**
 * Makes `target` a name of `source`'s file, never over another: 'placed' (made now, or found made
 * by a move a crash cut short) or 'taken' (another file has the name). The source stays.
 */
async function place(source: string, target: string): Promise<'placed' | 'taken'> {
  try {
    await link(source, target);
    return 'placed';
  } catch (error) {
    if (code(error) === 'EEXIST') return (await heldByFileOf(source, target)) ? 'placed' : 'taken';
    if (code(error) === 'EXDEV') return placeCopy(source, target);
    if (NO_LINKS.has(code(error)!)) {
      if (!(await nothingThere(target))) return (await heldByFileOf(source, target)) ? 'placed' : 'taken';
      await rename(source, target);
      return 'placed';
    }
    throw error;
  }
}

/** Across file systems: a whole copy under a temp name, given the source's times, then linked. */
async function placeCopy(source: string, target: string): Promise<'placed' | 'taken'> {
  if (!(await nothingThere(target))) return (await heldByFileOf(source, target)) ? 'placed' : 'taken';
  const temp = join(dirname(target), `.${basename(target)}.${tempSuffix()}.tmp`);
  try {
    await copyFile(source, temp, constants.COPYFILE_EXCL);
    // The copy's mtime is the source's: a move cut short after the link knows the copy as its own.
    // In seconds with their fraction: a Date would round them to the millisecond.
    const { atimeMs, mtimeMs } = await lstat(source);
    await utimes(temp, atimeMs / 1000, mtimeMs / 1000);
    try {
      await link(temp, target);
    } catch (error) {
      if (code(error) !== 'EEXIST') throw error;
      return (await heldByFileOf(source, target)) ? 'placed' : 'taken';
    }
    return 'placed';
  } finally {
    await rm(temp, { force: true });
  }
}

/** Finishes a placed move: the source removed (already gone after a rename). */
const removeSource = (source: string) => rm(source, { force: true });

/**
 * Moves `source` to exactly `target` (a name recorded before the move). Done already when the
 * source is gone; an error when another file has the name (the source stays where it is).
 */
export async function moveTo(source: string, target: string): Promise<void> {
  if (await nothingThere(source)) return;
  await ensureFolder(dirname(target));
  if ((await place(source, target)) === 'taken')
    throw new Error(`${target} is taken by another file; the original stays at ${source}`);
  await removeSource(source);
}

/**
 * Moves `source` into `dir` under `rel`, or the next free name ("a (2).pdf", freeTarget): two files
 * given one name at the same moment both keep theirs. Returns the new path.
 */
export async function moveInto(
  source: string,
  dir: string,
  rel: string,
  free: (candidate: string) => Promise<boolean> = nothingThere,
): Promise<string> {
  let remade = false;
  for (;;) {
    const target = await freeTarget(dir, rel, { linkOf: source, free });
    const folder = dirname(target);
    await ensureFolder(folder);
    let placed;
    try {
      placed = await place(source, target);
    } catch (error) {
      // The folder was made by this process once and may have been removed since: made again, once.
      if (code(error) === 'ENOENT' && !remade && forgetFolder(folder)) {
        remade = true;
        continue;
      }
      throw error;
    }
    if (placed === 'taken') continue; // another move took the name meanwhile: the next one
    await removeSource(source);
    return target;
  }
}

/** What a file was before a move: enough to know it again at its new name. */
export interface MovedFile {
  ino: number;
  size: number;
  mtimeMs: number;
}

/**
 * Where a moveInto of `rel` into `dir` put a file when a crash came before anyone recorded where:
 * the first of its names (candidateNames, the order moveInto tries them) that holds it, by inode
 * and size, or across file systems by size and mtime. Names are taken in order, so the search ends
 * at the first name nothing holds. undefined: not there (deleted meanwhile, or never moved).
 */
export async function movedInto(dir: string, rel: string, was: MovedFile): Promise<string | undefined> {
  for (const candidate of candidateNames(dir, rel)) {
    const info = await lstat(candidate).catch(() => undefined);
    if (!info) return undefined;
    // The mtime to the millisecond, either side: a row keeps it as a whole number (floored).
    const sameMtime = Math.abs(info.mtimeMs - was.mtimeMs) <= 1;
    if (info.isFile() && info.size === was.size && (info.ino === was.ino || sameMtime))
      return candidate;
  }
  return undefined;
}
