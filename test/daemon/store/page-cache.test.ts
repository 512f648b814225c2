/**
 * The state DB's page cache is bounded on purpose. better-sqlite3 builds SQLite with a 16 MB cache
 * per connection, and the DB of a long-running daemon only grows, so the cache filled with it and
 * RSS crept up for the first 16 MB of DB (an hour at 8 files/s in the soak bench, weeks in a quiet
 * office): the slope issue #26 measured. The bound must reach every connection the daemon and the
 * commands open, including the in-memory copy `status` reads on a full disk.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { PAGE_CACHE_KIB, StateDb } from '../../../daemon/src/store/state.ts';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function freshPath() {
  const dir = await mkdtemp(join(tmpdir(), 'docex-page-cache-'));
  dirs.push(dir);
  return join(dir, 'state', 'sync.db');
}

/** SQLite's cache_size as KiB: a negative pragma value is KiB, a positive one pages. */
function cacheKib(db: Database.Database): number {
  const size = db.pragma('cache_size', { simple: true }) as number;
  return size < 0 ? -size : (size * (db.pragma('page_size', { simple: true }) as number)) / 1024;
}

describe('the state DB page cache', () => {
  it('is bounded at PAGE_CACHE_KIB, well below the 16 MB better-sqlite3 would give it', async () => {
    const path = await freshPath();
    const plain = new Database(':memory:');
    expect(cacheKib(plain)).toBeGreaterThanOrEqual(16_000); // what the bound replaces
    plain.close();

    const db = new StateDb(path);
    try {
      expect(PAGE_CACHE_KIB).toBeLessThanOrEqual(4096);
      expect(cacheKib(db.db)).toBe(PAGE_CACHE_KIB);
    } finally {
      db.close();
    }
    // Reopened (the daemon's next start) and as status's in-memory copy: the same bound.
    const again = new StateDb(path);
    expect(cacheKib(again.db)).toBe(PAGE_CACHE_KIB);
    again.close();
    const copy = StateDb.copyOf(path);
    expect(cacheKib(copy.db)).toBe(PAGE_CACHE_KIB);
    copy.db.close();
  });
});
