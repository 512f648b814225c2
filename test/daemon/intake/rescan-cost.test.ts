/**
 * A rescan's cost follows what changed: a folder whose stats did not change since it was read, and
 * that the same watcher watched meanwhile, is not read again (nothing listed, looked up or stat'ed),
 * and the safety net stays: a file that comes with no watcher event and no change of its folder's
 * stats is found by the first rescan after full_rescan_interval_ms. The share without events is
 * played by fs.watch made deaf, a file system whose folder times do not move by lstat answering
 * a folder's stats as they were (node:fs and node:fs/promises mocked for this file).
 */
import type { Stats } from 'node:fs';
import { appendFile, lstat, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WatchConfig } from '../../../daemon/src/config/config.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import type { Candidate, Listed } from '../../../daemon/src/intake/walk.ts';
import { FULL_RESCAN_MS, FolderWatcher } from '../../../daemon/src/intake/watcher.ts';
import { until, watchIn } from '../helpers.ts';

/** Folders under these roots get a watcher that never reports anything (and never fails). */
const deaf = new Set<string>();
/** Folders no watcher can be made for (the inotify limit reached). */
const unwatchable = new Set<string>();
/** The deaf watchers, by folder: a test makes one fail. */
const deafWatchers = new Map<string, EventEmitter>();
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof import('node:fs')>();
  const watch = ((path: string, ...rest: unknown[]) => {
    if (unwatchable.has(String(path)))
      throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), {
        code: 'ENOSPC',
      });
    if ([...deaf].some((root) => String(path).startsWith(root))) {
      const watcher = Object.assign(new EventEmitter(), { close() {}, ref() {}, unref() {} });
      deafWatchers.set(String(path), watcher);
      return watcher;
    }
    return (fs.watch as (...a: unknown[]) => unknown)(path, ...rest);
  }) as typeof fs.watch;
  const lstatSync = ((path: string, ...rest: unknown[]) =>
    frozen.get(String(path)) ??
    (fs.lstatSync as (...a: unknown[]) => Stats | undefined)(path, ...rest)) as typeof fs.lstatSync;
  return { ...fs, watch, lstatSync, default: { ...fs, watch, lstatSync } };
});
/** Folders whose lstat answers the stats they had when frozen (their times do not move). */
const frozen = new Map<string, Stats>();
vi.mock('node:fs/promises', async (original) => {
  const fs = await original<typeof import('node:fs/promises')>();
  const lstat = (async (path: string, ...rest: unknown[]) =>
    frozen.get(String(path)) ??
    (fs.lstat as (...a: unknown[]) => Promise<Stats>)(path, ...rest)) as typeof fs.lstat;
  return { ...fs, lstat, default: { ...fs, lstat } };
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  deaf.clear();
  deafWatchers.clear();
  unwatchable.clear();
  frozen.clear();
});

/**
 * Records each file once, as the pipeline does with `on_success: keep`: a path it holds is new
 * again when its size or mtime changed. Counts what scans listed and what they stat'ed.
 */
class KeepingSink {
  readonly known = new Map<string, string>();
  readonly fromEvents: string[] = [];
  listed: string[] = [];
  looked: string[] = [];
  private fresh(f: Candidate) {
    const seen = `${f.size}:${f.mtimeMs}`;
    if (this.known.get(f.rel) === seen) return false;
    this.known.set(f.rel, seen);
    return true;
  }
  candidate(_watch: WatchConfig, file: Candidate) {
    if (this.fresh(file)) this.fromEvents.push(file.rel);
  }
  async ingest(_watch: WatchConfig, listed: Listed[], look: (listed: Listed[]) => Promise<Candidate[]>) {
    this.listed.push(...listed.map((l) => l.rel));
    this.looked.push(...listed.map((l) => l.rel));
    return (await look(listed)).filter((f) => this.fresh(f)).length;
  }
  /** What scans listed since the last call. */
  take() {
    const listed = this.listed.sort();
    this.listed = [];
    this.looked = [];
    return listed;
  }
}

/**
 * A tree of three folders of two files (and a sub-folder in d1), watched; rescans only when the
 * test says. No folder is racy unless `racyMs` is given: the folders are changed a moment before
 * each rescan (even in the same millisecond, which a racy window of 0 still counts as racy), and
 * the rule for folders changed just before they were read has a test of its own.
 */
async function startWatcher(
  options: { deaf?: boolean; racyMs?: number; watch?: Record<string, unknown> } = {},
) {
  const base = await mkdtemp(join(tmpdir(), 'docex-rescan-cost-'));
  const root = join(base, 'inbox');
  for (const dir of ['d0', 'd1', 'd1/sub', 'd2']) await mkdir(join(root, dir), { recursive: true });
  for (const dir of ['d0', 'd1', 'd1/sub', 'd2'])
    for (const name of ['a.pdf', 'b.pdf']) await writeFile(join(root, dir, name), `${dir}/${name}`);
  if (options.deaf ?? true) deaf.add(root);
  const watch = watchIn(base, root, { recursive: true, ...options.watch });
  const logs: Array<{ msg: string; full?: boolean; unchanged?: number; folders?: number }> = [];
  const log = createLogger('debug', {
    pretty: false,
    destination: new Writable({
      write: (chunk, _e, done) => {
        logs.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  });
  const sink = new KeepingSink();
  let clock = Date.now();
  const watcher = new FolderWatcher(watch, sink, log, undefined, undefined, {
    now: () => clock,
    racyMs: options.racyMs ?? Number.NEGATIVE_INFINITY,
  });
  cleanups.push(async () => {
    await watcher.stop();
    await rm(base, { recursive: true, force: true });
  });
  await watcher.start();
  expect(sink.take()).toHaveLength(8);
  const rescans = () => logs.filter((l) => l.msg === 'rescan');
  return {
    root,
    sink,
    watcher,
    rescans,
    /** Moves the clock of full rescans on. */
    later: (ms: number) => (clock += ms),
  };
}

describe('a rescan reads only what changed', () => {
  it('with nothing changed, it lists, looks up and stats no file', async () => {
    const t = await startWatcher();
    await t.watcher.scan();
    expect(t.sink.take()).toEqual([]);
    expect(t.rescans().at(-1)).toMatchObject({ full: false, folders: 5, unchanged: 5 });
  });

  it('a file added without an event is found by the next rescan, which reads only its folder', async () => {
    const t = await startWatcher();
    await writeFile(join(t.root, 'd1', 'sub', 'new.pdf'), 'new');
    await t.watcher.scan();
    expect(t.sink.take()).toEqual(['d1/sub/a.pdf', 'd1/sub/b.pdf', 'd1/sub/new.pdf']);
    expect(t.sink.known.has('d1/sub/new.pdf')).toBe(true);
    // A new folder changes its parent: found too, with its files.
    await mkdir(join(t.root, 'd2', 'later'));
    await writeFile(join(t.root, 'd2', 'later', 'x.pdf'), 'x');
    await t.watcher.scan();
    expect(t.sink.take()).toEqual(['d2/a.pdf', 'd2/b.pdf', 'd2/later/x.pdf']);
    // A folder removed is forgotten; the others are left alone.
    await rm(join(t.root, 'd2', 'later'), { recursive: true });
    await t.watcher.scan();
    expect(t.sink.take()).toEqual(['d2/a.pdf', 'd2/b.pdf']);
    await t.watcher.scan();
    expect(t.sink.take()).toEqual([]);
  });

  it('a folder changed just before it was read is read again at the next rescan', async () => {
    // Every folder looks changed "just now" (as on FAT, whose folder times move in 2-s steps).
    const t = await startWatcher({ racyMs: 3_600_000 });
    await t.watcher.scan();
    expect(t.sink.take()).toHaveLength(8);
  });

  it('a folder that cannot be watched is read at every rescan', async () => {
    const t = await startWatcher();
    const d0 = join(t.root, 'd0');
    // Its watcher fails, and none can be made again (the inotify limit reached meanwhile).
    unwatchable.add(d0);
    frozen.set(d0, await lstat(d0));
    deafWatchers.get(d0)!.emit('error', new Error('EIO'));
    await until('d0 walked again after its watcher was lost', () =>
      t.sink.listed.includes('d0/a.pdf') ? true : undefined,
    );
    t.sink.take();
    await writeFile(join(d0, 'unheard.pdf'), 'nobody watches d0');
    await t.watcher.scan();
    expect(t.sink.take()).toEqual(['d0/a.pdf', 'd0/b.pdf', 'd0/unheard.pdf']);
  });
});

describe('the safety net: a full rescan every full_rescan_interval_ms', () => {
  it('finds a file that came with no event and no change of its folder, within the bound', async () => {
    const t = await startWatcher({ watch: { full_rescan_interval_ms: 600_000 } });
    const d2 = join(t.root, 'd2');
    frozen.set(d2, await lstat(d2)); // its times do not move (coarse times, attribute caching)
    await writeFile(join(d2, 'missed.pdf'), 'no event, no folder change');
    await t.watcher.scan();
    t.later(599_000);
    await t.watcher.scan();
    expect(t.sink.known.has('d2/missed.pdf')).toBe(false);
    expect(t.rescans().map((r) => r.full)).toEqual([false, false]);
    t.later(1000);
    await t.watcher.scan();
    expect(t.sink.known.has('d2/missed.pdf')).toBe(true);
    expect(t.rescans().at(-1)).toMatchObject({ full: true, unchanged: 0 });
    // And the next one is partial again.
    t.sink.take();
    await t.watcher.scan();
    expect(t.sink.take()).toEqual([]);
  });

  it(`is hourly by default (FULL_RESCAN_MS = ${FULL_RESCAN_MS})`, async () => {
    const t = await startWatcher();
    t.later(FULL_RESCAN_MS - 1);
    await t.watcher.scan();
    t.later(1);
    await t.watcher.scan();
    expect(t.rescans().map((r) => r.full)).toEqual([false, true]);
  });

  it('finds a kept file changed in place whose event was lost; a working watcher reports it at once', async () => {
    const t = await startWatcher({ watch: { full_rescan_interval_ms: 600_000 } });
    const kept = join(t.root, 'd1', 'a.pdf');
    const before = await stat(join(t.root, 'd1'));
    await appendFile(kept, ' changed in place');
    // A change in place leaves the folder as it was: nothing but the file's own event says it.
    expect((await stat(join(t.root, 'd1'))).mtimeMs).toBe(before.mtimeMs);
    await t.watcher.scan();
    expect(t.sink.take()).toEqual([]);
    t.later(600_000);
    await t.watcher.scan();
    expect(t.sink.take()).toHaveLength(8);
    expect(t.sink.fromEvents).toEqual([]);
    expect(t.sink.known.get('d1/a.pdf')).toBe(
      `${(await stat(kept)).size}:${Math.floor((await stat(kept)).mtimeMs)}`,
    );

    const heard = await startWatcher({ deaf: false });
    await appendFile(join(heard.root, 'd1', 'a.pdf'), ' changed in place');
    await until('the change reported by its event', () => heard.sink.fromEvents.includes('d1/a.pdf'));
  });

  it('a scan asked to be full (the DB lost rows: disk full) reads every folder', async () => {
    const t = await startWatcher();
    await t.watcher.scan('full');
    expect(t.sink.take()).toHaveLength(8);
    expect(t.rescans().at(-1)).toMatchObject({ full: true });
  });

  it('with polling: true (a network share) every rescan reads every folder', async () => {
    const t = await startWatcher({ watch: { polling: true, polling_interval_ms: 3_600_000 } });
    await t.watcher.scan();
    expect(t.sink.take()).toHaveLength(8);
    expect(t.rescans().at(-1)).toMatchObject({ full: true });
  });
});
