import { appendFile, cp, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { DocexClient } from '@docex/shared';
import { ConfigSchema } from '../../../daemon/src/config/config.ts';
import { NEVER } from '../../../daemon/src/domain/lifecycle.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { Pipeline } from '../../../daemon/src/pipeline/pipeline.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';
import type { Candidate, Listed } from '../../../daemon/src/intake/walk.ts';
import { makeWorld, until, invoice, type World } from '../helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

// Polling once an hour: the watcher is blind for the test's duration, only the rescan (1 s) sees.
const RESCAN_ONLY = '    polling: true\n    polling_interval_ms: 3600000';
const rescans = (w: World) =>
  w.logs.filter((l) => (JSON.parse(l) as { msg: string }).msg === 'rescan').length;

describe('what a scan compares with', () => {
  it("reads the listed paths' rows still in the pipeline, not archived ones (unless files are kept), nor other paths", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-known-'));
    const db = new StateDb(join(dir, 'sync.db'));
    try {
      const file = (name: string, size = 1) => ({
        path: `/w/${name}`,
        rel: name,
        size,
        mtimeMs: 1,
        ino: 7,
      });
      db.files.discoverMany('/w', [file('old.pdf'), file('again.pdf', 1)], 0, 0);
      for (const row of db.files.inState('discovered'))
        db.files.update(row.id, { state: 'archived', next_at: NEVER }, 1);
      db.files.discoverMany('/w', [file('again.pdf', 2), file('new.pdf')], 2, 0);
      db.files.discoverMany('/v', [{ ...file('other.pdf'), path: '/v/other.pdf' }], 2, 0);
      db.flush();

      const listed = ['/w/old.pdf', '/w/again.pdf', '/w/new.pdf', '/w/unknown.pdf', '/v/other.pdf'];
      const inPipeline = db.files.known('/w', listed, false);
      expect([...inPipeline.keys()].sort()).toEqual(['/w/again.pdf', '/w/new.pdf']);
      expect(inPipeline.get('/w/again.pdf')).toMatchObject({ state: 'discovered', size: 2 });
      expect([...db.files.known('/w', ['/w/new.pdf'], false).keys()]).toEqual(['/w/new.pdf']);
      expect(db.files.known('/w', [], false).size).toBe(0);
      // Not held by a row in the pipeline: archived, unknown, or another watch's.
      expect(db.files.unheld('/w', listed)).toEqual([0, 3, 4]);

      const all = db.files.known('/w', listed, true);
      expect([...all.keys()].sort()).toEqual(['/w/again.pdf', '/w/new.pdf', '/w/old.pdf']);
      expect(all.get('/w/again.pdf')).toMatchObject({ state: 'discovered', size: 2 }); // the latest row wins
      expect(all.get('/w/old.pdf')).toMatchObject({ state: 'archived' });
    } finally {
      db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  /** A pipeline on a fresh DB (never started: nothing is uploaded), and a stat stand-in that counts. */
  async function scanPipeline(onSuccess: 'move' | 'keep' = 'move') {
    const dir = await mkdtemp(join(tmpdir(), 'docex-ingest-'));
    const config = ConfigSchema.parse({
      state_db: join(dir, 'sync.db'),
      watch: [
        {
          path: '/w',
          template_id: 1,
          output: join(dir, 'out'),
          failed_dir: join(dir, 'failed'),
          on_success: onSuccess,
        },
      ],
    });
    const db = new StateDb(config.state_db);
    const log = createLogger('silent', { pretty: false });
    const pipeline = new Pipeline({ db, client: {} as DocexClient, config, log });
    const looked: string[][] = [];
    const stats =
      (size: number) =>
      async (listed: Listed[]): Promise<Candidate[]> => {
        looked.push(listed.map((l) => l.rel));
        return listed.map((l) => ({ ...l, size, mtimeMs: 1, ino: 7 }));
      };
    const list = (...names: string[]) => names.map((n) => ({ path: `/w/${n}`, rel: n }));
    const rows = () => db.db.prepare('SELECT path, state FROM files ORDER BY id').all();
    return {
      db,
      pipeline,
      watch: config.watch[0]!,
      looked,
      stats,
      list,
      rows,
      cleanup: async () => (db.close(), rm(dir, { recursive: true, force: true })),
    };
  }

  it('a rescan does not stat the files the pipeline already holds; new and archived paths are looked at', async () => {
    const p = await scanPipeline();
    try {
      expect(await p.pipeline.ingest(p.watch, p.list('a.pdf', 'b.pdf'), p.stats(1))).toBe(2);
      expect(await p.pipeline.ingest(p.watch, p.list('a.pdf', 'b.pdf'), p.stats(1))).toBe(0);
      expect(p.looked).toEqual([['a.pdf', 'b.pdf']]); // the second scan looked at nothing

      const b = p.db.files.current('/w/b.pdf')!;
      p.db.files.update(b.id, { state: 'archived', next_at: NEVER }, 2);
      expect(await p.pipeline.ingest(p.watch, p.list('a.pdf', 'b.pdf', 'c.pdf'), p.stats(2))).toBe(2);
      expect(p.looked[1]).toEqual(['b.pdf', 'c.pdf']);
      expect(p.rows()).toEqual([
        { path: '/w/a.pdf', state: 'discovered' },
        { path: '/w/b.pdf', state: 'archived' },
        { path: '/w/b.pdf', state: 'discovered' },
        { path: '/w/c.pdf', state: 'discovered' },
      ]);
    } finally {
      await p.cleanup();
    }
  });

  it('a file an event records while the scan stats it is recorded once', async () => {
    const p = await scanPipeline();
    try {
      const look = async (listed: Listed[]) => {
        const found = await p.stats(1)(listed);
        p.pipeline.candidate(p.watch, found[0]!); // the watcher's event for a.pdf, during the stat
        return found;
      };
      expect(await p.pipeline.ingest(p.watch, p.list('a.pdf', 'b.pdf'), look)).toBe(1);
      expect(p.rows()).toEqual([
        { path: '/w/a.pdf', state: 'discovered' },
        { path: '/w/b.pdf', state: 'discovered' },
      ]);
    } finally {
      await p.cleanup();
    }
  });

  it('a file another process records while the scan stats it is recorded once', async () => {
    const p = await scanPipeline();
    const other = new StateDb(p.db.path);
    try {
      const look = async (listed: Listed[]) => {
        const found = await p.stats(1)(listed);
        other.files.discover({ watch: '/w', ...found[1]! }, 5, 0); // e.g. a mail intake of its own
        other.flush();
        return found;
      };
      expect(await p.pipeline.ingest(p.watch, p.list('a.pdf', 'b.pdf'), look)).toBe(1);
      expect(p.rows()).toEqual([
        { path: '/w/b.pdf', state: 'discovered' },
        { path: '/w/a.pdf', state: 'discovered' },
      ]);
    } finally {
      other.close();
      await p.cleanup();
    }
  });

  it('with nothing written while it stats, the scan does not read the rows again (but with keep it does)', async () => {
    const p = await scanPipeline();
    const keep = await scanPipeline('keep');
    try {
      const reads = vi.spyOn(p.db.files, 'known');
      expect(await p.pipeline.ingest(p.watch, p.list('a.pdf', 'b.pdf'), p.stats(1))).toBe(2);
      expect(reads).not.toHaveBeenCalled();
      const keptReads = vi.spyOn(keep.db.files, 'known');
      expect(await keep.pipeline.ingest(keep.watch, keep.list('a.pdf'), keep.stats(1))).toBe(1);
      expect(keptReads).toHaveBeenCalledTimes(1);
    } finally {
      await p.cleanup();
      await keep.cleanup();
    }
  });

  it('with on_success: keep, a kept file is looked at on every scan and new only when it changed', async () => {
    const p = await scanPipeline('keep');
    try {
      await p.pipeline.ingest(p.watch, p.list('kept.pdf'), p.stats(1));
      const kept = p.db.files.current('/w/kept.pdf')!;
      p.db.files.update(kept.id, { state: 'archived', next_at: NEVER }, 2);
      expect(await p.pipeline.ingest(p.watch, p.list('kept.pdf'), p.stats(1))).toBe(0);
      expect(await p.pipeline.ingest(p.watch, p.list('kept.pdf'), p.stats(5))).toBe(1);
      expect(p.looked).toEqual([['kept.pdf'], ['kept.pdf'], ['kept.pdf']]);
    } finally {
      await p.cleanup();
    }
  });

  it('a rescan finds a file put back after it was archived (same name, size and mtime): new work', async () => {
    world = await makeWorld({ watchYaml: RESCAN_ONLY });
    const daemon = await world.start();
    const inbox = join(world.dir, 'inbox', 'back.txt');
    await writeFile(inbox, invoice('R-1'));
    const { mtime } = await stat(inbox);
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1, 10_000);
    await cp(join(world.dir, 'processed', 'back.txt'), inbox, { preserveTimestamps: true });
    await utimes(inbox, mtime, mtime);
    await until('archived again', () => daemon.db.fileCounts.counts().archived === 2, 10_000);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual(['back (2).txt', 'back.txt']);
  });

  it('with on_success: keep, a rescan leaves a kept file alone until it changes', async () => {
    world = await makeWorld({ watchYaml: `${RESCAN_ONLY}\n    on_success: keep` });
    const daemon = await world.start();
    const kept = join(world.dir, 'inbox', 'kept.txt');
    await writeFile(kept, invoice('K-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1, 10_000);
    const seen = rescans(world);
    await until('two more rescans', () => rescans(world!) >= seen + 2, 10_000);
    expect(daemon.db.fileCounts.counts()).toMatchObject({ archived: 1, discovered: 0 });
    await appendFile(kept, 'Widget | 1,00\n');
    await until('the changed file archived too', () => daemon.db.fileCounts.counts().archived === 2, 10_000);
    expect(await readdir(join(world.dir, 'inbox'))).toEqual(['kept.txt']);
  });
});
