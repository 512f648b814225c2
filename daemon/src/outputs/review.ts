/**
 * The review queue's files (docs/daemon.md, "Review queue"). A document a rule of its watch (or
 * route) fires for has its results written into review_dir instead of output, with
 * `<base>.review.json` naming each rule that fired; its original follows into review_dir where it
 * would have been archived, and a row goes into the day's review CSV. Approved, its results are
 * written into output from the review.json (which holds the document's data) and the review copies
 * are removed; the original then takes the usual archiving step from review_dir.
 *
 * The rules are the shared core's (shared/src/core/review.ts), the same the n8n node applies.
 * Everything in review.json and the CSV that came from the service (field names, values, verdicts)
 * is untrusted: control characters removed, lengths capped, CSV cells that a spreadsheet would run
 * as a formula quoted, and every path resolved inside review_dir.
 */
import { readFile, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import {
  reviewReasons,
  rulesFromSettings,
  type DocumentData,
  type ReviewReason,
  type ReviewRules,
  type TaskResult,
} from '@docex/shared';
import type { WatchConfig } from '../config/config.ts';
import { settingsOfRoute } from '../config/route-settings.ts';
import { freeTarget, inside, Reservations, writeAtomic } from '../common/files.ts';
import { moveTo } from '../common/move.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import {
  DailyCsv,
  dialectFor,
  identityOf,
  localDate,
  type ResultContext,
  type ResultWriter,
} from './results.ts';
import { RESULT_SUFFIXES, resultBase } from './result-set.ts';

/**
 * The rules of a route (its own `review`, or its watch's when it sends to the watch's template:
 * common/route-settings.ts) or of the watch, in the core's terms (the shared reader's).
 */
export function reviewRulesFor(watch: WatchConfig, route: string | null): ReviewRules | undefined {
  return rulesFromSettings(settingsOfRoute(watch, route).review);
}

/** What the state DB keeps of a held document (FileRow.review), sanitised. */
export interface HeldReview {
  reasons: ReviewReason[];
  fraud: { verdict: string | null; score: number | string | null };
}

const MAX_TEXT = 300;
/** Control characters (line breaks included) and the bidi overrides that make a name read as another. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** A text from the service as it may appear in review.json, the CSV, a log or the page. */
export function cleanText(text: string, max = MAX_TEXT): string {
  const clean = text.replace(UNSAFE, ' ');
  return clean.length > max ? `${clean.slice(0, max - 1)}…` : clean;
}

/** A value from the service: numbers, booleans and null as they are, anything else as capped text. */
function cleanValue(value: unknown): unknown {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'string') return cleanText(value);
  return value === undefined ? undefined : cleanText(JSON.stringify(value) ?? '');
}

function cleanReason(r: ReviewReason): ReviewReason {
  return {
    rule: r.rule,
    ...(r.field !== undefined ? { field: cleanText(r.field) } : {}),
    ...('value' in r && r.value !== undefined ? { value: cleanValue(r.value) } : {}),
    ...(r.found !== undefined ? { found: r.found } : {}),
    ...(r.threshold !== undefined ? { threshold: r.threshold } : {}),
    message: cleanText(r.message, MAX_TEXT * 2),
  };
}

/**
 * Whether the document waits for a person: the reasons (sanitised) as FileRow.review, and where its
 * original waits (null: on_success keep leaves it where it is): a free name in review_dir that no
 * other file holds in `places` either (one whose original is on its way there), then held for this
 * file. Undefined when no rule fires, or when the decision was taken before (a replay keeps the first).
 */
export async function decideReview(
  watch: WatchConfig,
  row: FileRow,
  data: DocumentData,
  task: TaskResult | null,
  places: Reservations = new Reservations(),
): Promise<{ review: string; reviewPath: string | null } | undefined> {
  if (row.review !== null || !watch.review_dir) return undefined;
  const rules = reviewRulesFor(watch, row.route);
  if (!rules) return undefined;
  const d = data as Record<string, unknown>;
  // The verdict travels with the task result; a document's data may carry it too (results.ts, fraudOf).
  const verdict = d.Fraud_verdict ?? task?.Fraud_verdict ?? null;
  const score = d.Fraud_score ?? task?.Fraud_score ?? null;
  const reasons = reviewReasons({ ...d, Fraud_verdict: verdict, Fraud_score: score }, rules);
  if (reasons.length === 0) return undefined;
  const held: HeldReview = {
    reasons: reasons.map(cleanReason),
    fraud: {
      verdict: typeof verdict === 'string' ? cleanText(verdict) : null,
      score: typeof score === 'number' || typeof score === 'string' ? (cleanValue(score) as number) : null,
    },
  };
  const reviewPath =
    watch.on_success === 'keep'
      ? null
      : await freeTarget(watch.review_dir, row.archive_rel ?? row.rel, {
          reserve: { in: places, holder: row.id },
        });
  return { review: JSON.stringify(held), reviewPath };
}

export function heldReview(row: Pick<FileRow, 'review'>): HeldReview {
  try {
    const parsed = JSON.parse(row.review ?? '') as HeldReview;
    return { reasons: Array.isArray(parsed.reasons) ? parsed.reasons : [], fraud: parsed.fraud ?? {} };
  } catch {
    return { reasons: [], fraud: { verdict: null, score: null } };
  }
}

/** The base of a file's result names: its own (recorded), else "<name>.doc-<id>" for a row from before (results.ts). */
const baseOf = (row: FileRow) => row.result_base ?? resultBase(basename(row.path), row.document_id!);

/** The review.json as written (what approval reads back). */
export interface ReviewJson {
  status: 'needs_review';
  file: string;
  source_file: string;
  /** Where the original waits (its place in the watched folder when on_success is keep). */
  original: string;
  route: string | null;
  document_id: number;
  task_id: string | null;
  held_at: string;
  rules: ReviewReason[];
  fraud: HeldReview['fraud'];
  results: string[];
  approve: string;
  /** For writing the results into output on approval, unchanged. */
  outcome: 'processed' | 'duplicate';
  sha256: string | null;
  document: DocumentData;
  /** `document` is the task answer's (results.ts, ResultJson): so is the result JSON written on approval. */
  document_from?: 'task';
  task: TaskResult | null;
  /** Values a person corrected (review-decisions.ts); `document` holds them already. */
  corrections?: unknown[];
}

/** review_dir, written like output but without its daily CSV (that one lists what reached output). */
const reviewTarget = (watch: WatchConfig) => ({ ...watch, output: watch.review_dir!, daily_csv: false });

/**
 * Writes a finished document's results: into output as always, or, for a held one, into
 * review_dir with its review.json. The review day's CSV and the original follow in `hold`.
 */
export class ReviewQueue {
  private readonly results: ResultWriter;
  private readonly csv = new DailyCsv();
  private readonly now: () => number;
  /** Places in review_dir given to originals not moved there yet (decide → hold). */
  private readonly places = new Reservations();

  constructor(results: ResultWriter, now: () => number = Date.now) {
    this.results = results;
    this.now = now;
  }

  /** decideReview, the original's place held for the file until `hold` moved it there. */
  decide(watch: WatchConfig, row: FileRow, data: DocumentData, task: TaskResult | null) {
    return decideReview(watch, row, data, task, this.places);
  }

  /** After a restart: a place a file recorded whose original may not be there yet is held for it again. */
  reservePlace(path: string, fileId: number) {
    this.places.take(path, fileId);
  }

  async write(watch: WatchConfig, row: FileRow, data: DocumentData, ctx: ResultContext): Promise<string[]> {
    if (row.review === null || !watch.review_dir) return this.results.write(watch, data, ctx);
    const files = await this.results.write(reviewTarget(watch), data, ctx);
    const held = heldReview(row);
    const review: ReviewJson = {
      status: 'needs_review',
      file: cleanText(basename(row.path)),
      source_file: row.path,
      original: row.review_path ?? row.path,
      route: row.route,
      document_id: data.document_id,
      task_id: row.task_id,
      held_at: new Date(this.now()).toISOString(),
      rules: held.reasons,
      fraud: held.fraud,
      results: files,
      // Its own path, not its name: another file of the same name may wait too.
      approve: `docex-sync approve --config <config> "${cleanText(row.review_path ?? row.path)}" (or Approve on the status page)`,
      outcome: ctx.outcome,
      sha256: ctx.sha256,
      document: data,
      ...(ctx.documentFrom ? { document_from: ctx.documentFrom } : {}),
      task: ctx.task,
    };
    const path = inside(watch.review_dir, `${baseOf({ ...row, document_id: data.document_id })}.review.json`);
    await writeAtomic(path, `${JSON.stringify(review, null, 2)}\n`);
    return [...files, path];
  }

  /**
   * The original into its place in review_dir (chosen and recorded before: a crash between the move
   * and the DB update finds it there), and the document's row in the day's review CSV (a replay
   * adds none twice).
   */
  async hold(watch: WatchConfig, row: FileRow): Promise<void> {
    if (row.review_path !== null) {
      await moveTo(row.path, row.review_path);
      this.places.release(row.review_path, row.id); // there now: the file itself holds the name
    }
    const held = heldReview(row);
    const at = new Date(this.now());
    await this.csv.append(
      inside(watch.review_dir!, `review-${localDate(at)}.csv`),
      {
        document_id: row.document_id,
        source_file: row.path,
        document_name: csvSafe(cleanText(basename(row.path))),
        archived_to: row.review_path ?? row.path,
        outcome: 'needs review',
        written_at: at.toISOString(),
        fraud_verdict: held.fraud.verdict === null ? null : csvSafe(String(held.fraud.verdict)),
        fraud_score: held.fraud.score,
      },
      [
        ['route', row.route === null ? '' : csvSafe(row.route)],
        ['rules', [...new Set(held.reasons.map((r) => r.rule))].join(', ')],
        ['reasons', csvSafe(held.reasons.map((r) => r.message).join('; '))],
        // Filled by a decision's row (review-decisions.ts, appendDecision).
        ['corrections', ''],
      ],
      dialectFor(watch.csv_style ?? 'standard', undefined),
    );
  }

  /**
   * An approved document's results into output (rewritten from its review.json, so output's daily
   * CSV gets its row and the JSON says where the original goes), then the review copies removed,
   * review.json last. Returns where the original is planned to go and the files written; nothing
   * when an earlier try got as far as removing the review.json (its results are in output).
   * Only this file's own review files are read or removed: a review.json of another file at its
   * names (two files were given one name before each got its own) is left alone, and this file waits
   * with the reason.
   */
  async release(
    watch: WatchConfig,
    row: FileRow,
    plannedArchive: () => Promise<string | null>,
  ): Promise<{ planned: string | null; files: string[] } | undefined> {
    const base = baseOf(row);
    const reviewJson = inside(watch.review_dir!, `${base}.review.json`);
    const lost = `put its original (${row.review_path ?? row.path}) into the watched folder again to have it processed anew`;
    let review: ReviewJson;
    try {
      review = JSON.parse(await readFile(reviewJson, 'utf8')) as ReviewJson;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        const there = await identityOf(watch, base);
        if (there && there.documentId === row.document_id && there.source === row.path) return undefined;
        throw new Error(
          `${reviewJson} is gone, and ${inside(watch.output, base)}.* are not this file's results; they cannot be written without it: restore it, or ${lost}`,
        );
      }
      throw new Error(
        `${reviewJson} cannot be read (${(error as Error).message}); it holds the document's data for its results: restore it, or approve after a rerun`,
        { cause: error },
      );
    }
    if (review.source_file !== row.path)
      throw new Error(
        `${reviewJson} is the review of another file (${review.source_file}), not of ${row.path}: it is left alone. This file's own review was written over (both were given one name); ${lost}`,
      );
    const planned = await plannedArchive();
    const files = await this.results.write(watch, review.document, {
      source: row.path,
      archivedTo: planned,
      sha256: review.sha256,
      task: review.task,
      outcome: review.outcome,
      sourceName: basename(row.path),
      base: row.result_base ?? undefined,
      ...(review.corrections?.length ? { corrections: review.corrections } : {}),
      ...(review.document_from ? { documentFrom: review.document_from } : {}),
    });
    for (const suffix of RESULT_SUFFIXES)
      await rm(inside(watch.review_dir!, `${base}${suffix}`), { force: true });
    await rm(reviewJson, { force: true });
    return { planned, files };
  }
}

/** A cell a spreadsheet would run as a formula (=, +, -, @ first) is quoted with a leading '. */
export const csvSafe = (text: string) => (/^[=+\-@\t\r]/.test(text) ? `'${text}` : text);
