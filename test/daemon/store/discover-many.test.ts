/**
 * Recording what a scan found: discoverMany writes its rows INSERT_ROWS (50) a statement and the
 * rest one by one. Every file must still be recorded exactly once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { StateDb } from '../../../daemon/src/store/state.ts';

const dbs: StateDb[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) db.close();
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function openDb() {
  const dir = await mkdtemp(join(tmpdir(), 'docex-discover-many-'));
  dirs.push(dir);
  const db = new StateDb(join(dir, 'sync.db'));
  dbs.push(db);
  return db;
}

const file = (path: string, i = 0) => ({
  path,
  rel: path.slice(path.indexOf('/', 1) + 1),
  size: 100 + i,
  mtimeMs: 1000 + i,
  ino: 5000 + i,
});

describe('discoverMany', () => {
  it.each([1, 49, 50, 51, 149, 1000])(
    'records %i files once each, in the order given, as given',
    async (n) => {
      const db = await openDb();
      const files = Array.from({ length: n }, (_, i) => file(`/in/sub/f${(i * 7919) % n}.pdf`, i));
      db.discoverMany('/in', files, 2000, 30);
      db.flush();
      const rows = db.db.prepare('SELECT * FROM files ORDER BY id').all() as Array<Record<string, unknown>>;
      expect(rows.map((r) => r.path)).toEqual(files.map((f) => f.path));
      expect(new Set(rows.map((r) => r.id)).size).toBe(n);
      files.forEach((f, i) =>
        expect(rows[i]).toMatchObject({
          watch: '/in',
          path: f.path,
          rel: f.rel,
          size: f.size,
          mtime_ms: f.mtimeMs,
          ino: f.ino,
          state: 'discovered',
          stable_since: 2000,
          next_at: 2030,
          discovered_at: 2000,
          updated_at: 2000,
          attempts: 0,
          sha256: null,
        }),
      );
    },
  );

  it('nothing to record writes nothing', async () => {
    const db = await openDb();
    const before = db.mark();
    db.discoverMany('/in', [], 1, 0);
    expect(db.changedSince(before)).toBe(false);
    expect(db.counts().discovered).toBe(0);
  });
});
