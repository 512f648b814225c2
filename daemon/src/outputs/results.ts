/**
 * Result files per document: JSON (everything), CSV for general fields (one row) and line items
 * (csv.ts), and a row in the daily running CSV per watched folder (daily-csv.ts). Columns follow the
 * template's field order (template-layout.ts); every path is resolved inside the watch's output
 * folder (names from the server never decide).
 */
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { generalFieldsOf, type DocexClient, type DocumentData, type TaskResult } from '@docex/shared';
import { jsonInSlices, parseJsonInSlices } from '@docex/shared/node';
import { inside, nthName, Reservations, syncFolder, writeAtomic, type Pieces } from '../common/files.ts';
import type { MailSource } from '../store/state.ts';
import { dialectFor, fraudOf, generalCsv, linesCsv, orderColumns, parseCsv } from './csv.ts';
import { DailyCsv, localDate } from './daily-csv.ts';
import { FIELDS_SUFFIX, JSON_SUFFIX, LINES_SUFFIX, resultBase } from './result-set.ts';
import { TemplateLayouts } from './template-layout.ts';

/** A result JSON as written: indented, a newline at the end; in pieces (jsonInSlices). */
async function* jsonFile(value: unknown): Pieces {
  yield* jsonInSlices(value, 2);
  yield '\n';
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
  /** 'task': `data` is the task answer's (domain/task-data.ts), fetch_document_data was not asked. */
  documentFrom?: 'task';
}

/** The JSON result as written (what later reads of it, e.g. after a rerun, can rely on). */
export interface ResultJson {
  document: DocumentData;
  /** Present when `document` was taken from the task's answer (no General_fields_list, no service-only keys). */
  document_from?: 'task';
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
) => inside(output, `${base ?? resultBase(sourceName, documentId)}${JSON_SUFFIX}`);

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
        put(`${base}${FIELDS_SUFFIX}`, generalCsv(data, ctx.source, fraud, layout, dialect)),
        put(`${base}${LINES_SUFFIX}`, linesCsv(data, layout, dialect)),
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
        ...(ctx.documentFrom ? { document_from: ctx.documentFrom } : {}),
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
      written.push(await put(`${base}${JSON_SUFFIX}`, jsonFile(json)));
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
      JSON_SUFFIX,
      // A large document's JSON is read a slice at a time (sliced-json.ts in @docex/shared/node).
      async (bytes: Buffer) => {
        const json = (await parseJsonInSlices(bytes)) as ResultJson;
        return { documentId: json.document.document_id, source: json.source_file };
      },
    ],
    [FIELDS_SUFFIX, fromFields],
    [LINES_SUFFIX, () => null],
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

// Where the parts of a result set are made; imported from here by the writers' callers.
export { dialectFor, fraudOf, generalCsv, linesCsv, orderColumns, parseCsv, STANDARD_CSV } from './csv.ts';
export type { CsvDialect, Fraud } from './csv.ts';
export { DAILY_COLUMNS, DailyCsv, localDate } from './daily-csv.ts';
export { TemplateLayouts, type TemplateLayout } from './template-layout.ts';
