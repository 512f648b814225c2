/**
 * The confidence of each general field, read from any plausible shape of an answer. The inner keys
 * of confidence entries are "not shown" in the API document, so every plausible shape is accepted
 * and confidences are put on one 0..1 scale (docs/decisions.md, "Confidence of general fields").
 * Pure: data in, fields out.
 */
import { CONFIDENCE_KEYS, readFieldValue } from './fields.ts';
import type { DocumentData, TaskResult } from './schemas.ts';

export interface FieldConfidence {
  name: string;
  value: unknown;
  /** 0..1; absent when the answer gives none (or one that is no probability). */
  confidence?: number;
}

/** A document-data answer, a task result, or the two merged: only the keys read here matter. */
export type ReviewData =
  | (Partial<DocumentData> & { Fraud_verdict?: unknown; Fraud_score?: unknown })
  | Partial<TaskResult>
  | Record<string, unknown>;

export type Obj = Record<string, unknown>;
export const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A number or a numeric string; anything else is no confidence. "87%" is 87 marked as a
 * percentage: PERCENT_MARK is added so the document is read on 0..100 (see `scaled`).
 */
export function rawNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'string') return undefined;
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*(%?)\s*$/.exec(v);
  if (!m) return undefined;
  return m[2] === '%' ? Number(m[1]) + PERCENT_MARK : Number(m[1]);
}

/** Far above any real score, so a marked percentage is told apart and forces the 0..100 scale. */
export const PERCENT_MARK = 1e6;

/** The raw confidence an entry carries under any of the known keys, before scaling. */
function entryConfidence(entry: unknown): number | undefined {
  if (Array.isArray(entry)) return readFieldValue(entry).confidence ?? undefined;
  if (!isObject(entry)) return undefined;
  const key = CONFIDENCE_KEYS.find((k) => k in entry);
  return key === undefined ? undefined : rawNumber(entry[key]);
}

const CONFIDENCE_MAP_KEYS = ['confidences', 'confidence', 'confidence_scores', 'scores'];
const VALUE_MAP_KEYS = ['values', 'value', 'fields'];
const NAME_LIST_KEYS = ['names', 'field_names', 'fields', 'keys'];

/**
 * General_fields as { values: {...} | [...], confidences: {...} | [...], names?: [...] } (the
 * values and their confidences side by side instead of one entry per field). Only taken when the
 * object has nothing but such keys, so a document with general fields named "values" and
 * "confidences" next to others is still read field by field.
 */
function sideBySide(fields: Obj): FieldConfidence[] | undefined {
  const keys = Object.keys(fields);
  const valueKey = VALUE_MAP_KEYS.find((k) => k in fields);
  const confidenceKey = CONFIDENCE_MAP_KEYS.find((k) => k in fields);
  const nameKey = NAME_LIST_KEYS.find((k) => k !== valueKey && Array.isArray(fields[k]));
  if (valueKey === undefined || confidenceKey === undefined) return undefined;
  if (keys.some((k) => k !== valueKey && k !== confidenceKey && k !== nameKey)) return undefined;
  const values = fields[valueKey];
  const confidences = fields[confidenceKey];
  if (isObject(values)) {
    const byName = isObject(confidences) ? confidences : {};
    const list = Array.isArray(confidences) ? confidences : [];
    return Object.entries(values).map(([name, value], i) =>
      withConfidence(name, value, name in byName ? rawNumber(byName[name]) : rawNumber(list[i])),
    );
  }
  if (Array.isArray(values) && nameKey !== undefined) {
    const names = fields[nameKey] as unknown[];
    const byName = isObject(confidences) ? confidences : {};
    const list = Array.isArray(confidences) ? confidences : [];
    return names.flatMap((name, i) =>
      typeof name === 'string'
        ? [withConfidence(name, values[i], name in byName ? rawNumber(byName[name]) : rawNumber(list[i]))]
        : [],
    );
  }
  return undefined;
}

const withConfidence = (name: string, value: unknown, confidence: number | undefined): FieldConfidence =>
  confidence === undefined ? { name, value } : { name, value, confidence };

/** Top-level maps of confidences next to General_fields, by name. */
const SEPARATE_MAP_KEYS = [
  'General_fields_confidence',
  'General_fields_confidences',
  'General_fields_confidence_scores',
  'Confidence_scores',
  'confidence_scores',
  'confidences',
];

/**
 * Scale a document's raw confidences to 0..1: all of them on 0..100 if any is above 1 (or written
 * with %), so a 1 among 80s and 95s reads as 1 %, not as certain.
 */
function scaled(fields: FieldConfidence[]): FieldConfidence[] {
  const raw = fields.flatMap((f) => (f.confidence === undefined ? [] : [f.confidence]));
  const divisor = raw.some((c) => c > 1) ? 100 : 1;
  return fields.map((f) => {
    if (f.confidence === undefined) return f;
    const unmarked = f.confidence >= PERCENT_MARK / 2 ? f.confidence - PERCENT_MARK : f.confidence;
    const c = unmarked / divisor;
    // Outside 0..1 after scaling (negative, or above 100) it is no probability: say nothing.
    if (c < 0 || c > 1) return { name: f.name, value: f.value };
    return { ...f, confidence: c };
  });
}

/**
 * The general fields of a document-data answer (or a task result) with their confidence on 0..1.
 * Reads General_fields entry by entry ({value, confidence|score|probability|...}, [value, 0..1], a
 * bare value), General_fields side by side ({values, confidences}), General_fields_list when
 * General_fields is empty; a confidence missing there is taken from a separate map
 * (General_fields_confidence, Confidence_scores, ...) or from General_fields_list by name.
 */
export function readFieldConfidences(data: ReviewData): FieldConfidence[] {
  const d = (isObject(data) ? data : {}) as Obj;
  const general = d.General_fields;
  let fields: FieldConfidence[];
  const side = isObject(general) ? sideBySide(general) : undefined;
  if (side) fields = side;
  else if (isObject(general) && Object.keys(general).length > 0) {
    fields = Object.entries(general).map(([name, entry]) =>
      withConfidence(name, readFieldValue(entry).value, entryConfidence(entry)),
    );
  } else {
    const list = Array.isArray(d.General_fields_list) ? (d.General_fields_list as unknown[]) : [];
    fields = (list.filter(isNamed) as Obj[]).map((item) =>
      withConfidence(nameOf(item), readFieldValue(item).value, entryConfidence(item)),
    );
  }
  const fallback = confidenceFallback(d);
  return scaled(
    fields.map((f) =>
      f.confidence === undefined && fallback.has(f.name)
        ? withConfidence(f.name, f.value, fallback.get(f.name))
        : f,
    ),
  );
}

const nameOf = (item: Obj) => (item.name ?? item.field_name ?? item.label) as string;
const isNamed = (item: unknown) => isObject(item) && typeof nameOf(item) === 'string';

/** Confidences by field name from a separate map or from General_fields_list. */
function confidenceFallback(d: Obj): Map<string, number> {
  const out = new Map<string, number>();
  for (const key of SEPARATE_MAP_KEYS) {
    const map = d[key];
    if (!isObject(map)) continue;
    for (const [name, v] of Object.entries(map)) {
      const c = rawNumber(v) ?? entryConfidence(v);
      if (c !== undefined && !out.has(name)) out.set(name, c);
    }
  }
  if (Array.isArray(d.General_fields_list)) {
    for (const item of d.General_fields_list.filter(isNamed) as Obj[]) {
      const c = entryConfidence(item);
      if (c !== undefined && !out.has(nameOf(item))) out.set(nameOf(item), c);
    }
  }
  return out;
}
