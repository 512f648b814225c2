/**
 * Room for the state DB, as pure decisions: whether work pauses (free space of the state DB's
 * filesystem below `state_db_min_free_mb`, or a write that failed for lack of space), when it
 * resumes, and what status and the log say. The shell (run-state.ts, status/read-model.ts) measures
 * the free space (store/room.ts) and carries the decisions out.
 */

/** Free space of the filesystem holding the state DB, as measured. */
export interface DiskSpace {
  /** The state DB file the filesystem holds. */
  path: string;
  freeBytes: number;
  minFreeBytes: number;
}

/** Work paused for lack of room: since when, how much was free then, and why. */
export interface DiskPause {
  since: number;
  freeBytes: number;
  /** A write that failed (SQLITE_FULL, ENOSPC), or undefined when the free-space check paused it. */
  error: string | undefined;
}

/** While paused, how often the free space is measured again (idle otherwise: no timer). */
export const DISK_RECHECK_MS = 2000;

const MIB = 1024 * 1024;
export const mib = (bytes: number) => `${(bytes / MIB).toFixed(1)} MiB`;

/** Whether the space is below the threshold (an empty filesystem always is). */
export const isLow = (space: DiskSpace) => space.freeBytes < space.minFreeBytes || space.freeBytes === 0;

/**
 * Whether an error means the disk (of the state DB, or of a file written) is full: SQLite's
 * SQLITE_FULL, ENOSPC or EDQUOT from the OS, and SQLITE_IOERR_* while the space is low (a write
 * SQLite could not make; with room it is a real I/O error and is not taken for a full disk).
 */
export function isDiskFull(error: unknown, space: DiskSpace | undefined): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string') return false;
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') return true;
  return code.startsWith('SQLITE_IOERR') && space !== undefined && isLow(space);
}

/**
 * What follows a measurement: pause (room below the threshold), resume (paused, and the room is
 * back above the threshold and larger than when it paused: a pause by a failed write with room
 * above the threshold waits until something is freed), or nothing.
 */
export function diskStep(paused: DiskPause | undefined, space: DiskSpace): 'pause' | 'resume' | 'stay' {
  if (!paused) return isLow(space) ? 'pause' : 'stay';
  if (isLow(space)) return 'stay';
  return paused.error === undefined || space.freeBytes > paused.freeBytes ? 'resume' : 'stay';
}

/** What to do, said the same in the log and in status. */
const REMEDY =
  'free space on that filesystem (or move state_db to a filesystem with room); work resumes by itself when there is room, nothing is lost';

/** The reason status, the page and /healthz give (failing), and the log line's message. */
export function diskReason(space: DiskSpace, error?: string): string {
  const what = error
    ? `a write to the state DB ${space.path} failed for lack of space (${error}), ${mib(space.freeBytes)} free (state_db_min_free_mb: ${mib(space.minFreeBytes)})`
    : `the filesystem of the state DB ${space.path} has ${mib(space.freeBytes)} free, below state_db_min_free_mb (${mib(space.minFreeBytes)})`;
  return `${what}: work is paused; ${REMEDY}`;
}
