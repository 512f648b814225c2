/**
 * Result files per document: JSON (everything), CSV for general fields (one row) and line items, and
 * a daily running CSV per watched folder (one row per document). Columns follow the template's field
 * order; every path is resolved inside the watch's output folder (names from the server never decide).
 */
import { open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  generalFieldsOf,
  lineItemTable,
  safeFileName,
  type DocexClient,
  type DocumentData,
  type TaskResult,
} from '@docex/shared';
import { jsonInSlices, parseJsonInSlices } from '@docex/shared/node';
import { crashPoint } from '../common/crash-point.ts';
import { inside, nthName, Reservations, syncFolder, writeAtomic, type Pieces } from '../common/files.ts';
import type { MailSource } from '../store/state.ts';

/** The template's fields in display order, and how it writes numbers. */
export interface TemplateLayout {
  general: string[];
  line: string[];
  numberLocale: 'EU' | 'US' | null;
  /** The template's name ({template} in name patterns). */
  name?: string;
}

/** How CSV files are written: standard (RFC 4180) or for a spreadsheet (BOM, ';', decimal comma). */
export interface CsvDialect {
  delimiter: ',' | ';';
  bom: boolean;
  decimal: '.' | ',';
}
export const STANDARD_CSV: CsvDialect = { delimiter: ',', bom: false, decimal: '.' };

/** Excel in a locale whose list separator is ';': decimal comma unless the template writes US numbers. */
export function dialectFor(style: 'standard' | 'excel', layout: TemplateLayout | undefined): CsvDialect {
  if (style === 'standard') return STANDARD_CSV;
  return { delimiter: ';', bom: true, decimal: layout?.numberLocale === 'US' ? '.' : ',' };
}

/** Fetches each template's fields once (fetch_template + fetch_field) and keeps them for the process. */
export class TemplateLayouts {
  private readonly cache = new Map<number, Promise<TemplateLayout>>();
  private readonly client: Pick<DocexClient, 'fetchTemplate' | 'fetchField'>;
  private readonly log: Logger | undefined;

  constructor(client: Pick<DocexClient, 'fetchTemplate' | 'fetchField'>, log?: Logger) {
    this.client = client;
    this.log = log;
  }

  /** undefined when unknown or unreachable: the columns then follow the data (tried again next time). */
  async get(templateId: number | null | undefined): Promise<TemplateLayout | undefined> {
    if (templateId == null) return undefined;
    let layout = this.cache.get(templateId);
    if (!layout) {
      layout = this.load(templateId);
      this.cache.set(templateId, layout);
    }
    try {
      return await layout;
    } catch (error) {
      this.cache.delete(templateId);
      this.log?.warn(
        { templateId, err: (error as Error).message },
        "could not read the template's fields; CSV columns follow the document this time",
      );
      return undefined;
    }
  }

  /** A rerun usually follows a template change: its fields are read again. */
  clear() {
    this.cache.clear();
  }

  private async load(templateId: number): Promise<TemplateLayout> {
    const template = await this.client.fetchTemplate({ template_id: templateId });
    const ids = template.field_ids ?? [];
    const fields = await Promise.all(ids.map((field_id) => this.client.fetchField({ field_id })));
    const ordered = fields
      .map((f, i) => ({ ...f, order: i }))
      .sort((a, b) => (a.position ?? Infinity) - (b.position ?? Infinity) || a.order - b.order);
    const names = (type: string) => ordered.filter((f) => f.type === type && f.name).map((f) => f.name!);
    const locale = String(template.number_locale ?? '').toUpperCase();
    return {
      name: template.name,
      general: names('General fields'),
      line: names('Line fields'),
      numberLocale: locale === 'EU' || locale === 'US' ? locale : null,
    };
  }
}

/** The template's order first (also fields this document lacks), then the rest in the document's order. */
export function orderColumns(known: readonly string[] | undefined, present: readonly string[]): string[] {
  return [...new Set([...(known ?? []), ...present])];
}

const cellOf = (v: unknown, dialect: CsvDialect): string => {
  if (v === null || v === undefined) return '';
  if (typeof v === 'number') return dialect.decimal === ',' ? String(v).replace('.', ',') : String(v);
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
};

/** Cells quoted in a CSV (RFC 4180): those holding the delimiter, a quote or a line break. */
const MUST_QUOTE = { ',': /[",\r\n]/, ';': /[";\r\n]/ } as const;

/**
 * Rows as CSV text, a line break after each: cells quoted where RFC 4180 needs it, quotes doubled.
 * What csv-stringify wrote (test/daemon/outputs/csv.test.ts), at a tenth of its CPU per cell, which
 * counts for a document of 200,000 lines; and a lone carriage return is quoted too (csv-stringify
 * left it bare, which a reader, ours included, takes for a line break).
 */
function csv(rows: unknown[][], dialect: CsvDialect, header = true): string {
  const mustQuote = MUST_QUOTE[dialect.delimiter];
  let text = dialect.bom && header ? '\uFEFF' : '';
  for (const row of rows) {
    for (let j = 0; j < row.length; j++) {
      const cell = cellOf(row[j], dialect);
      if (j > 0) text += dialect.delimiter;
      text += mustQuote.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
    }
    text += '\n';
  }
  return text;
}

export interface Fraud {
  verdict: string | null;
  score: number | null;
}

/** The verdict travels with the task result; a document's data may carry it too (kept if so). */
export function fraudOf(data: DocumentData, task: TaskResult | null | undefined): Fraud {
  const d = data as Record<string, unknown>;
  const verdict = d.Fraud_verdict ?? task?.Fraud_verdict ?? null;
  const score = d.Fraud_score ?? task?.Fraud_score ?? null;
  return {
    verdict: typeof verdict === 'string' ? verdict : null,
    score: typeof score === 'number' ? score : null,
  };
}

/** One row: document columns, the fraud verdict and score, then each field's value and confidence. */
export function generalCsv(
  data: DocumentData,
  source: string,
  fraud: Fraud,
  layout?: TemplateLayout,
  dialect = STANDARD_CSV,
): string {
  const fields = new Map(generalFieldsOf(data).map((f) => [f.name, f]));
  const names = orderColumns(layout?.general, [...fields.keys()]);
  const header = [
    'document_id',
    'document_name',
    'source_file',
    'fraud_verdict',
    'fraud_score',
    ...names.flatMap((n) => [n, `${n} (confidence)`]),
  ];
  const row = [
    data.document_id,
    data.document_name ?? '',
    source,
    fraud.verdict,
    fraud.score,
    ...names.flatMap((n) => [fields.get(n)?.value, fields.get(n)?.confidence]),
  ];
  return csv([header, row], dialect);
}

/**
 * Cells of the line items CSV made between two turns of the event loop: a few ms of work. A document
 * may have 200,000 lines; made at once, their CSV held the daemon's event loop for seconds.
 */
const CELLS_PER_PIECE = 10_000;

/** The line items CSV, in pieces of about CELLS_PER_PIECE cells, the event loop running between them. */
export async function* linesCsv(
  data: DocumentData,
  layout?: TemplateLayout,
  dialect = STANDARD_CSV,
): AsyncGenerator<string> {
  const table = lineItemTable(data);
  const names = orderColumns(layout?.line, table.names);
  const header = ['document_id', 'line', ...names.flatMap((n) => [n, `${n} (confidence)`])];
  let rows: unknown[][] = [header];
  let first = true;
  for (let i = 0; i < table.count; i++) {
    const item = table.line(i);
    rows.push([data.document_id, i + 1, ...names.flatMap((n) => [item[n]?.value, item[n]?.confidence])]);
    if (rows.length * header.length >= CELLS_PER_PIECE) {
      yield csv(rows, dialect, first);
      first = false;
      rows = [];
      await nextTurn();
    }
  }
  if (rows.length > 0) yield csv(rows, dialect, first);
}

/** A result JSON as written: indented, a newline at the end; in pieces (jsonInSlices). */
async function* jsonFile(value: unknown): Pieces {
  yield* jsonInSlices(value, 2);
  yield '\n';
}

/** The base of result file names: the source file's name (made safe) and the document id. */
export function resultBase(sourceName: string, documentId: number): string {
  const stem = safeFileName(sourceName).replace(/\.[^.]+$/, '') || 'document';
  return `${stem}.doc-${documentId}`;
}

/** Where a watch's results go and how they are written. */
export interface ResultTarget {
  output: string;
  formats: ReadonlyArray<'json' | 'csv'>;
  daily_csv?: boolean;
  csv_style?: 'standard' | 'excel';
}

export interface ResultContext {
  /** Where the file was found (in the watched folder). */
  source: string;
  /** Where the original went after success: the processed folder, "deleted", or the source when kept. */
  archivedTo: string | null;
  sha256: string | null;
  task: TaskResult | null;
  outcome: 'processed' | 'duplicate';
  /** The file's name as dropped (result names derive from it). */
  sourceName: string;
  /** Set when the results are rewritten after a rerun. */
  refreshedBy?: string;
  /** The e-mail the file came from (mail intake). */
  message?: MailSource;
  /** The base of the file names, the file's own (freeBase); default: resultBase(sourceName, id). */
  base?: string | undefined;
  /** Values a person corrected on review (outputs/review-decisions.ts): the result JSON lists them. */
  corrections?: unknown[];
}

/** The JSON result as written (what later reads of it, e.g. after a rerun, can rely on). */
export interface ResultJson {
  document: DocumentData;
  task: TaskResult | null;
  source_file: string;
  archived_to: string | null;
  sha256: string | null;
  outcome: 'processed' | 'duplicate';
  fraud_verdict: string | null;
  fraud_score: number | null;
  written_at: string;
  refreshed_after_rerun?: string;
  message?: MailSource;
  corrections?: unknown[];
}

export const jsonResultPath = (
  output: string,
  sourceName: string,
  documentId: number,
  base?: string | null,
) => inside(output, `${base ?? resultBase(sourceName, documentId)}.json`);

export async function readResultJson(path: string): Promise<ResultJson | undefined> {
  try {
    return (await parseJsonInSlices(await readFile(path))) as ResultJson;
  } catch {
    return undefined;
  }
}

/** Whose result set a base is for: one file (its row), its document, where it was found. */
export interface ResultOwner {
  fileId: number;
  documentId: number;
  source: string;
}

/** Writes and appends results; one instance per process keeps the template cache and the daily files. */
export class ResultWriter {
  readonly layouts: TemplateLayouts;
  private readonly daily = new DailyCsv();
  /** Bases freeBase gave out whose files are not written yet (output/base, held by the file's row id). */
  private readonly reserved = new Reservations();
  private readonly now: () => number;

  constructor(
    client: Pick<DocexClient, 'fetchTemplate' | 'fetchField'>,
    options: { log?: Logger; now?: () => number } = {},
  ) {
    this.layouts = new TemplateLayouts(client, options.log);
    this.now = options.now ?? Date.now;
  }

  async write(target: ResultTarget, data: DocumentData, ctx: ResultContext): Promise<string[]> {
    const layout = await this.layouts.get(data.template_id);
    const dialect = dialectFor(target.csv_style ?? 'standard', layout);
    const fraud = fraudOf(data, ctx.task);
    const base = ctx.base ?? resultBase(ctx.sourceName, data.document_id);
    const writtenAt = new Date(this.now());
    const written: string[] = [];
    const put = async (name: string, content: string | Pieces) => {
      const path = inside(target.output, name);
      await writeAtomic(path, content);
      return path;
    };
    if (target.formats.includes('csv')) {
      // The CSV files and the daily row are written (and fsynced) at the same time.
      const writes: Array<Promise<unknown>> = [
        put(`${base}.fields.csv`, generalCsv(data, ctx.source, fraud, layout, dialect)),
        put(`${base}.lines.csv`, linesCsv(data, layout, dialect)),
      ];
      if (target.daily_csv !== false) {
        const fields = new Map(generalFieldsOf(data).map((f) => [f.name, f.value]));
        writes.push(
          this.daily.append(
            inside(target.output, `daily-${localDate(writtenAt)}.csv`),
            {
              document_id: data.document_id,
              source_file: ctx.source,
              document_name: data.document_name ?? '',
              archived_to: ctx.archivedTo,
              outcome: ctx.refreshedBy ? `${ctx.outcome} (rerun)` : ctx.outcome,
              written_at: writtenAt.toISOString(),
              fraud_verdict: fraud.verdict,
              fraud_score: fraud.score,
            },
            orderColumns(layout?.general, [...fields.keys()]).map((n) => [n, fields.get(n)] as const),
            dialect,
            { again: ctx.refreshedBy !== undefined },
          ),
        );
      }
      const settled = await Promise.allSettled(writes);
      const failure = settled.find((r) => r.status === 'rejected');
      if (failure) throw failure.reason;
      written.push(...settled.slice(0, 2).map((r) => (r as PromiseFulfilledResult<string>).value));
    }
    // JSON last: its presence means the set is complete.
    if (target.formats.includes('json')) {
      const json: ResultJson = {
        document: data,
        task: ctx.task,
        source_file: ctx.source,
        archived_to: ctx.archivedTo,
        sha256: ctx.sha256,
        outcome: ctx.outcome,
        fraud_verdict: fraud.verdict,
        fraud_score: fraud.score,
        written_at: writtenAt.toISOString(),
        ...(ctx.refreshedBy ? { refreshed_after_rerun: ctx.refreshedBy } : {}),
        ...(ctx.message ? { message: ctx.message } : {}),
        ...(ctx.corrections ? { corrections: ctx.corrections } : {}),
      };
      written.push(await put(`${base}.json`, jsonFile(json)));
    }
    // The folder entries too, before the original can be archived: after a power loss the results
    // of an archived file are there (one folder fsync per group of documents, syncFolder).
    await Promise.all([...new Set(written.map((path) => dirname(path)))].map((dir) => syncFolder(dir)));
    return written;
  }

  /**
   * A base for one file's result files that no other file's set holds, in any of `targets` (output,
   * and review_dir where a held set waits before it goes to output): "R-1", "R-1 (2)", ... A set
   * already there is the file's own only when it names the file's document and source (rewritten
   * after a crash); one of another file, even of the same document (the same bytes again), is
   * not. `heldElsewhere` names the bases other files recorded (the state DB's knowledge, for sets
   * not on disk, or on disk under the same source). The base stays reserved for the file until
   * `written` is called for it, so two files finishing together never pick one base.
   */
  async freeBase(
    targets: readonly [ResultTarget, ...ResultTarget[]],
    wanted: string,
    owner: ResultOwner,
    heldElsewhere: (base: string) => boolean = () => false,
  ): Promise<string> {
    for (let n = 1; ; n++) {
      const base = nthName(wanted, n);
      if (heldElsewhere(base)) continue;
      const key = inside(targets[0].output, base);
      const heldBefore = this.reserved.holderOf(key);
      // Reserved before the await (see Reservations).
      if (!this.reserved.take(key, owner.fileId)) continue;
      const sets = await Promise.all(targets.map((t) => identityOf(t, base)));
      const own = (set: SetIdentity | null | undefined) =>
        set === undefined ||
        (set !== null && set.documentId === owner.documentId && set.source === owner.source);
      if (sets.every(own)) return base;
      if (heldBefore === undefined) this.reserved.release(key, owner.fileId);
    }
  }

  /** The file's set is on disk at `base` (in output or review_dir): its reservation is given back. */
  written(target: ResultTarget, base: string, fileId: number) {
    this.reserved.release(inside(target.output, base), fileId);
  }

  /** After a restart: a base a file recorded whose set may not be written yet is held for it again. */
  reserve(target: ResultTarget, base: string, fileId: number) {
    this.reserved.take(inside(target.output, base), fileId);
  }

  /** After the original moved: the JSON says where it went (idempotent; nothing if it already does). */
  async recordArchive(
    target: ResultTarget,
    sourceName: string,
    documentId: number,
    archivedTo: string | null,
    base?: string | null,
  ) {
    if (!target.formats.includes('json')) return;
    const path = jsonResultPath(target.output, sourceName, documentId, base);
    const json = await readResultJson(path);
    if (!json || json.archived_to === archivedTo) return;
    await writeAtomic(path, jsonFile({ ...json, archived_to: archivedTo }));
  }
}

/** Whose a result set on disk is: the document and the source file it names. */
export interface SetIdentity {
  documentId: number;
  source: string;
}

/** The identity of the result set at `base`: undefined when there is none, null when it cannot be read (taken). */
export async function identityOf(
  target: ResultTarget,
  base: string,
): Promise<SetIdentity | null | undefined> {
  // generalCsv's first columns: document_id, document_name, source_file.
  const fromFields = (bytes: Buffer) => {
    const text = bytes.toString('utf8');
    const row = parseCsv(text.replace(/^\uFEFF/, ''), text.includes(';') ? ';' : ',')[1] ?? [];
    return { documentId: Number(row[0]), source: row[2] };
  };
  for (const [suffix, read] of [
    [
      '.json',
      // A large document's JSON is read a slice at a time (sliced-json.ts in @docex/shared/node).
      async (bytes: Buffer) => {
        const json = (await parseJsonInSlices(bytes)) as ResultJson;
        return { documentId: json.document.document_id, source: json.source_file };
      },
    ],
    ['.fields.csv', fromFields],
    ['.lines.csv', () => null],
  ] as const) {
    let bytes: Buffer;
    try {
      bytes = await readFile(inside(target.output, `${base}${suffix}`));
    } catch {
      continue;
    }
    try {
      const set = await read(bytes);
      return set && Number.isFinite(set.documentId) && typeof set.source === 'string'
        ? (set as SetIdentity)
        : null;
    } catch {
      return null;
    }
  }
  return undefined;
}

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

/** RFC 4180 records (quoted cells with delimiters, quotes and line breaks), enough to read our own files. */
export function parseCsv(text: string, delimiter: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  const endCell = () => {
    row.push(cell);
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === delimiter) endCell();
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endCell();
      rows.push(row);
      row = [];
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    endCell();
    rows.push(row);
  }
  return rows;
}
