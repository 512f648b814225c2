/**
 * Finds files. The start-up scan and the periodic rescan walk the tree (walk.ts) and hand what they
 * list to the pipeline a folder at a time, which compares it with the DB in one read, stats only
 * the files it does not already hold and records the new ones in one transaction; the log gets one
 * summary line per scan.
 *
 * Between scans, natively: one fs.watch per folder, made before the folder is read. An event is only
 * a hint to lstat that path; hints are coalesced per event-loop turn and nothing is kept per file,
 * so memory follows the number of folders, not of files (chokidar keeps every file's stats; the
 * figures are in docs/performance.md, "Scale, measured"). A folder whose watcher fails is walked again;
 * the periodic rescan re-watches what was missed and drops watchers of folders gone.
 *
 * A rescan reads only the folders that changed since they were last read (folder-memory.ts): with
 * nothing changed it is an lstat per folder, however many files wait, are held or are kept in
 * place. Once per full_rescan_interval_ms (and at every rescan of a `polling` or blind watch) it
 * reads every folder: the bound for what neither an event nor a folder's stats reported.
 * With `polling` (network shares, where inotify sees nothing), chokidar's polling reports changes.
 */
import { watch as watchFolder, type FSWatcher, type Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import type { Logger } from 'pino';
import type { WatchConfig } from '../config/config.ts';
import { FolderMemoryOfWatch } from './folder-memory.ts';
import { WatcherHearing, type BlindWatcher } from './hearing.ts';
import { startPolling, type Poller } from './polling.ts';
import { Walker, type Candidate, type FolderMemory, type Listed } from './walk.ts';

export interface CandidateSink {
  candidate(watch: WatchConfig, file: Candidate): void;
  /**
   * Records the new files among those a walk listed (a folder at a time) and returns how many were
   * new. `look` stats files: the sink asks it only for the paths it does not already hold.
   */
  ingest(
    watch: WatchConfig,
    listed: Listed[],
    look: (listed: Listed[]) => Promise<Candidate[]>,
  ): Promise<number>;
  /** A rescan ended: due rows another process changed are looked for then too (wakeup.ts). */
  rescanned?(): void;
}

/** A folder whose watcher failed is walked (and watched) again after this long. */
const REWALK_MS = 1000;

/**
 * How often a rescan reads every folder, unless the watch sets full_rescan_interval_ms: what no
 * event and no folder's stats reported (a dropped inotify event, a folder time the file system
 * did not move) is found within this and one rescan_interval_ms (docs/decisions.md, "Rescans
 * read what changed").
 */
export const FULL_RESCAN_MS = 3_600_000;

/** Why a scan runs: the periodic rescan, or one that must read every folder (the DB lost rows). */
export type ScanReason = 'rescan' | 'full';

/**
 * Which folder is at a path: its inode, and its birth time, since a folder made again at once often
 * gets the inode number of the one just removed (ext4).
 */
const identity = (info: Stats) => `${info.ino}:${info.birthtimeMs}`;

export class FolderWatcher {
  /** Watched folders and which folder is watched: one replaced by another of the same name gets a new watcher. */
  private readonly folders = new Map<string, { watcher: FSWatcher; id: string }>();
  /** Names events reported since the last turn, by folder and raw name. */
  private readonly hints = new Map<string, { dir: string; raw: Buffer }>();
  /** Until the start-up scan has recorded its files, hints wait (it finds those files anyway). */
  private hintsQueued = true;
  /** Folders to walk again (their watcher failed), on one timer. */
  private readonly lost = new Set<string>();
  private lostTimer: NodeJS.Timeout | undefined;
  private poller: Poller | undefined;
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private readonly working = new Set<Promise<void>>();
  private stopped = false;
  private limitWarned = false;
  private readonly watch: WatchConfig;
  private readonly sink: CandidateSink;
  private readonly log: Logger;
  private readonly walker: Walker;
  private readonly scanned: (() => void) | undefined;
  private readonly blindness: ((blind: BlindWatcher | null) => void) | undefined;
  /** Whether the native watcher hears anything (evidence per rescan, hearing.ts). */
  private readonly hearing = new WatcherHearing();
  /** The folders scans read, so rescans can leave the unchanged ones alone. */
  private readonly memory: FolderMemoryOfWatch;
  /** When the last scan that read every folder began (the clock of `now`). */
  private lastFullAt = 0;
  /** A full scan was asked for (scan('full')) and has not begun yet. */
  private fullWanted = false;
  private readonly now: () => number;

  /**
   * `scanned`: told of each file the start-up scan finds (the progress line of `run` on a terminal).
   * `blindness`: told when the native watcher turns out blind (and again as its counts grow), and
   * null when it reports events again. Tests: `now`, the clock that times full rescans; `racyMs`,
   * how recently changed a folder is read again (folder-memory.ts, RACY_MS).
   */
  constructor(
    watch: WatchConfig,
    sink: CandidateSink,
    log: Logger,
    scanned?: () => void,
    blindness?: (blind: BlindWatcher | null) => void,
    options: { now?: () => number; racyMs?: number } = {},
  ) {
    this.watch = watch;
    this.sink = sink;
    this.log = log;
    this.scanned = scanned;
    this.blindness = blindness;
    this.walker = new Walker(watch, log);
    this.memory = new FolderMemoryOfWatch((dir) => this.folders.get(dir)?.watcher, options.racyMs);
    this.now = options.now ?? Date.now;
  }

  /**
   * Watches, then walks: a file added during the walk is seen by the walk, the watcher or both (the
   * pipeline records a path once). Polling: chokidar is ready before the walk starts.
   */
  async start() {
    const started = performance.now();
    if (this.watch.polling)
      this.poller = await startPolling(this.watch, this.walker, (path) => this.track(this.check(path)), this.log);
    this.lastFullAt = this.now();
    this.memory.begin(false);
    const walked = new Set<string>();
    const { files, fresh } = await this.walkInto(
      this.watch.path,
      (dir, info) => (walked.add(dir), this.enter(dir, info)),
      this.scanned,
      this.memory,
    );
    this.memory.keepOnly(walked);
    this.log.info(
      {
        folder: this.watch.path,
        files,
        new: fresh,
        ms: Math.round(performance.now() - started),
      },
      'start-up scan',
    );
    this.hintsQueued = false;
    if (this.hints.size > 0) this.lookSoon();
    this.timer = setInterval(() => void this.scan('rescan'), this.watch.rescan_interval_ms);
  }

  async stop() {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.lostTimer);
    for (const dir of [...this.folders.keys()]) this.unwatch(dir);
    await this.poller?.close();
    await this.scanning;
    while (this.working.size > 0) await Promise.all(this.working);
  }

  /**
   * The periodic rescan: the files of the folders that changed (of every folder when `full`, or
   * when the last full one is full_rescan_interval_ms ago): what the watcher missed; folders are
   * watched anew. A full scan asked for while one runs runs after it.
   */
  scan(why: ScanReason = 'rescan'): Promise<void> {
    if (why === 'full') {
      this.fullWanted = true;
      // The one under way may have begun as a partial one; a rescan that begins meanwhile is full.
      if (this.scanning) return this.scanning.then(() => (this.fullWanted ? this.scan('full') : undefined));
    }
    this.scanning ??= this.rescan().finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  /**
   * Whether this rescan reads every folder. Always with `polling` (a network share: attribute
   * caching and another machine's clock make a folder's times unreliable, and chokidar's polling,
   * not inotify, hears changes in place) and while the watcher is blind (it hears nothing).
   */
  private fullRescanDue(): boolean {
    const every = this.watch.full_rescan_interval_ms ?? FULL_RESCAN_MS;
    return this.fullWanted || this.watch.polling || this.hearing.blind || this.now() - this.lastFullAt >= every;
  }

  private async rescan() {
    const started = performance.now();
    const full = this.fullRescanDue();
    this.fullWanted = false;
    if (full) this.lastFullAt = this.now();
    this.memory.begin(!full);
    const walked = new Set<string>();
    const entering = (dir: string, info?: Stats) => {
      walked.add(dir);
      return this.enter(dir, info);
    };
    const { files, fresh } = await this.walkInto(this.watch.path, entering, undefined, this.memory);
    if (this.stopped) return;
    this.memory.keepOnly(walked);
    if (!this.watch.polling) this.judgeWatcher(fresh);
    this.sink.rescanned?.();
    for (const dir of [...this.folders.keys()]) {
      if (walked.has(dir)) continue;
      const info = await lstat(dir).catch(() => undefined);
      if (!info?.isDirectory()) this.unwatch(dir);
    }
    this.log[fresh > 0 ? 'info' : 'debug'](
      {
        folder: this.watch.path,
        full,
        folders: walked.size,
        unchanged: this.memory.left,
        files,
        new: fresh,
        ms: Math.round(performance.now() - started),
      },
      'rescan',
    );
  }

  /** After a rescan that recorded `fresh` new files: is the native watcher hearing anything? */
  private judgeWatcher(fresh: number) {
    const verdict = this.hearing.afterRescan(fresh, Date.now());
    if (verdict.turned === 'hearing')
      this.log.info({ folder: this.watch.path }, 'the watcher of this folder reports events again');
    const blind = verdict.report;
    if (verdict.turned === 'blind' && blind)
      this.log.warn(
        { folder: this.watch.path, rescans: blind.rescans, files: blind.files },
        `the watcher of this folder reports nothing: ${blind.rescans} rescans found ${blind.files} new file(s) that no watcher event reported (a network share, SMB/NFS?), so files wait up to rescan_interval_ms; set polling: true for this folder`,
      );
    if (blind !== undefined) this.blindness?.(blind);
  }

  /** A path chokidar reported (polling). */
  private async check(path: string) {
    if (this.walker.ignored(path)) return;
    const candidate = await this.walker.describe(path);
    if (this.stopped) return;
    if (candidate) this.sink.candidate(this.watch, candidate);
    // chokidar cannot name a file whose name is not valid UTF-8; the rescan renames it.
    else if (path.includes('\uFFFD')) void this.scan('rescan');
  }

  /** Watches `dir` (the folder now at that path) before it is read. */
  private async enter(dir: string, known?: Stats) {
    const info = known ?? (await lstat(dir).catch(() => undefined));
    if (!info?.isDirectory() || this.stopped) return;
    if (this.folders.get(dir)?.id === identity(info)) return;
    this.unwatch(dir);
    let watcher: FSWatcher;
    try {
      watcher = watchFolder(dir, { encoding: 'buffer', persistent: true }, (_event, name) =>
        name ? this.hint(dir, name) : this.lose(dir),
      );
    } catch (error) {
      this.cannotWatch(dir, error as NodeJS.ErrnoException);
      return;
    }
    watcher.on('error', () => this.lose(dir));
    this.folders.set(dir, { watcher, id: identity(info) });
  }

  private cannotWatch(dir: string, error: NodeJS.ErrnoException) {
    if (error.code === 'ENOENT') return; // removed meanwhile
    if (error.code === 'ENOSPC') {
      if (this.limitWarned) return;
      this.limitWarned = true;
      this.log.warn(
        { folder: this.watch.path, at: dir },
        'the system limit of watched folders is reached: folders beyond it are found only by the periodic rescan; raise it with `sysctl fs.inotify.max_user_watches=524288`',
      );
    } else
      this.log.warn(
        { folder: dir, code: error.code },
        'cannot watch this folder: its files are found only by the periodic rescan',
      );
  }

  /** Closes the watchers of `dir` and of the folders under it. */
  private unwatch(dir: string) {
    if (!this.folders.has(dir)) return;
    for (const [path, { watcher }] of this.folders)
      if (path === dir || path.startsWith(dir + sep)) {
        watcher.close();
        this.folders.delete(path);
      }
  }

  /** The watcher of `dir` failed or could not say what changed: it is walked and watched anew soon. */
  private lose(dir: string) {
    const watched = this.folders.get(dir);
    watched?.watcher.close();
    this.folders.delete(dir);
    if (this.stopped) return;
    this.lost.add(dir);
    this.lostTimer ??= setTimeout(() => {
      this.lostTimer = undefined;
      for (const dir of this.lost) this.track(this.walkFolder(dir));
      this.lost.clear();
    }, REWALK_MS);
  }

  private hint(dir: string, raw: Buffer) {
    this.hints.set(`${dir}\0${raw.toString('latin1')}`, { dir, raw });
    if (!this.hintsQueued) this.lookSoon();
  }

  /** A burst of events (a big file being written) is one lstat per path per turn. */
  private lookSoon() {
    this.hintsQueued = true;
    setImmediate(() => {
      this.hintsQueued = false;
      const hints = [...this.hints.values()];
      this.hints.clear();
      for (const { dir, raw } of hints) this.track(this.look(dir, raw));
    });
  }

  /** What an event named: a file is a candidate, a new folder is watched and walked; gone is nothing. */
  private async look(dir: string, raw: Buffer) {
    if (this.stopped) return;
    const name = await this.walker.nameOfRaw(dir, raw);
    if (name === undefined) return;
    const path = join(dir, name);
    if (this.walker.excluded(path)) return;
    const info = await lstat(path).catch(() => undefined);
    if (this.stopped) return;
    if (info) this.hearing.event();
    if (!info) {
      this.unwatch(path);
      // A watcher names its own folder when that folder is removed or moved away: the folder now at
      // that path, if any, needs a watcher of its own (seldom a file named like its folder, then
      // the folder is only walked once more).
      if (name === basename(dir) && this.folders.has(dir)) {
        this.unwatch(dir);
        await this.walkFolder(dir);
      }
      return;
    }
    if (!info.isDirectory()) {
      if (this.walker.ignored(path)) return;
      const candidate = this.walker.candidateOf(path, info);
      if (candidate) this.sink.candidate(this.watch, candidate);
    } else if (
      this.watch.recursive &&
      !this.walker.excluded(path, true) &&
      this.folders.get(path)?.id !== identity(info)
    ) {
      await this.walkFolder(path);
    }
  }

  /** A folder new to the watch, or whose watcher failed: watched and walked (sub-folders too). */
  private async walkFolder(dir: string) {
    const { files, fresh } = await this.walkInto(dir, (d) => this.enter(d));
    this.log.debug({ folder: dir, files, new: fresh }, 'folder walked');
  }

  /**
   * Walks `dir` into the sink a folder at a time (natively watching each folder as it is entered):
   * a scan of 100,000 files holds one folder's names at a time, and a rescan of files already
   * waiting stats none of them.
   */
  private async walkInto(
    dir: string,
    entering: (dir: string, info?: Stats) => Promise<void>,
    found?: () => void,
    memory?: FolderMemory,
  ) {
    let fresh = 0;
    const files = await this.walker.walk(dir, {
      entering: this.watch.polling ? undefined : entering,
      // A polling watch has no native watcher to vouch for a folder left alone: every folder is read.
      memory: this.watch.polling ? undefined : memory,
      found,
      batch: async (listed) => {
        if (!this.stopped) fresh += await this.sink.ingest(this.watch, listed, (l) => this.walker.look(l));
      },
    });
    return { files, fresh };
  }

  private track(work: Promise<void>) {
    const tracked = work
      .catch((error: unknown) =>
        this.log.warn({ err: error, folder: this.watch.path }, 'watcher step failed; the rescan will see'),
      )
      .finally(() => this.working.delete(tracked));
    this.working.add(tracked);
  }
}
