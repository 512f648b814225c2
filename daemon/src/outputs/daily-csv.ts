/**
 * The daily running CSV per watched folder: one row per document, appended in groups, a crash
 * replay never adding a row twice.
 */
import { open, readFile } from 'node:fs/promises';
import { crashPoint } from '../common/crash-point.ts';
import { csv, parseCsv, type CsvDialect } from './csv.ts';

const pad = (n: number) => String(n).padStart(2, '0');
/** The operator's day (local time of the machine running the daemon). */
export const localDate = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;

export const DAILY_COLUMNS = [
  'document_id',
  'source_file',
  'document_name',
  'archived_to',
  'outcome',
  'written_at',
  'fraud_verdict',
  'fraud_score',
] as const;
type DailyRecord = Record<(typeof DAILY_COLUMNS)[number], unknown>;

interface DailyFile {
  header: string[];
  /** rowKey of the rows already in the file: a crash replay does not add a row twice. */
  keys: Set<string>;
}

/**
 * Which file a row is of: its document, where it was found and where its original went. Two files
 * of one document (the same bytes), even found at one path (dropped again once the first was
 * moved on), each get their row; the same file's results written again after a crash do not.
 */
const rowKey = (documentId: unknown, source: unknown, archivedTo: unknown) =>
  `${String(documentId ?? '')}\u0000${String(source ?? '')}\u0000${String(archivedTo ?? '')}`;

/** A row waiting for its group's append (DailyCsv.append). */
interface QueuedRow {
  path: string;
  record: DailyRecord;
  fields: ReadonlyArray<readonly [string, unknown]>;
  dialect: CsvDialect;
  again: boolean;
  resolve: (appended: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Daily files remembered at once (least recently used first out): a day's file is appended to for
 * a day, then never again, so a long run keeps the current days' files only. One that is appended
 * to again after it was forgotten is read back from disk (its keys come from its rows).
 */
const DAILY_FILES_KEPT = 8;

/**
 * Appends one row per document to a day's CSV: the header once (at creation, the day's first
 * template decides the field columns; later rows fill the columns they share with it), a torn last
 * line from a crash cut off before the next append, appends in this process one after another.
 *
 * Group append: the rows that arrive while an append is on its way to the disk go together in the
 * next one (one open, write and fsync for all of them), so a busy daemon pays one fsync per group,
 * not per document, and a quiet one waits for nothing (a lone row is appended at once). A row's
 * promise resolves once its group is fsynced.
 */
export class DailyCsv {
  /** In order of last use; at most DAILY_FILES_KEPT. A file's key set holds one entry per row of its day. */
  private readonly files = new Map<string, DailyFile>();
  private chain: Promise<unknown> = Promise.resolve();
  /** Rows for the next group; its append is on the chain once the first of them came. */
  private queued: QueuedRow[] = [];
  /** Appends made (each one write and one fsync), for the tests of grouping. */
  appends = 0;

  /** Appends the row (false: the file already has it, from before a crash). */
  append(
    path: string,
    record: DailyRecord,
    fields: ReadonlyArray<readonly [string, unknown]>,
    dialect: CsvDialect,
    options: { again?: boolean } = {},
  ): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.queued.push({ path, record, fields, dialect, again: options.again ?? false, resolve, reject });
      if (this.queued.length === 1) this.chain = this.chain.then(() => this.appendQueued());
    });
  }

  /** Takes every row queued so far: one append per daily file among them. */
  private async appendQueued() {
    const rows = this.queued;
    this.queued = [];
    const byPath = new Map<string, QueuedRow[]>();
    for (const row of rows) {
      const group = byPath.get(row.path);
      if (group) group.push(row);
      else byPath.set(row.path, [row]);
    }
    for (const [path, group] of byPath) {
      try {
        const appended = await this.appendGroup(path, group);
        group.forEach((row, i) => row.resolve(appended[i]!));
      } catch (error) {
        for (const row of group) row.reject(error);
      }
    }
  }

  private async appendGroup(path: string, group: QueuedRow[]): Promise<boolean[]> {
    const file = this.files.get(path) ?? (await this.load(path, group[0]!.dialect));
    const added = new Set<string>();
    let text = '';
    const appended = group.map(({ record, fields, dialect, again }) => {
      const key = rowKey(record.document_id, record.source_file, record.archived_to);
      if (file.header.length === 0) {
        file.header = [...DAILY_COLUMNS, ...fields.map(([n]) => n)];
        text += csv([file.header], dialect);
      } else if ((file.keys.has(key) || added.has(key)) && !again) return false;
      const values = new Map<string, unknown>([...Object.entries(record), ...fields]);
      text += csv([file.header.map((c) => values.get(c))], dialect, false);
      added.add(key);
      return true;
    });
    if (text !== '') {
      const handle = await open(path, 'a');
      try {
        await handle.appendFile(text);
        await handle.sync();
      } finally {
        await handle.close();
      }
      this.appends++;
      crashPoint('daily-appended');
    }
    for (const key of added) file.keys.add(key);
    this.remember(path, file);
    return appended;
  }

  private remember(path: string, file: DailyFile) {
    this.files.delete(path);
    this.files.set(path, file);
    while (this.files.size > DAILY_FILES_KEPT) this.files.delete(this.files.keys().next().value!);
  }

  /** How many daily files are held in memory (tests). */
  get remembered(): number {
    return this.files.size;
  }

  private async load(path: string, dialect: CsvDialect): Promise<DailyFile> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch {
      return { header: [], keys: new Set() };
    }
    const end = text.lastIndexOf('\n') + 1;
    if (end < text.length) {
      // A row cut short by a crash: drop it (its document is appended again whole).
      const handle = await open(path, 'r+');
      await handle.truncate(Buffer.byteLength(text.slice(0, end)));
      await handle.close();
      text = text.slice(0, end);
    }
    const [header = [], ...rows] = parseCsv(text.replace(/^\uFEFF/, ''), dialect.delimiter);
    const [id, source, archived] = (['document_id', 'source_file', 'archived_to'] as const).map((c) =>
      header.indexOf(c),
    );
    return { header, keys: new Set(rows.map((r) => rowKey(r[id!], r[source!], r[archived!]))) };
  }
}
