/**
 * Finds files: chokidar events (native, or polling for network shares), chokidar's first walk as the
 * start-up scan, and a periodic rescan for missed events. A scan walks the tree once, stats what it
 * finds and hands the whole list to the pipeline, which compares it with the DB in one read and
 * records the new files in one transaction; the log gets one summary line per scan.
 */
import chokidar, { type FSWatcher } from 'chokidar';
import { isUtf8 } from 'node:buffer';
import type { Dirent, Stats } from 'node:fs';
import { lstat, readdir, rename } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Logger } from 'pino';
import type { WatchConfig } from './config.ts';
import { freeTarget, isIgnored } from './files.ts';
import type { Candidate } from './pipeline.ts';

export interface CandidateSink {
  candidate(watch: WatchConfig, file: Candidate): void;
  /** Records the new files among `files`; returns how many were new. */
  ingest(watch: WatchConfig, files: Candidate[]): number;
}

/** lstat calls in flight at once during a scan (libuv runs 4 at a time; a few more keep it busy). */
const STAT_BATCH = 64;

export class FolderWatcher {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private readonly skipped = new Set<string>();
  /** Files the start-up scan renamed (names not valid UTF-8): recorded by the scan, not by chokidar's event. */
  private readonly renamedAtStart = new Set<string>();
  private readonly watch: WatchConfig;
  private readonly sink: CandidateSink;
  private readonly log: Logger;

  private readonly scanned: (() => void) | undefined;

  /** `scanned`: told of each file the start-up scan finds (the progress line of `run` on a terminal). */
  constructor(watch: WatchConfig, sink: CandidateSink, log: Logger, scanned?: () => void) {
    this.watch = watch;
    this.sink = sink;
    this.log = log;
    this.scanned = scanned;
  }

  /**
   * The start-up scan is chokidar's own first walk (one walk of the tree, not two): the files it
   * reports before "ready" are recorded in one go, then every event is a candidate of its own.
   * chokidar cannot see names that are not valid UTF-8: each folder it reports is listed once
   * more by raw name (no stat), and such files are renamed and recorded with the rest.
   */
  async start() {
    const started = performance.now();
    const initial: Array<Candidate | Promise<Candidate | undefined>> = [];
    const relisted: Array<Promise<Array<Promise<Candidate | undefined>>>> = [];
    let ready = false;
    this.watcher = chokidar.watch(this.watch.path, {
      ignoreInitial: false,
      alwaysStat: true,
      usePolling: this.watch.polling,
      interval: this.watch.polling_interval_ms,
      binaryInterval: this.watch.polling_interval_ms,
      depth: this.watch.recursive ? undefined : 0,
      followSymlinks: false,
      ignored: (path) => path !== this.watch.path && isIgnored(this.watch, relative(this.watch.path, path)),
    });
    this.watcher
      .on('add', (path, stats) => {
        if (ready) return void (this.renamedAtStart.delete(path) || this.check(path));
        // chokidar lstats (followSymlinks: false): anything but a regular file gets a look of its own.
        initial.push(stats?.isFile() ? this.candidateOf(path, stats) : this.describe(path));
        this.scanned?.();
      })
      // Listed while chokidar walks on (its walk waits on stats, this one on a readdir per folder).
      .on('addDir', (path) => ready || relisted.push(this.renameNonUtf8(path)))
      .on('change', (path) => void this.check(path))
      .on('error', (error) =>
        this.log.warn(
          { err: error, folder: this.watch.path },
          'watcher error; the periodic rescan still runs',
        ),
      );
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    ready = true;
    for (const renamed of await Promise.all(relisted)) initial.push(...renamed);
    // A renamed file chokidar also saw under its new name is one file.
    const byPath = new Map<string, Candidate>();
    for (const c of await Promise.all(initial)) if (c) byPath.set(c.path, c);
    const found = [...byPath.values()];
    const fresh = this.sink.ingest(this.watch, found);
    this.log.info(
      {
        folder: this.watch.path,
        files: found.length,
        new: fresh,
        ms: Math.round(performance.now() - started),
      },
      'start-up scan',
    );
    this.timer = setInterval(() => void this.scan('rescan'), this.watch.rescan_interval_ms);
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    await this.watcher?.close();
    await this.scanning;
  }

  /** Every file present now (the periodic rescan): what the watcher missed, and names that are not UTF-8. */
  scan(why: 'rescan' = 'rescan'): Promise<void> {
    this.scanning ??= this.walkAll(why).finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async walkAll(why: string) {
    const started = performance.now();
    const found: Candidate[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: Dirent<Buffer>[];
      try {
        entries = await readdir(dir, { withFileTypes: true, encoding: 'buffer' });
      } catch (error) {
        this.log.warn({ folder: dir, code: (error as NodeJS.ErrnoException).code }, 'cannot read folder');
        return;
      }
      const files: string[] = [];
      for (const entry of entries) {
        const name = await this.nameOf(dir, entry.name, entry.isFile());
        if (name === undefined) continue;
        const path = join(dir, name);
        if (isIgnored(this.watch, relative(this.watch.path, path))) continue;
        if (entry.isDirectory()) {
          if (this.watch.recursive) await walk(path);
        } else files.push(path);
      }
      for (let i = 0; i < files.length; i += STAT_BATCH) {
        const batch = await Promise.all(files.slice(i, i + STAT_BATCH).map((p) => this.describe(p)));
        for (const c of batch) if (c) found.push(c);
      }
    };
    await walk(this.watch.path);
    const fresh = this.sink.ingest(this.watch, found);
    this.log[fresh > 0 ? 'info' : 'debug'](
      {
        folder: this.watch.path,
        files: found.length,
        new: fresh,
        ms: Math.round(performance.now() - started),
      },
      why,
    );
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
      this.warnOnce(
        join(dir, readable),
        `cannot process a file whose name is not valid UTF-8 and that cannot be renamed (${(error as NodeJS.ErrnoException).code}); rename it`,
      );
      return undefined;
    }
  }

  /** The files of `dir` whose names are not valid UTF-8, renamed (see nameOf): their candidates. */
  private async renameNonUtf8(dir: string): Promise<Array<Promise<Candidate | undefined>>> {
    const names = await readdir(dir, { encoding: 'buffer' }).catch(() => [] as Buffer[]);
    const found: Array<Promise<Candidate | undefined>> = [];
    for (const raw of names) {
      if (isUtf8(raw)) continue;
      const isFile = await lstat(rawPath(dir, raw)).then(
        (s) => s.isFile(),
        () => false,
      );
      const name = await this.nameOf(dir, raw, isFile);
      if (name === undefined || isIgnored(this.watch, relative(this.watch.path, join(dir, name)))) continue;
      this.renamedAtStart.add(join(dir, name));
      found.push(this.describe(join(dir, name)));
    }
    return found;
  }

  private warnOnce(path: string, message: string) {
    if (this.skipped.has(path)) return;
    this.skipped.add(path);
    this.log.warn({ file: path }, message);
  }

  /** A regular file's candidate; symlinks and special files are skipped with one log line each. */
  private async describe(path: string): Promise<Candidate | undefined> {
    let info;
    try {
      info = await lstat(path);
    } catch {
      if (path.includes('\uFFFD')) void this.scan('rescan'); // maybe a name that is not valid UTF-8
      return undefined;
    }
    if (!info.isFile()) {
      if (!info.isDirectory() && !this.skipped.has(path)) {
        this.skipped.add(path);
        this.log.info(
          { file: path, kind: info.isSymbolicLink() ? 'symlink' : 'special' },
          'skipped: not a regular file',
        );
      }
      return undefined;
    }
    return this.candidateOf(path, info);
  }

  private candidateOf(path: string, info: Stats): Candidate {
    const rel = relative(this.watch.path, path).normalize('NFC');
    return { path, rel, size: info.size, mtimeMs: Math.floor(info.mtimeMs), ino: Number(info.ino) };
  }

  private async check(path: string) {
    if (isIgnored(this.watch, relative(this.watch.path, path))) return;
    const candidate = await this.describe(path);
    if (candidate) this.sink.candidate(this.watch, candidate);
  }
}

const rawPath = (dir: string, name: Buffer) => Buffer.concat([Buffer.from(`${dir}/`), name]);
