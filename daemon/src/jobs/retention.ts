/**
 * Retention (`docex-sync prune`, and the running daemon on each watch's `retention.schedule`):
 * deletes what docex-sync moved or wrote for a watch once it is older than the watch's
 * `retention` days, counted from the time the state DB recorded the move or write (never the
 * file's mtime). It deletes only files a state DB row names, and only while they are still what
 * docex-sync put there:
 * - processed originals: the row's archive_path (else processed_dir + archive_rel or the path in
 *   the watched folder, for rows archived before archive_path was recorded), with the row's size,
 *   and its mtime or (when the mtime differs, e.g. a copy across file systems) its SHA-256;
 * - failed originals: the row's path in failed_dir, checked the same way, and the `.error.json`
 *   beside it when it is the report docex-sync wrote for that row;
 * - result files: `<result_base or name.doc-ID>.json / .fields.csv / .lines.csv` in output, when
 *   their content names the row's document.
 * A file that fails the check was replaced by someone: it is kept, said once, and never looked at
 * again. Every settled file is recorded in the DB (store/retention.ts, table pruned); a dry run
 * records and deletes nothing. docs/decisions.md, "docex-sync: retention".
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, type Stats } from 'node:fs';
import { lstat, readFile, realpath, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { pipeline as streamPipeline } from 'node:stream/promises';
import { safeFileName } from '@docex/shared';
import type { Logger } from 'pino';
import type { ConfigSlice, WatchConfig } from '../config/config.ts';
import { inside } from '../common/files.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import { FIELDS_SUFFIX, JSON_SUFFIX, LINES_SUFFIX, resultBase } from '../outputs/result-set.ts';
import { parseCsv, readResultJson } from '../outputs/results.ts';
import { StateDb, type PruneKind, type PrunedFile } from '../store/state.ts';

const DAY_MS = 86_400_000;
const PAGE = 500;

/** The file-system calls retention makes (tests inject failures). */
export interface PruneFs {
  lstat(path: string): Promise<Stats>;
  rm(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  readFile(path: string): Promise<string>;
  realpath(path: string): Promise<string>;
  sha256(path: string): Promise<string>;
}

export const nodePruneFs: PruneFs = {
  lstat: (path) => lstat(path),
  rm: (path) => rm(path),
  rmdir: (path) => rmdir(path),
  readFile: (path) => readFile(path, 'utf8'),
  realpath: (path) => realpath(path),
  async sha256(path) {
    const hash = createHash('sha256');
    await streamPipeline(createReadStream(path), hash);
    return hash.digest('hex');
  },
};

export interface PruneDeps {
  db: StateDb;
  /** The watches: each one's retention section and the folders it prunes in. */
  config: ConfigSlice<'watch'>;
  now?: () => number;
  fs?: PruneFs;
  /** Only these watches' retention (the daemon runs each schedule's watches); default every watch. */
  watches?: WatchConfig[];
}

/** One file retention looked at. */
export interface PruneEntry {
  watch: string;
  kind: PruneKind;
  path: string;
  bytes: number;
  /** would-delete: a dry run's; gone: no longer there (recorded, nothing to do). */
  outcome: 'deleted' | 'would-delete' | 'gone' | 'kept' | 'error';
  /** kept or error: why. */
  reason?: string;
  /** When the state DB recorded the move or write the age counts from. */
  recordedAt: number;
  days: number;
}

export interface PruneReport {
  dryRun: boolean;
  /** Watches with a retention section. */
  watches: number;
  entries: PruneEntry[];
}

const DAYS_KEY = { processed: 'processed_days', failed: 'failed_days', results: 'results_days' } as const;
const KIND_NAME = {
  processed: 'processed original',
  failed: 'failed original',
  results: 'result file',
} as const;

/** A file a row names, and how to tell it is still what docex-sync put there (a reason when not). */
interface Target {
  path: string;
  /** The configured folder it must lie in (and up to which emptied folders are removed). */
  root: string;
  changed: (path: string, info: Stats) => Promise<string | undefined>;
}

export async function pruneRetention(deps: PruneDeps, { dryRun }: { dryRun: boolean }): Promise<PruneReport> {
  const { db, config } = deps;
  const fs = deps.fs ?? nodePruneFs;
  const now = (deps.now ?? Date.now)();
  db.flush();
  const watches = (deps.watches ?? config.watch).filter((w) => w.retention);
  const report: PruneReport = { dryRun, watches: watches.length, entries: [] };
  // Paths looked at in this run: each file is listed once, even where two rows name it (result sets
  // two files of the same bytes shared before each file got its own names).
  const looked = new Set<string>();
  for (const watch of watches) {
    for (const kind of ['processed', 'failed', 'results'] as const) {
      const days = watch.retention![DAYS_KEY[kind]];
      if (days === undefined) continue;
      const cutoff = now - days * DAY_MS;
      for (
        let after = 0, rows;
        (rows = db.retention.pruneDue(watch.path, kind, cutoff, after, PAGE)).length > 0;
      ) {
        after = rows.at(-1)!.id;
        for (const row of rows) {
          const entries = await pruneRow(fs, watch, kind, row, dryRun, looked);
          for (const e of entries) report.entries.push({ ...e, recordedAt: row.updated_at, days });
          // A row is settled for this kind once each of its files is deleted, gone or kept.
          if (!dryRun && entries.length > 0 && entries.every((e) => e.outcome !== 'error'))
            db.retention.recordPruned(
              entries.map((e): PrunedFile => ({
                file_id: row.id,
                kind,
                path: e.path,
                bytes: e.bytes,
                outcome: e.outcome as PrunedFile['outcome'],
                reason: e.reason ?? null,
              })),
              now,
            );
        }
      }
    }
  }
  db.flush();
  return report;
}

async function pruneRow(
  fs: PruneFs,
  watch: WatchConfig,
  kind: PruneKind,
  row: FileRow,
  dryRun: boolean,
  looked: Set<string>,
): Promise<Array<Omit<PruneEntry, 'recordedAt' | 'days'>>> {
  const entries: Array<Omit<PruneEntry, 'recordedAt' | 'days'>> = [];
  let targets: Target[];
  try {
    targets = targetsOf(fs, watch, kind, row);
  } catch {
    return []; // a recorded name that leads outside its folder (inside() refuses it): never touched
  }
  for (const target of targets) {
    // Another row's entry already says what became of it; this row is settled by a later prune.
    if (looked.has(target.path)) continue;
    looked.add(target.path);
    const base = { watch: watch.path, kind, path: target.path };
    let info: Stats;
    try {
      info = await fs.lstat(target.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT')
        entries.push({ ...base, bytes: 0, outcome: 'gone' });
      else entries.push({ ...base, bytes: 0, outcome: 'error', reason: (error as Error).message });
      continue;
    }
    if (!(await reallyInside(fs, target.root, target.path))) {
      entries.push({
        ...base,
        bytes: 0,
        outcome: 'kept',
        reason: `it lies outside the configured folder ${target.root} (the config changed since, or a folder on the way is a link)`,
      });
      continue;
    }
    const changed = info.isFile()
      ? await target
          .changed(target.path, info)
          .catch((error: unknown) => `it cannot be read: ${(error as Error).message}`)
      : 'it is not a regular file';
    if (changed) {
      entries.push({ ...base, bytes: info.size, outcome: 'kept', reason: changed });
      continue;
    }
    if (dryRun) {
      entries.push({ ...base, bytes: info.size, outcome: 'would-delete' });
      continue;
    }
    try {
      await fs.rm(target.path);
    } catch (error) {
      entries.push({ ...base, bytes: info.size, outcome: 'error', reason: (error as Error).message });
      continue;
    }
    entries.push({ ...base, bytes: info.size, outcome: 'deleted' });
    await removeEmptyFolders(fs, target.root, dirname(target.path));
  }
  return entries;
}

const isInside = (root: string, path: string) => {
  const rel = relative(resolve(root), resolve(path));
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

/** Inside the root also after symbolic links are followed (a folder replaced by a link leads elsewhere). */
async function reallyInside(fs: PruneFs, root: string, path: string) {
  if (!isInside(root, path)) return false;
  const [realRoot, realDir] = await Promise.all([fs.realpath(root), fs.realpath(dirname(path))]).catch(() => [
    root,
    undefined,
  ]);
  return realDir !== undefined && (realDir === realRoot || isInside(realRoot!, realDir));
}

/** Folders a deletion left empty (names from the data make year/month/supplier folders), up to the root. */
async function removeEmptyFolders(fs: PruneFs, root: string, dir: string) {
  for (let at = dir; isInside(root, at); at = dirname(at)) {
    try {
      await fs.rmdir(at); // refuses a folder that holds anything
    } catch {
      return;
    }
  }
}

/** The original's bytes as the row recorded them: its size, and its mtime or else its hash. */
const sameOriginal = (fs: PruneFs, row: FileRow) => async (path: string, info: Stats) => {
  if (info.size !== row.size)
    return `its size (${info.size} bytes) differs from what docex-sync recorded (${row.size} bytes): someone replaced it`;
  if (Math.floor(info.mtimeMs) === row.mtime_ms) return undefined;
  if (row.sha256 === null)
    return 'its modification time differs from what docex-sync recorded, and no hash was recorded to compare: someone may have replaced it';
  if ((await fs.sha256(path)) !== row.sha256)
    return 'its content (SHA-256) differs from what docex-sync recorded: someone replaced it';
  return undefined;
};

function targetsOf(fs: PruneFs, watch: WatchConfig, kind: PruneKind, row: FileRow): Target[] {
  if (kind === 'processed') {
    const root = watch.processed_dir;
    if (!root) return [];
    // Rows archived before archive_path was recorded: where the move aimed (freeTarget's first choice).
    const path =
      row.archive_path ??
      inside(
        root,
        (row.archive_rel ?? row.rel)
          .split(/[\\/]/)
          .map((p) => safeFileName(p))
          .join(sep),
      );
    return [{ path, root, changed: sameOriginal(fs, row) }];
  }
  if (kind === 'failed') {
    const report: Target = {
      path: `${row.path}.error.json`,
      root: watch.failed_dir,
      async changed(path) {
        const json = JSON.parse(await fs.readFile(path)) as { status?: unknown; file?: unknown };
        return json.status === 'failed' && json.file === row.rel
          ? undefined
          : `it is not the failure report docex-sync wrote for ${row.rel}`;
      },
    };
    return [{ path: row.path, root: watch.failed_dir, changed: sameOriginal(fs, row) }, report];
  }
  const base = row.result_base ?? resultBase(basename(row.path), row.document_id!);
  const names = (path: string) =>
    `its content does not name document ${row.document_id}: it is not the result docex-sync wrote there (${basename(path)})`;
  const csvRows = async (path: string) => {
    const text = (await fs.readFile(path)).replace(/^\uFEFF/, '');
    return parseCsv(text, text.split('\n', 1)[0]!.includes(';') ? ';' : ',');
  };
  const ours = (document: string | undefined) =>
    document !== undefined && Number(document) === row.document_id;
  return [
    {
      path: inside(watch.output, `${base}${JSON_SUFFIX}`),
      root: watch.output,
      async changed(path) {
        const json = await readResultJson(path);
        return json?.document?.document_id === row.document_id ? undefined : names(path);
      },
    },
    {
      path: inside(watch.output, `${base}${FIELDS_SUFFIX}`),
      root: watch.output,
      async changed(path) {
        const [header, first] = await csvRows(path);
        return header?.[0] === 'document_id' && ours(first?.[0]) ? undefined : names(path);
      },
    },
    {
      // Without line items the file is its header alone: docex-sync's header, naming no document.
      path: inside(watch.output, `${base}${LINES_SUFFIX}`),
      root: watch.output,
      async changed(path) {
        const [header, ...lines] = (await csvRows(path)).filter((r) => r.some((cell) => cell !== ''));
        return header?.[0] === 'document_id' && header[1] === 'line' && lines.every((l) => ours(l[0]))
          ? undefined
          : names(path);
      },
    },
  ];
}

const bytes = (n: number) => `${n.toLocaleString('en-US')} bytes`;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The report as `docex-sync prune` prints it: one line per file, then the totals. */
export function renderPrune(report: PruneReport, now: number): string[] {
  if (report.watches === 0)
    return [
      'No watch has a retention section: nothing to prune (set retention.processed_days, failed_days or results_days on a watch).',
    ];
  const lines: string[] = [];
  const done = report.dryRun ? 'would-delete' : 'deleted';
  for (const e of report.entries) {
    const age = `${KIND_NAME[e.kind]}, recorded ${day(e.recordedAt)}, ${Math.floor((now - e.recordedAt) / DAY_MS)} days ago; retention.${DAYS_KEY[e.kind]}: ${e.days}`;
    if (e.outcome === done)
      lines.push(`${report.dryRun ? 'would delete' : 'deleted'} ${e.path} (${bytes(e.bytes)}; ${age})`);
    else if (e.outcome === 'kept') lines.push(`kept ${e.path}: ${e.reason}; retention never deletes it`);
    else if (e.outcome === 'error')
      lines.push(`not deleted ${e.path}: ${e.reason}; it is tried again on the next prune`);
  }
  const removed = report.entries.filter((e) => e.outcome === done);
  const total = removed.reduce((sum, e) => sum + e.bytes, 0);
  const kept = report.entries.filter((e) => e.outcome === 'kept').length;
  const errors = report.entries.filter((e) => e.outcome === 'error').length;
  const extra = `${kept ? `; ${kept} kept (not what docex-sync wrote)` : ''}${errors ? `; ${errors} could not be deleted` : ''}`;
  lines.push(
    report.dryRun
      ? `Dry run: ${removed.length} file(s), ${bytes(total)}, would be deleted${extra}. Nothing was deleted.`
      : `Pruned: ${removed.length} file(s) deleted, ${bytes(total)}${extra}.`,
  );
  return lines;
}

/** `docex-sync prune`: the state DB of the config (none yet: nothing to prune), the report on `out`. */
export async function prune(
  config: ConfigSlice<'state_db' | 'watch'>,
  options: { dryRun: boolean; out: (line: string) => void; now?: () => number; fs?: PruneFs },
): Promise<PruneReport> {
  const now = options.now ?? Date.now;
  if (!existsSync(config.state_db)) {
    options.out(`Nothing to prune: there is no state DB yet at ${config.state_db}.`);
    return { dryRun: options.dryRun, watches: 0, entries: [] };
  }
  const db = new StateDb(config.state_db);
  try {
    const report = await pruneRetention({ db, config, now, fs: options.fs }, { dryRun: options.dryRun });
    for (const line of renderPrune(report, now())) options.out(line);
    return report;
  } finally {
    db.close();
  }
}

/** The running daemon's prune on a schedule: the totals in the log, each kept or failed file once. */
export async function pruneOnSchedule(deps: PruneDeps, log: Logger) {
  const report = await pruneRetention(deps, { dryRun: false });
  const deleted = report.entries.filter((e) => e.outcome === 'deleted');
  for (const e of report.entries) {
    if (e.outcome === 'kept')
      log.warn(
        { file: e.path, reason: e.reason },
        'retention: kept, not what docex-sync wrote; never deleted',
      );
    else if (e.outcome === 'error')
      log.error(
        { file: e.path, err: e.reason },
        'retention: could not delete; tried again on the next prune',
      );
  }
  log[deleted.length ? 'info' : 'debug'](
    {
      folders: report.watches,
      files: deleted.length,
      bytes: deleted.reduce((sum, e) => sum + e.bytes, 0),
    },
    'retention: pruned',
  );
}
