import { appendFile, cp, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NEVER } from '../../daemon/src/lifecycle.ts';
import { StateDb } from '../../daemon/src/state.ts';
import { makeWorld, until, invoice, type World } from './helpers.ts';

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
  it("reads the rows still in the pipeline, not the watch's archived history (unless files are kept)", async () => {
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
      db.discoverMany('/w', [file('old.pdf'), file('again.pdf', 1)], 0, 0);
      for (const row of db.inState('discovered')) db.update(row.id, { state: 'archived', next_at: NEVER }, 1);
      db.discoverMany('/w', [file('again.pdf', 2), file('new.pdf')], 2, 0);
      db.discoverMany('/v', [{ ...file('other.pdf'), path: '/v/other.pdf' }], 2, 0);
      db.flush();

      const inPipeline = db.known('/w', false);
      expect([...inPipeline.keys()].sort()).toEqual(['/w/again.pdf', '/w/new.pdf']);
      expect(inPipeline.get('/w/again.pdf')).toMatchObject({ state: 'discovered', size: 2 });

      const all = db.known('/w', true);
      expect([...all.keys()].sort()).toEqual(['/w/again.pdf', '/w/new.pdf', '/w/old.pdf']);
      expect(all.get('/w/again.pdf')).toMatchObject({ state: 'discovered', size: 2 }); // the latest row wins
      expect(all.get('/w/old.pdf')).toMatchObject({ state: 'archived' });
    } finally {
      db.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a rescan finds a file put back after it was archived (same name, size and mtime): new work', async () => {
    world = await makeWorld({ watchYaml: RESCAN_ONLY });
    const daemon = await world.start();
    const inbox = join(world.dir, 'inbox', 'back.txt');
    await writeFile(inbox, invoice('R-1'));
    const { mtime } = await stat(inbox);
    await until('archived', () => daemon.db.counts().archived === 1, 10_000);
    await cp(join(world.dir, 'processed', 'back.txt'), inbox, { preserveTimestamps: true });
    await utimes(inbox, mtime, mtime);
    await until('archived again', () => daemon.db.counts().archived === 2, 10_000);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual(['back (2).txt', 'back.txt']);
  });

  it('with on_success: keep, a rescan leaves a kept file alone until it changes', async () => {
    world = await makeWorld({ watchYaml: `${RESCAN_ONLY}\n    on_success: keep` });
    const daemon = await world.start();
    const kept = join(world.dir, 'inbox', 'kept.txt');
    await writeFile(kept, invoice('K-1'));
    await until('archived', () => daemon.db.counts().archived === 1, 10_000);
    const seen = rescans(world);
    await until('two more rescans', () => rescans(world!) >= seen + 2, 10_000);
    expect(daemon.db.counts()).toMatchObject({ archived: 1, discovered: 0 });
    await appendFile(kept, 'Widget | 1,00\n');
    await until('the changed file archived too', () => daemon.db.counts().archived === 2, 10_000);
    expect(await readdir(join(world.dir, 'inbox'))).toEqual(['kept.txt']);
  });
});
