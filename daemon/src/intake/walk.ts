/**
 * Walks a watched folder: readdir by raw name (a name that is not valid UTF-8 is renamed) and the
 * ignore rules, a folder at a time; `look` stats what the caller wants looked at. Files only:
 * symlinks and special files are skipped with one log line each, and nothing is kept per file.
 */
import { isUtf8 } from 'node:buffer';
import { lstatSync, type Dirent, type Stats } from 'node:fs';
import { lstat, readdir, rename } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type { Logger } from 'pino';
import type { WatchConfig } from '../config/config.ts';
import { freeTarget } from '../common/files.ts';
import { isExcluded, isIgnored, isIgnoredInFolder } from './selection.ts';

/** lstat calls in flight at once during a walk (libuv runs 4 at a time; a few more keep it busy). */
const STAT_BATCH = 64;
/** Inline stats yield to the event loop after this long. */
const INLINE_SLICE_MS = 10;
/** An inline lstat slower than this is slow; INLINE_SLOW_CALLS of them close together turn inline stats off. */
const INLINE_SLOW_MS = 50;
/**
 * Slow inline calls within INLINE_SLOW_WINDOW calls that turn inline stats off for the watch. One
 * is not enough: on a busy machine a call is now and then 50 ms late because the process waited
 * for a CPU, and a single one turned a 1,000,000-file scan over to the async way (measured on a
 * loaded machine: 1.4x the CPU, 30-85 MB more). A file system that answers slowly is slow again at
 * once.
 */
const INLINE_SLOW_CALLS = 3;
const INLINE_SLOW_WINDOW = 1000;

/** A file found by the watcher or a scan: named and looked at (lstat). */
export interface Candidate {
  path: string;
  rel: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

/** A file a walk listed: named, not yet looked at. */
export interface Listed {
  path: string;
  rel: string;
}

/** Files listed at once: a folder's, in slices of this many (a flat folder of 100,000 is 100 slices). */
const LIST_BATCH = 1000;

/**
 * What a walk remembers of the folders it read, so a rescan can leave alone those that did not
 * change (which may be left alone: folder-memory.ts).
 */
export interface FolderMemory {
  /**
   * The sub-folders to walk into when `dir`, as `info` shows it now, need not be read again (its
   * files were handed and nothing changed since); undefined to read it.
   */
  unchanged(dir: string, info: Stats): string[] | undefined;
  /** `dir` was read with `info` as lstat showed it right before, and its files were all handed. */
  read(dir: string, info: Stats, subfolders: string[]): void;
  /** `dir` is being read: what was remembered of it no longer holds. */
  reading(dir: string): void;
}

export interface WalkOptions {
  /**
   * Called for each folder before it is read (the watcher watches it there, so nothing slips
   * between); with `memory`, given the folder's lstat, made just before (undefined: gone).
   */
  entering?: (dir: string, info?: Stats) => Promise<void>;
  /** Folders read before: one that did not change is not read again, only its sub-folders are walked. */
  memory?: FolderMemory;
  /**
   * Called with the files listed, a folder (or a slice of one) at a time. One call at a time: the
   * walk reads the next folder while a call runs, and waits for it before the next call and before
   * it returns.
   */
  batch: (listed: Listed[]) => Promise<void>;
  /** Called for each file listed (the progress count of the start-up scan). */
  found?: () => void;
}

const SKIPPED_MAX = 10_000;

export class Walker {
  private readonly watch: WatchConfig;
  private readonly log: Logger;
  /**
   * Paths already logged as skipped: one line each, not one per walk. Emptied at SKIPPED_MAX (then a
   * path still there is logged once more) so a share full of symlinks cannot grow it without end.
   */
  private readonly skipped = new Set<string>();
  /** Scans stat files on the event loop (see lookInline); off for polling watches and once calls were slow. */
  private statInline: boolean;
  private readonly inlineSlowMs: number;
  private readonly slowCalls = new SlowCalls();

  constructor(watch: WatchConfig, log: Logger, options: { inlineSlowMs?: number } = {}) {
    this.watch = watch;
    this.log = log;
    this.statInline = !watch.polling;
    this.inlineSlowMs = options.inlineSlowMs ?? INLINE_SLOW_MS;
  }

  /** A file the watch leaves alone (excluded, or not matched by `include`). */
  ignored(path: string): boolean {
    return path !== this.watch.path && isIgnored(this.watch, relative(this.watch.path, path));
  }

  /**
   * A path no walk enters and no event is followed for, whether file or folder (hidden, temporary,
   * system or excluded). `include` is not applied: it selects files, never folders.
   */
  excluded(path: string, isFolder = false): boolean {
    return path !== this.watch.path && isExcluded(this.watch, relative(this.watch.path, path), isFolder);
  }

  /**
   * Lists the files under `dir` (in its sub-folders too when the watch is recursive) and hands them
   * to `batch` a folder at a time, keeping nothing: memory follows the largest folder, not the tree.
   * Returns how many files were listed.
   */
  async walk(dir: string, options: WalkOptions): Promise<number> {
    let listed = 0;
    // The batch being handled. A start-up scan's batch is mostly work on the event loop (inline
    // lstat, SQLite) while reading a folder is the thread pool's: the next folder is read meanwhile
    // (at 1,000,000 files the reads were ~2 s of an idle event loop).
    let handling: Promise<void> | undefined;
    const hand = async (files: Listed[]) => {
      await handling;
      handling = options.batch(files);
      handling.catch(() => undefined); // awaited before the next batch and at the end
    };
    // Paths and relative names by concatenation: path.join and path.relative for each of 100,000
    // files are most of a walk's garbage.
    // `entered`: the walk entered this folder past isExcluded (or it is the watched folder), so a
    // file in it needs only its own name tested; a walk may start in any folder.
    const memory = options.memory;
    const walk = async (dir: string, relDir: string, entered: boolean): Promise<void> => {
      // The folder as it is before it is read: a change after this lstat shows at the next rescan,
      // as a change of the folder or an event. Its watcher is made after it, so a folder that gets
      // a new watcher is read (folder-memory.ts compares watchers), and the one lstat serves both.
      let info: Stats | undefined;
      if (memory) {
        info = await this.lookAtFolder(dir);
        await options.entering?.(dir, info);
        const subfolders = info && memory.unchanged(dir, info);
        if (subfolders) {
          for (const name of subfolders) await walk(dir + sep + name, relDir + name + sep, true);
          return;
        }
        memory.reading(dir);
      } else await options.entering?.(dir);
      const subfolders: string[] = [];
      let entries: Dirent<Buffer>[];
      try {
        entries = await readdir(dir, { withFileTypes: true, encoding: 'buffer' });
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A sub-folder removed meanwhile is no news; the watched folder itself missing is.
        if (code !== 'ENOENT' || dir === this.watch.path)
          this.log.warn({ folder: dir, code }, 'cannot read folder');
        return;
      }
      let files: Listed[] = [];
      const unixRelDir = sep === '/' ? relDir : relDir.split(sep).join('/');
      for (const entry of entries) {
        const raw = entry.name;
        const name = isUtf8(raw) ? raw.toString('utf8') : await this.nameOf(dir, raw, entry.isFile());
        if (name === undefined) continue;
        // Folders pass the exclude rules only: include patterns select files, and a folder must be
        // entered to find its files (`include: ['*.pdf']` must still reach sub/deeper/x.pdf).
        if (entry.isDirectory()) {
          if (this.watch.recursive && !isExcluded(this.watch, relDir + name, true)) {
            subfolders.push(name);
            await walk(dir + sep + name, relDir + name + sep, true);
          }
          continue;
        }
        if (entered ? isIgnoredInFolder(this.watch, unixRelDir, name) : isIgnored(this.watch, relDir + name))
          continue;
        files.push({ path: dir + sep + name, rel: relDir + name });
        options.found?.();
        if (files.length === LIST_BATCH) {
          listed += files.length;
          await hand(files);
          files = [];
        }
      }
      if (files.length > 0) {
        listed += files.length;
        await hand(files);
      }
      // Remembered once its files are handled: a batch that failed leaves the folder to be read again.
      if (memory && info?.isDirectory()) {
        const read = info;
        const handled = handling ?? Promise.resolve();
        handled.then(
          () => memory.read(dir, read, subfolders),
          () => undefined,
        );
      }
    };
    const rel = relative(this.watch.path, dir);
    try {
      await walk(dir, rel ? rel + sep : '', !rel);
    } finally {
      await handling;
    }
    return listed;
  }

  /**
   * A folder's lstat for a rescan: on the event loop while this watch stats inline (a rescan with
   * nothing changed is an lstat per folder, and through the thread pool each cost ~50 µs of CPU
   * in waits and wake-ups on a loaded machine), else through the thread pool.
   */
  private async lookAtFolder(dir: string): Promise<Stats | undefined> {
    if (!this.statInline) return lstat(dir).catch(() => undefined);
    try {
      return lstatSync(dir, { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
  }

  /** The regular files among `listed`, with their stats (lstat, a batch at a time). */
  async look(listed: Listed[]): Promise<Candidate[]> {
    const found: Candidate[] = [];
    let i = this.statInline ? await this.lookInline(listed, found) : 0;
    for (; i < listed.length; i += STAT_BATCH) {
      const batch = await Promise.all(
        listed.slice(i, i + STAT_BATCH).map(({ path, rel }) => this.describe(path, rel)),
      );
      for (const c of batch) if (c) found.push(c);
    }
    return found;
  }

  /**
   * lstat on the event loop, for a local folder: the file's inode was just listed, so each call is a
   * few microseconds, where a promise through libuv's thread pool costs ~12 (measured: 100,000
   * files 0.3 s inline, 1.2-1.5 s as promises, most of a large start-up scan). The loop yields every
   * INLINE_SLICE_MS so timers and the status page still run; INLINE_SLOW_CALLS calls slower than
   * INLINE_SLOW_MS within INLINE_SLOW_WINDOW calls (a disk or a mount that answers slowly) turn
   * inline stats off for this watch, since a call that blocks would block everything; a lone late
   * call (the process waited for a CPU) does not. `polling: true` watches (network shares)
   * never stat inline. Returns how many of `listed` it looked at (the rest go the async way).
   */
  private async lookInline(listed: Listed[], found: Candidate[]): Promise<number> {
    let sliceStart = performance.now();
    for (let i = 0; i < listed.length; i++) {
      const { path, rel } = listed[i]!;
      const started = performance.now();
      let info: Stats | undefined;
      try {
        info = lstatSync(path, { throwIfNoEntry: false });
      } catch {
        info = undefined; // as the async lstat: unreadable or gone is not a candidate
      }
      const candidate = info && this.candidateOf(path, info, rel);
      if (candidate) found.push(candidate);
      const now = performance.now();
      if (this.slowCalls.count(now - started > this.inlineSlowMs)) {
        this.statInline = false;
        this.log.info(
          { folder: this.watch.path, ms: Math.round(now - started) },
          'file system answers slowly: looking at files off the event loop from now on',
        );
        return i + 1;
      }
      if (now - sliceStart > INLINE_SLICE_MS) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
    return listed.length;
  }

  /** The name of an entry an event reported by raw name (see nameOf); undefined when it is gone. */
  async nameOfRaw(dir: string, raw: Buffer): Promise<string | undefined> {
    if (isUtf8(raw)) return raw.toString('utf8');
    const info = await lstat(rawPath(dir, raw)).catch(() => undefined);
    return info && this.nameOf(dir, raw, info.isFile());
  }

  /**
   * The entry's name as a string. A name that is not valid UTF-8 cannot be named in the DB or sent
   * in an upload: the file is renamed in place (its bytes read as Latin-1, the legacy encoding such
   * names mostly come from), which the log says.
   */
  private async nameOf(dir: string, raw: Buffer, isFile: boolean): Promise<string | undefined> {
    if (isUtf8(raw)) return raw.toString('utf8');
    const readable = raw.toString('latin1').normalize('NFC');
    if (!isFile) {
      this.warnOnce(join(dir, readable), 'skipped: the name is not valid UTF-8 (only files are renamed)');
      return undefined;
    }
    try {
      const target = await freeTarget(dir, readable);
      await rename(rawPath(dir, raw), target);
      this.log.warn(
        { folder: dir, name: JSON.stringify(readable), renamedTo: relative(dir, target) },
        'renamed a file whose name is not valid UTF-8',
      );
      return relative(dir, target);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Gone: renamed by a walk or an event of the same moment, or removed.
      if (code === 'ENOENT') return undefined;
      this.warnOnce(
        join(dir, readable),
        `cannot process a file whose name is not valid UTF-8 and that cannot be renamed (${code}); rename it`,
      );
      return undefined;
    }
  }

  private warnOnce(path: string, message: string) {
    if (!this.firstSkip(path)) return;
    this.log.warn({ file: path }, message);
  }

  /** True the first time a path is skipped (since the set was last emptied). */
  private firstSkip(path: string): boolean {
    if (this.skipped.has(path)) return false;
    if (this.skipped.size >= SKIPPED_MAX) this.skipped.clear();
    this.skipped.add(path);
    return true;
  }

  /** A regular file's candidate; undefined for anything else or when it is gone. */
  async describe(path: string, rel?: string): Promise<Candidate | undefined> {
    const info = await lstat(path).catch(() => undefined);
    return info && this.candidateOf(path, info, rel);
  }

  /** Symlinks and special files are skipped with one log line each; folders silently. */
  candidateOf(path: string, info: Stats, rel = relative(this.watch.path, path)): Candidate | undefined {
    if (!info.isFile()) {
      if (!info.isDirectory() && this.firstSkip(path)) {
        this.log.info(
          { file: path, kind: info.isSymbolicLink() ? 'symlink' : 'special' },
          'skipped: not a regular file',
        );
      }
      return undefined;
    }
    if (!ASCII.test(rel)) rel = rel.normalize('NFC');
    return { path, rel, size: info.size, mtimeMs: Math.floor(info.mtimeMs), ino: Number(info.ino) };
  }
}

/** Inline calls, slow or not: says when INLINE_SLOW_CALLS slow ones came within INLINE_SLOW_WINDOW calls. */
export class SlowCalls {
  private calls = 0;
  /** The numbers of the last slow calls, at most INLINE_SLOW_CALLS. */
  private readonly slow: number[] = [];

  count(slow: boolean): boolean {
    this.calls++;
    if (!slow) return false;
    this.slow.push(this.calls);
    if (this.slow.length > INLINE_SLOW_CALLS) this.slow.shift();
    return this.slow.length === INLINE_SLOW_CALLS && this.calls - this.slow[0]! < INLINE_SLOW_WINDOW;
  }
}

const ASCII = /^[\x00-\x7f]*$/;
const rawPath = (dir: string, name: Buffer) => Buffer.concat([Buffer.from(`${dir}/`), name]);
