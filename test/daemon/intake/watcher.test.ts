/**
 * The folder watcher on its own (a fake sink instead of the pipeline) and, end to end, what it finds
 * between scans. Rescans are set to an hour: whatever is found after the start-up scan came from an
 * event.
 */
import { appendFileSync, type FSWatcher } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { WatchConfig } from '../../../daemon/src/config/config.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import type { Candidate, Listed } from '../../../daemon/src/intake/walk.ts';
import { FolderWatcher } from '../../../daemon/src/intake/watcher.ts';
import { invoice, makeWorld, until, watchIn, type World } from '../helpers.ts';

const HOUR = 3_600_000;

class FakeSink {
  readonly candidates: Candidate[] = [];
  readonly ingested: Candidate[] = [];
  candidate(_watch: WatchConfig, file: Candidate) {
    this.candidates.push(file);
  }
  async ingest(_watch: WatchConfig, listed: Listed[], look: (listed: Listed[]) => Promise<Candidate[]>) {
    const files = await look(listed);
    this.ingested.push(...files);
    return files.length;
  }
  /** Paths relative to the watched folder, from events and walks. */
  seen(): string[] {
    return [...new Set([...this.candidates, ...this.ingested].map((c) => c.rel))].sort();
  }
}

interface Setup {
  root: string;
  outside: string;
  sink: FakeSink;
  logs: Array<{ level: number; msg: string }>;
  watcher: FolderWatcher;
}
const setups: Setup[] = [];
let world: World | undefined;
afterEach(async () => {
  for (const s of setups.splice(0)) {
    await s.watcher.stop();
    await rm(join(s.root, '..'), { recursive: true, force: true });
  }
  await world?.cleanup();
  world = undefined;
});

/** A watcher on an empty folder (or as `prepare` leaves it), started. */
async function start(watch: Record<string, unknown> = {}, prepare?: (root: string) => Promise<void>) {
  const base = await mkdtemp(join(tmpdir(), 'docex-watcher-'));
  const root = join(base, 'inbox');
  const outside = join(base, 'elsewhere');
  await mkdir(root);
  await mkdir(outside);
  await prepare?.(root);
  const config = watchIn(base, root, { recursive: true, ...watch });
  const logs: Setup['logs'] = [];
  const log = createLogger('debug', {
    pretty: false,
    destination: new Writable({ write: (c, _e, done) => (logs.push(JSON.parse(String(c))), done()) }),
  });
  const sink = new FakeSink();
  const watcher = new FolderWatcher(config, sink, log);
  await watcher.start();
  const setup = { root, outside, sink, logs, watcher };
  setups.push(setup);
  return setup;
}

const seenAll = (s: Setup, ...rels: string[]) =>
  until(rels.join(', '), () => rels.every((r) => s.sink.seen().includes(r)), 10_000);

describe('the native watcher', () => {
  it('watches a sub-folder created after the start, and the folders made in it', async () => {
    const s = await start();
    await mkdir(join(s.root, 'new'));
    await writeFile(join(s.root, 'new', 'a.txt'), 'a');
    await seenAll(s, 'new/a.txt');
    // Written once the folder is known: only its own watcher can report it.
    await writeFile(join(s.root, 'new', 'b.txt'), 'b');
    await mkdir(join(s.root, 'new', 'deeper'));
    await seenAll(s, 'new/b.txt');
    await writeFile(join(s.root, 'new', 'deeper', 'c.txt'), 'c');
    await seenAll(s, 'new/deeper/c.txt');
    expect(s.sink.ingested.map((c) => c.rel)).not.toContain('new/b.txt');
  });

  it('records a folder moved in with its files and sub-folders, without a log line per file', async () => {
    const s = await start();
    const moved = join(s.outside, 'batch');
    await mkdir(join(moved, 'sub'), { recursive: true });
    for (const n of [1, 2, 3, 4, 5]) await writeFile(join(moved, `${n}.txt`), String(n));
    for (const n of [6, 7]) await writeFile(join(moved, 'sub', `${n}.txt`), String(n));
    await rename(moved, join(s.root, 'batch'));
    await seenAll(s, 'batch/1.txt', 'batch/5.txt', 'batch/sub/7.txt');
    expect(s.sink.seen()).toHaveLength(7);
    // The moved folders are watched too.
    await writeFile(join(s.root, 'batch', 'sub', '8.txt'), '8');
    await seenAll(s, 'batch/sub/8.txt');
    const infoLines = s.logs.filter((l) => l.level >= 30 && l.msg !== 'start-up scan');
    expect(infoLines).toEqual([]);
  });

  it('a folder whose watcher fails is walked again and watched anew', async () => {
    const s = await start({}, (root) => mkdir(join(root, 'sub')));
    const folders = (s.watcher as unknown as { folders: Map<string, { watcher: FSWatcher }> }).folders;
    const failing = folders.get(join(s.root, 'sub'))!.watcher;
    failing.emit('error', Object.assign(new Error('EIO: i/o error, watch'), { code: 'EIO' }));
    expect(folders.has(join(s.root, 'sub'))).toBe(false);
    // Written while the folder has no watcher: only the walk that follows the failure can find it.
    await writeFile(join(s.root, 'sub', 'during.txt'), 'd');
    await seenAll(s, 'sub/during.txt');
    expect(s.sink.ingested.map((c) => c.rel)).toContain('sub/during.txt');
    const renewed = folders.get(join(s.root, 'sub'))?.watcher;
    expect(renewed).toBeDefined();
    expect(renewed).not.toBe(failing);
    await writeFile(join(s.root, 'sub', 'after.txt'), 'a');
    await seenAll(s, 'sub/after.txt');
    expect(s.sink.candidates.map((c) => c.rel)).toContain('sub/after.txt');
  });

  it('keeps watching a folder removed and made again, or moved away and made again, under the same name', async () => {
    const s = await start({}, (root) => mkdir(join(root, 'sub')));
    await writeFile(join(s.root, 'sub', 'a.txt'), 'a');
    await seenAll(s, 'sub/a.txt');

    await rm(join(s.root, 'sub'), { recursive: true });
    await mkdir(join(s.root, 'sub'));
    await writeFile(join(s.root, 'sub', 'b.txt'), 'b');
    await seenAll(s, 'sub/b.txt');
    await writeFile(join(s.root, 'sub', 'c.txt'), 'c');
    await seenAll(s, 'sub/c.txt');

    // Moved away, its old watcher still sees it (elsewhere): the new folder needs one of its own.
    await rename(join(s.root, 'sub'), join(s.outside, 'old'));
    await mkdir(join(s.root, 'sub'));
    await writeFile(join(s.root, 'sub', 'd.txt'), 'd');
    await seenAll(s, 'sub/d.txt');
    await writeFile(join(s.root, 'sub', 'e.txt'), 'e');
    await writeFile(join(s.outside, 'old', 'not-ours.txt'), 'x');
    await seenAll(s, 'sub/e.txt');
    expect(s.sink.seen()).toEqual(['sub/a.txt', 'sub/b.txt', 'sub/c.txt', 'sub/d.txt', 'sub/e.txt']);
  });

  it('renames a file whose name is not valid UTF-8 when its event comes, and reports it', async () => {
    const s = await start();
    await writeFile(
      Buffer.concat([Buffer.from(`${s.root}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]),
      'x',
    );
    await until('reported', () => s.sink.candidates.some((c) => c.rel === 'café.txt'), 10_000);
    expect(await readdir(s.root)).toEqual(['café.txt']);
    expect(s.logs.some((l) => l.msg === 'renamed a file whose name is not valid UTF-8')).toBe(true);
  });

  it('with recursive: false, files in sub-folders are ignored', async () => {
    const s = await start({ recursive: false }, async (root) => {
      await mkdir(join(root, 'sub'));
      await writeFile(join(root, 'sub', 'old.txt'), 'o');
      await writeFile(join(root, 'top.txt'), 't');
    });
    expect(s.sink.seen()).toEqual(['top.txt']);
    await writeFile(join(s.root, 'sub', 'new.txt'), 'n');
    await mkdir(join(s.root, 'made'));
    await writeFile(join(s.root, 'made', 'new.txt'), 'n');
    await writeFile(join(s.root, 'later.txt'), 'l');
    await seenAll(s, 'later.txt');
    await s.watcher.stop();
    expect(s.sink.seen()).toEqual(['later.txt', 'top.txt']);
  });

  it('a burst of writes to a file is one candidate per event-loop turn, not one per event', async () => {
    const s = await start({}, async (root) => {
      await writeFile(join(root, 'a.txt'), '');
      await writeFile(join(root, 'b.txt'), '');
    });
    // Interleaved, so the kernel cannot merge the events: 100 of them, read in one turn.
    for (let i = 0; i < 50; i++) {
      appendFileSync(join(s.root, 'a.txt'), 'x');
      appendFileSync(join(s.root, 'b.txt'), 'x');
    }
    const final = (rel: string) => s.sink.candidates.some((c) => c.rel === rel && c.size === 50);
    await until('both reported whole', () => final('a.txt') && final('b.txt'), 10_000);
    await s.watcher.stop();
    for (const rel of ['a.txt', 'b.txt'])
      expect(s.sink.candidates.filter((c) => c.rel === rel).length).toBeLessThanOrEqual(2);
  });
});

describe('the polling watcher', () => {
  it('reports a file dropped after the start (rescans an hour apart)', async () => {
    const s = await start({ polling: true, polling_interval_ms: 100 }, (root) =>
      writeFile(join(root, 'early.txt'), 'e'),
    );
    expect(s.sink.ingested.map((c) => c.rel)).toEqual(['early.txt']);
    await mkdir(join(s.root, 'sub'));
    await writeFile(join(s.root, 'dropped.txt'), 'd');
    await writeFile(join(s.root, 'sub', 'deep.txt'), 'd');
    await until(
      'reported',
      () => ['dropped.txt', 'sub/deep.txt'].every((r) => s.sink.candidates.some((c) => c.rel === r)),
      10_000,
    );
  });
});

describe('end to end, between scans', () => {
  const recursiveNoRescan = async () => {
    world = await makeWorld();
    const yaml = await readFile(world.configFile, 'utf8');
    await writeFile(
      world.configFile,
      yaml.replace('rescan_interval_ms: 1000', `rescan_interval_ms: ${HOUR}\n    recursive: true`),
    );
    return world;
  };

  it('a file in a sub-folder made after the start is processed', async () => {
    const w = await recursiveNoRescan();
    const daemon = await w.start();
    await mkdir(join(w.dir, 'inbox', '2026', 'march'), { recursive: true });
    await writeFile(join(w.dir, 'inbox', '2026', 'march', 'inv.txt'), invoice('W-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
    // Dropped once the folder is known: only its own watcher can report it.
    await writeFile(join(w.dir, 'inbox', '2026', 'march', 'later.txt'), invoice('W-3'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 2);
    expect((await readdir(join(w.dir, 'processed', '2026', 'march'))).sort()).toEqual([
      'inv.txt',
      'later.txt',
    ]);
  });

  it('a file whose name is not valid UTF-8 dropped after the start is renamed and processed', async () => {
    const w = await recursiveNoRescan();
    const daemon = await w.start();
    await writeFile(
      Buffer.concat([Buffer.from(`${w.dir}/inbox/na`), Buffer.from([0xef]), Buffer.from('ve.txt')]),
      invoice('W-2'),
    );
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
    expect(await readdir(join(w.dir, 'processed'))).toEqual(['naïve.txt']);
  });
});
