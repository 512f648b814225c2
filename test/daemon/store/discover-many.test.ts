/**
 * Recording what a scan found: discoverMany writes its rows INSERT_ROWS (50) a statement and the
 * rest one by one, and unheld answers a folder that no row names with one seek. Every file must
 * still be recorded exactly once, and every path a row holds still be left out.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NEVER } from '../../../daemon/src/domain/lifecycle.ts';
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
      db.files.discoverMany('/in', files, 2000, 30);
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
    db.files.discoverMany('/in', [], 1, 0);
    expect(db.changedSince(before)).toBe(false);
    expect(db.fileCounts.counts().discovered).toBe(0);
  });
});

describe('unheld', () => {
  it('a folder no row names: every path, whatever rows other folders (whose names start alike) hold', async () => {
    const db = await openDb();
    db.files.discoverMany(
      '/in',
      [file('/in/a0.pdf'), file('/in/a.pdf'), file('/in-2/x.pdf'), file('/inx.pdf')],
      1,
      0,
    );
    db.files.discoverMany('/in', [file('/in/b/c.pdf'), file('/in/b0/c.pdf'), file('/in/b-c.pdf')], 1, 0);
    db.flush();
    const listed = ['/in/a/x.pdf', '/in/a/y.pdf', '/in/a/é.pdf', '/in/a/\u{1F600}.pdf', '/in/a/\uFFFD.pdf'];
    expect(db.files.unheld('/in', listed)).toEqual([0, 1, 2, 3, 4]);
  });

  it('leaves out every path a row holds, in the folder or not, whatever characters it has', async () => {
    const db = await openDb();
    const names = ['x.pdf', 'é.pdf', '\u{1F600}.pdf', '\uFFFD.pdf', 'z.pdf', 'deep/er.pdf'];
    db.files.discoverMany(
      '/in',
      names.map((n, i) => file(`/in/a/${n}`, i)),
      1,
      0,
    );
    // At rest (archived): holds nothing.
    db.files.update(5, { state: 'archived', next_at: NEVER }, 1);
    db.flush();
    const listed = [...names.map((n) => `/in/a/${n}`), '/in/a/new.pdf', '/in/a/\u{1F601}.pdf'];
    expect(db.files.unheld('/in', listed)).toEqual([4, 6, 7]);
    // Paths of two folders: each is looked up.
    expect(
      db.files.unheld('/in', ['/in/b/new.pdf', '/in/a/x.pdf', '/in/a/deep/er.pdf', '/in/c.pdf']),
    ).toEqual([0, 3]);
    // Another watch's rows hold nothing for this one.
    expect(db.files.unheld('/other', ['/in/a/x.pdf', '/in/a/new.pdf'])).toEqual([0, 1]);
  });

  it('a row under the folder (a sub-folder) is not mistaken for one of its paths', async () => {
    const db = await openDb();
    db.files.discoverMany('/in', [file('/in/a/sub/x.pdf')], 1, 0);
    db.flush();
    expect(db.files.unheld('/in', ['/in/a/x.pdf', '/in/a/sub.pdf'])).toEqual([0, 1]);
  });
});
