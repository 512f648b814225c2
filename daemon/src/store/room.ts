/** Free space of the filesystem a file is on (one statfs: cheap enough before every scheduler pump). */
import { existsSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
import type { DiskSpace } from '../domain/disk-space.ts';
import type { ConfigSlice } from '../config/config.ts';

/** What the room check reads of the config: where the state DB is, and how much room it needs. */
export type StateDbRoomConfig = ConfigSlice<'state_db' | 'state_db_min_free_mb'>;

const MIB = 1024 * 1024;

/**
 * The free space (for an unprivileged user: `bavail`) where `path` lives or would live: its folder,
 * or the nearest one that exists (status before the first run). Undefined when even that cannot be
 * measured (`:memory:`, a filesystem statfs refuses): no measurement is no pause.
 */
export function diskSpaceOf(path: string, minFreeMb: number): DiskSpace | undefined {
  if (path === ':memory:') return undefined;
  let dir = dirname(path);
  while (!existsSync(dir) && dirname(dir) !== dir) dir = dirname(dir);
  try {
    const fs = statfsSync(dir);
    return { path, freeBytes: fs.bavail * fs.bsize, minFreeBytes: Math.round(minFreeMb * MIB) };
  } catch {
    return undefined;
  }
}

/** The state DB's room, measured now. */
export const stateDbSpace = (config: StateDbRoomConfig) =>
  diskSpaceOf(config.state_db, config.state_db_min_free_mb);
