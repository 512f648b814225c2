/**
 * What a person's decision about a held document does to its files in review_dir (docs/daemon.md,
 * "Review queue"): a correction rewrites its review.json (the document's data, from which approval
 * writes the results) with the corrected values, the service's value and confidence kept beside each;
 * a rejection removes its review copies; each decision adds a row to the day's review CSV.
 *
 * Only the held file's own review files are read or written: the review.json must name the file as
 * its source (two files once shared names; see outputs/review.ts, release).
 */
import { readFile, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { readFieldValue, type DocumentData } from '@docex/shared';
import type { WatchConfig } from '../config/config.ts';
import { inside, writeAtomic } from '../common/files.ts';
import type { FileRow } from '../domain/lifecycle.ts';
import { cleanText, csvSafe, heldReview, type ReviewJson } from './review.ts';
import { RESULT_SUFFIXES, resultBase } from './result-set.ts';
import { DailyCsv, dialectFor, localDate } from './results.ts';

/** A value a person corrected, as the result JSON and review.json carry it. */
export interface Correction {
  field: string;
  /** The value before this correction (the service's, or an earlier correction's). */
  from: unknown;
  to: unknown;
  /** What the service said, whatever was corrected since. */
  service_value: unknown;
  service_confidence: number | null;
  by: string;
  at: string;
}

/** A document held by a fraud rule: Approve all leaves it out unless ticked. */
export function fraudFlagged(row: Pick<FileRow, 'review'>): boolean {
  return heldReview(row).reasons.some((r) => r.rule === 'fraud');
}

/** The base of a held file's result names (outputs/review.ts, baseOf). */
const baseOf = (row: FileRow) => row.result_base ?? resultBase(basename(row.path), row.document_id!);

export const reviewJsonPath = (watch: WatchConfig, row: FileRow) =>
  inside(watch.review_dir!, `${baseOf(row)}.review.json`);

/** The held file's own review.json, or why it cannot be read. */
export async function readOwnReview(
  watch: WatchConfig,
  row: FileRow,
): Promise<{ review: ReviewJson } | { problem: string }> {
  const path = reviewJsonPath(watch, row);
  let review: ReviewJson;
  try {
    review = JSON.parse(await readFile(path, 'utf8')) as ReviewJson & { corrections?: Correction[] };
  } catch (error) {
    return { problem: `${path} cannot be read: ${(error as Error).message}` };
  }
  if (review.source_file !== row.path)
    return { problem: `${path} is the review of another file (${review.source_file}), not of ${row.path}` };
  return { review };
}

/**
 * A typed text as the field's value: a number when the service's value was one and the text reads as
 * one (a decimal comma accepted), empty as null, else the text (control characters out, capped).
 */
export function typedValue(text: string, before: unknown): unknown {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  if (typeof before === 'number') {
    const n = Number(trimmed.replace(/\s/g, '').replace(/^(-?\d+),(\d+)$/, '$1.$2'));
    if (Number.isFinite(n)) return n;
  }
  return cleanText(trimmed);
}

type Entry = Record<string, unknown>;
const asEntry = (v: unknown): Entry => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Entry) : {});
const nameOf = (item: unknown) => {
  const o = asEntry(item);
  return o.name ?? o.field_name ?? o.label;
};

/**
 * The document with `values` (field name -> typed text) put into its general fields, in
 * General_fields and in General_fields_list alike (the service may send either or both): each
 * corrected entry becomes `{ value, confidence: 1, service_value, service_confidence, corrected_by }`
 * (a value a person typed is certain as far as the rules go; the service's stays beside it, kept from
 * the first correction on). A field the document lacks (a required one the service missed) is added.
 * Pure: returns the new document and the corrections made (an unchanged value makes none).
 */
export function correctDocument(
  document: DocumentData,
  values: Record<string, string>,
  by: string,
  at: string,
): { document: DocumentData; corrections: Correction[] } {
  const corrections: Correction[] = [];
  const hasObject = Boolean(document.General_fields && typeof document.General_fields === 'object');
  const list = Array.isArray(document.General_fields_list) ? [...document.General_fields_list] : undefined;
  const general: Record<string, unknown> = { ...(document.General_fields ?? {}) };
  for (const [field, text] of Object.entries(values)) {
    const index = list ? list.findIndex((i) => nameOf(i) === field) : -1;
    const entry: unknown = hasObject || !list ? general[field] : list[index];
    const current = readFieldValue(entry);
    const old = asEntry(entry);
    const corrected = 'service_value' in old;
    const serviceValue = corrected ? old.service_value : current.value;
    const serviceConfidence = corrected
      ? ((old.service_confidence as number | null) ?? null)
      : current.confidence;
    const to = typedValue(text, serviceValue);
    if (to === current.value) continue;
    const next: Entry = {
      value: to,
      confidence: 1,
      service_value: serviceValue,
      service_confidence: serviceConfidence,
      corrected_by: by,
    };
    if (hasObject || !list) general[field] = { ...(Array.isArray(entry) ? {} : old), ...next };
    if (list) {
      if (index >= 0) list[index] = { ...asEntry(list[index]), ...next };
      else list.push({ name: field, ...next });
    }
    corrections.push({
      field,
      from: current.value,
      to,
      service_value: serviceValue,
      service_confidence: serviceConfidence,
      by,
      at,
    });
  }
  return {
    document: {
      ...document,
      ...(hasObject || !list ? { General_fields: general } : {}),
      ...(list ? { General_fields_list: list } : {}),
    },
    corrections,
  };
}

/** What became of a correction when the document was extracted again (a rerun). */
export interface Reapplied {
  /** Put back over the new extraction; `reading` is what the service reads now. */
  kept: Array<{ correction: Correction; reading: unknown }>;
  /** The new extraction has no such field (renamed or removed from the template). */
  dropped: Correction[];
}

/**
 * A person's corrections (the result JSON's list, oldest first) put back over a new extraction of
 * the document: each field's last correction wins over the service's new reading, which is kept
 * beside it; a field the new extraction lacks is dropped, unless the service never had it (the
 * person added a required field the service missed: added again).
 */
export function reapplyCorrections(
  data: DocumentData,
  corrections: Correction[],
): { document: DocumentData; corrections: Correction[] } & Reapplied {
  const last = new Map(corrections.map((c) => [c.field, c]));
  const general = asEntry(data.General_fields);
  const list = Array.isArray(data.General_fields_list) ? data.General_fields_list : [];
  let document = data;
  const outcome: Reapplied = { kept: [], dropped: [] };
  for (const c of last.values()) {
    const entry = c.field in general ? general[c.field] : list.find((i) => nameOf(i) === c.field);
    const present = entry !== undefined;
    if (!present && c.service_value !== null && c.service_value !== undefined) {
      outcome.dropped.push(c);
      continue;
    }
    const reading = present ? readFieldValue(entry).value : null;
    ({ document } = correctDocument(document, { [c.field]: c.to === null ? '' : String(c.to) }, c.by, c.at));
    outcome.kept.push({ correction: c, reading });
  }
  const dropped = new Set(outcome.dropped.map((c) => c.field));
  return { document, corrections: corrections.filter((c) => !dropped.has(c.field)), ...outcome };
}

/** Writes the corrected document into the held file's review.json (its corrections added to earlier ones). */
export async function writeCorrections(
  watch: WatchConfig,
  row: FileRow,
  review: ReviewJson,
  document: DocumentData,
  corrections: Correction[],
): Promise<void> {
  const before = (review as ReviewJson & { corrections?: Correction[] }).corrections ?? [];
  const next = { ...review, document, corrections: [...before, ...corrections] };
  await writeAtomic(reviewJsonPath(watch, row), `${JSON.stringify(next, null, 2)}\n`);
}

/** A rejected file's review copies (results and review.json) are removed; only its own. */
export async function removeReviewCopies(watch: WatchConfig, row: FileRow): Promise<void> {
  const own = await readOwnReview(watch, row);
  if ('problem' in own) return;
  const base = baseOf(row);
  for (const suffix of RESULT_SUFFIXES)
    await rm(inside(watch.review_dir!, `${base}${suffix}`), { force: true });
  await rm(reviewJsonPath(watch, row), { force: true });
}

const decisions = new DailyCsv();

/**
 * The decision as a row of the day's review CSV (beside the rows of documents held that day):
 * outcome approved / approved, corrected / rejected, the reason or the corrections.
 */
export async function appendDecision(
  watch: WatchConfig,
  row: FileRow,
  decision: {
    outcome: 'approved' | 'approved, corrected' | 'rejected';
    by: string;
    reason?: string;
    corrections?: Correction[];
  },
  now: number,
): Promise<void> {
  const held = heldReview(row);
  const at = new Date(now);
  const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v ?? null));
  await decisions.append(
    inside(watch.review_dir!, `review-${localDate(at)}.csv`),
    {
      document_id: row.document_id,
      source_file: row.path,
      document_name: csvSafe(cleanText(basename(row.path))),
      archived_to: row.review_path ?? row.path,
      outcome: `${decision.outcome} by ${csvSafe(cleanText(decision.by, 80))}`,
      written_at: at.toISOString(),
      fraud_verdict: held.fraud.verdict === null ? null : csvSafe(String(held.fraud.verdict)),
      fraud_score: held.fraud.score,
    },
    [
      ['route', row.route === null ? '' : csvSafe(row.route)],
      ['rules', [...new Set(held.reasons.map((r) => r.rule))].join(', ')],
      ['reasons', csvSafe(decision.reason ?? held.reasons.map((r) => r.message).join('; '))],
      [
        'corrections',
        csvSafe(
          (decision.corrections ?? []).map((c) => `${c.field}: ${show(c.from)} -> ${show(c.to)}`).join('; '),
        ),
      ],
    ],
    dialectFor(watch.csv_style ?? 'standard', undefined),
    { again: true },
  );
}
