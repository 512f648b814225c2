/**
 * Finds files: chokidar events (native, or polling for network shares), a scan at start-up and a
 * periodic rescan for missed events. It only reports candidates; the pipeline decides.
 */
import chokidar, { type FSWatcher } from 'chokidar';
import { lstat, readdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Logger } from 'pino';
import type { WatchConfig } from './config.ts';
import { isIgnored } from './files.ts';

export type Candidate = (
  watch: WatchConfig,
  path: string,
  rel: string,
  size: number,
  mtimeMs: number,
) => void;

export class FolderWatcher {
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly skipped = new Set<string>();
  private readonly watch: WatchConfig;
  private readonly onCandidate: Candidate;
  private readonly log: Logger;

  constructor(watch: WatchConfig, onCandidate: Candidate, log: Logger) {
    this.watch = watch;
    this.onCandidate = onCandidate;
    this.log = log;
  }

  async start() {
    await this.scan();
    this.watcher = chokidar.watch(this.watch.path, {
      ignoreInitial: true,
      usePolling: this.watch.polling,
      interval: this.watch.polling_interval_ms,
      binaryInterval: this.watch.polling_interval_ms,
      depth: this.watch.recursive ? undefined : 0,
      followSymlinks: false,
      ignored: (path) => path !== this.watch.path && isIgnored(this.watch, relative(this.watch.path, path)),
    });
    const seen = (path: string) => void this.check(path);
    this.watcher
      .on('add', seen)
      .on('change', seen)
      .on('error', (error) =>
        this.log.warn(
          { err: error, folder: this.watch.path },
          'watcher error; the periodic rescan still runs',
        ),
      );
    await new Promise<void>((resolve) => this.watcher!.once('ready', () => resolve()));
    this.timer = setInterval(() => void this.scan(), this.watch.rescan_interval_ms);
  }

  async stop() {
    if (this.timer) clearInterval(this.timer);
    await this.watcher?.close();
  }

  /** Every file present now: at start-up this picks up what arrived while the daemon was down. */
  async scan() {
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (error) {
        this.log.warn({ folder: dir, code: (error as NodeJS.ErrnoException).code }, 'cannot read folder');
        return;
      }
      for (const entry of entries) {
        const path = join(dir, entry.name);
        if (isIgnored(this.watch, relative(this.watch.path, path))) continue;
        if (entry.isDirectory()) {
          if (this.watch.recursive) await walk(path);
        } else {
          await this.check(path);
        }
      }
    };
    await walk(this.watch.path);
  }

  private async check(path: string) {
    const rel = relative(this.watch.path, path);
    if (isIgnored(this.watch, rel)) return;
    let info;
    try {
      info = await lstat(path);
    } catch {
      return;
    }
    if (!info.isFile()) {
      if (!info.isDirectory() && !this.skipped.has(path)) {
        this.skipped.add(path);
        this.log.info(
          { file: path, kind: info.isSymbolicLink() ? 'symlink' : 'special' },
          'skipped: not a regular file',
        );
      }
      return;
    }
    this.onCandidate(this.watch, path, rel.normalize('NFC'), info.size, Math.floor(info.mtimeMs));
  }
}
