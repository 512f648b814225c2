/**
 * Which extracted documents need a person to look at them, and why. One implementation for the n8n
 * node's "Needs Review" output, its trigger filter and the daemon's review queue. Pure: data in,
 * reasons out.
 *
 * The inner keys of confidence entries are "not shown" in the API document, so
 * `readFieldConfidences` accepts every plausible shape and puts confidences on one 0..1 scale
 * (docs/decisions.md, "Confidence of general fields").
 */
import { CONFIDENCE_KEYS, lineItemsOf, readFieldValue } from './fields.ts';
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

/** One general field's own rules, besides (or instead of) the document-wide ones. */
export interface FieldRule {
  /** 0..1: replaces `minConfidence` for this field (0: its confidence never holds the document). */
  minConfidence?: number;
  /** It must be present with a non-empty value (as if in `requiredFields`). */
  required?: boolean;
  /** It may be missing or empty: then its confidence does not count (a value it has is still checked). */
  optional?: boolean;
}

export interface ReviewRules {
  /** 0..1: a general field whose confidence is below it needs review; one without confidence does not. */
  minConfidence?: number;
  /** General fields that must be present with a non-empty value. */
  requiredFields?: string[];
  /**
   * Rules of single fields by name (matched exactly, else without case and surrounding blanks):
   * their own minimum confidence, required or optional. Made by `readReviewRules` (review-rules.ts).
   */
  fields?: Record<string, FieldRule>;
  fraud?: {
    /** A verdict that is present and not one of `cleanVerdicts` needs review. */
    notClean?: boolean;
    /** 0..1 (a 0..100 score is read as a percentage): a score above it needs review. */
    maxScore?: number;
    /** Verdicts read as clean, compared without case and punctuation. Default: DEFAULT_CLEAN_VERDICTS. */
    cleanVerdicts?: string[];
  };
  /** Opt-in: the sum of a line field must match a general field, within `tolerance` (default 0.01). */
  lineTotal?: { lineField: string; totalField: string; tolerance?: number };
}

export type ReviewRule = 'minConfidence' | 'requiredFields' | 'fraud' | 'lineTotal';

export interface ReviewReason {
  rule: ReviewRule;
  field?: string;
  /**
   * What was found: the field's value (minConfidence, requiredFields: absent when missing), the
   * verdict or the score (fraud), the sum of the line amounts (lineTotal).
   */
  value?: unknown;
  /** minConfidence: the field's confidence (0..1). lineTotal: the total field's amount. */
  found?: number;
  /** The limit it was held to: minConfidence, maxScore, the line-total tolerance. */
  threshold?: number;
  message: string;
}

/** The emulator says LOW_RISK for a clean document; other services say clean, genuine, pass... */
export const DEFAULT_CLEAN_VERDICTS = [
  'clean',
  'low risk',
  'low',
  'no risk',
  'none',
  'no fraud',
  'not fraud',
  'not fraudulent',
  'genuine',
  'authentic',
  'legitimate',
  'valid',
  'ok',
  'pass',
  'passed',
] as const;

export const DEFAULT_LINE_TOTAL_TOLERANCE = 0.01;

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * A number or a numeric string; anything else is no confidence. "87%" is 87 marked as a
 * percentage: PERCENT_MARK is added so the document is read on 0..100 (see `scaled`).
 */
function rawNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'string') return undefined;
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*(%?)\s*$/.exec(v);
  if (!m) return undefined;
  return m[2] === '%' ? Number(m[1]) + PERCENT_MARK : Number(m[1]);
}

/** Far above any real score, so a marked percentage is told apart and forces the 0..100 scale. */
const PERCENT_MARK = 1e6;

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

const normalName = (s: string) => s.trim().toLowerCase();

/** The field of that name: exactly, else ignoring case and surrounding blanks. */
function findField<T extends { name: string }>(fields: T[], name: string): T | undefined {
  return fields.find((f) => f.name === name) ?? fields.find((f) => normalName(f.name) === normalName(name));
}

/** null, undefined, blank strings, [] and {} carry nothing a person could use. */
export function isEmptyValue(v: unknown): boolean {
  if (v === null || v === undefined) return true;
  if (typeof v === 'string') return v.trim() === '';
  if (Array.isArray(v)) return v.length === 0;
  if (isObject(v)) return Object.keys(v).length === 0;
  return false;
}

/**
 * An amount as a number: 12.5, "12.50", "1,234.50", "1.234,50", "€ 1 234,50", "-3.00".
 * The last of '.' and ',' is the decimal mark when both occur; a lone ',' followed by one or two
 * digits is a decimal mark, otherwise a thousands separator.
 */
export function parseAmount(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v !== 'string') return undefined;
  let s = v.replace(/[^\d.,-]/g, '');
  if (!/\d/.test(s)) return undefined;
  const lastDot = s.lastIndexOf('.');
  const lastComma = s.lastIndexOf(',');
  if (lastDot >= 0 && lastComma >= 0) {
    s = lastComma > lastDot ? s.replace(/\./g, '').replace(',', '.') : s.replace(/,/g, '');
  } else if (lastComma >= 0) {
    s = /,\d{1,2}$/.test(s) && s.indexOf(',') === lastComma ? s.replace(',', '.') : s.replace(/,/g, '');
  }
  const n = Number(s);
  return Number.isFinite(n) ? n : undefined;
}

const verdictKey = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, ' ')
    .trim();

const fmt = (n: number) => String(Math.round(n * 10000) / 10000);

function fraudReasons(d: Obj, rule: NonNullable<ReviewRules['fraud']>): ReviewReason[] {
  const reasons: ReviewReason[] = [];
  const verdict = typeof d.Fraud_verdict === 'string' && d.Fraud_verdict.trim() ? d.Fraud_verdict : null;
  if (rule.notClean && verdict !== null) {
    const clean = new Set((rule.cleanVerdicts ?? DEFAULT_CLEAN_VERDICTS).map(verdictKey));
    if (!clean.has(verdictKey(verdict))) {
      reasons.push({
        rule: 'fraud',
        value: verdict,
        message: `fraud verdict is "${verdict}", not a clean one`,
      });
    }
  }
  const raw = rawNumber(d.Fraud_score);
  if (rule.maxScore !== undefined && raw !== undefined) {
    const score =
      raw >= PERCENT_MARK / 2 ? (raw - PERCENT_MARK) / 100 : raw > 1 && raw <= 100 ? raw / 100 : raw;
    if (score > rule.maxScore) {
      reasons.push({
        rule: 'fraud',
        value: score,
        threshold: rule.maxScore,
        message: `fraud score ${fmt(score)} is above ${fmt(rule.maxScore)}`,
      });
    }
  }
  return reasons;
}

function lineTotalReasons(
  data: ReviewData,
  general: FieldConfidence[],
  rule: NonNullable<ReviewRules['lineTotal']>,
): ReviewReason[] {
  const tolerance = rule.tolerance ?? DEFAULT_LINE_TOTAL_TOLERANCE;
  const total = findField(general, rule.totalField);
  const expected = total === undefined ? undefined : parseAmount(total.value);
  if (expected === undefined) {
    const why = total === undefined ? 'is missing' : `is not a number (${JSON.stringify(total.value)})`;
    return [
      {
        rule: 'lineTotal',
        field: rule.totalField,
        ...(total === undefined ? {} : { value: total.value }),
        message: `total field ${rule.totalField} ${why}`,
      },
    ];
  }
  const lines = lineItemsOf(data as Parameters<typeof lineItemsOf>[0]);
  let sum = 0;
  for (const [i, line] of lines.entries()) {
    const key =
      rule.lineField in line
        ? rule.lineField
        : Object.keys(line).find((k) => normalName(k) === normalName(rule.lineField));
    if (key === undefined || isEmptyValue(line[key]!.value)) continue;
    const amount = parseAmount(line[key]!.value);
    if (amount === undefined) {
      return [
        {
          rule: 'lineTotal',
          field: rule.lineField,
          value: line[key]!.value,
          message: `line ${i + 1}: ${rule.lineField} is not a number (${JSON.stringify(line[key]!.value)})`,
        },
      ];
    }
    sum += amount;
  }
  if (Math.abs(sum - expected) <= tolerance + 1e-9) return [];
  return [
    {
      rule: 'lineTotal',
      field: rule.totalField,
      value: Number(fmt(sum)),
      found: expected,
      threshold: tolerance,
      message:
        `sum of ${rule.lineField} over ${lines.length} line(s) is ${fmt(sum)}, ` +
        `${rule.totalField} is ${fmt(expected)} (tolerance ${fmt(tolerance)})`,
    },
  ];
}

/**
 * Why a document needs review under these rules; empty when it does not. Rules left out do not
 * apply. Reasons come in rule order: minConfidence (a field's own minimum, else the document-wide
 * one), requiredFields (the list, then the fields marked required), fraud, lineTotal.
 */
export function reviewReasons(data: ReviewData, rules: ReviewRules): ReviewReason[] {
  const d = (isObject(data) ? data : {}) as Obj;
  const general = readFieldConfidences(data);
  const reasons: ReviewReason[] = [];
  const own = Object.entries(rules.fields ?? {}).map(([name, rule]) => ({ name, ...rule }));
  for (const f of general) {
    const rule = findField(own, f.name);
    const threshold = rule?.minConfidence ?? rules.minConfidence;
    if (threshold === undefined || f.confidence === undefined) continue;
    // An optional field the document does not carry: its (low) confidence is that of nothing.
    if (rule?.optional === true && isEmptyValue(f.value)) continue;
    if (f.confidence < threshold) {
      // A field's own minimum is named as such, so the reviewer knows which rule to look at.
      const limit =
        rule?.minConfidence === undefined ? fmt(threshold) : `${fmt(threshold)}, ${f.name}'s own minimum`;
      reasons.push({
        rule: 'minConfidence',
        field: f.name,
        value: f.value,
        found: f.confidence,
        threshold,
        message: `${f.name}: confidence ${fmt(f.confidence)} is below ${limit}`,
      });
    }
  }
  const required = [
    ...(rules.requiredFields ?? []),
    ...own.filter((r) => r.required === true).map((r) => r.name),
  ].filter((name, i, all) => all.findIndex((n) => normalName(n) === normalName(name)) === i);
  for (const name of required) {
    if (name.trim() === '') continue;
    const f = findField(general, name);
    if (f === undefined) reasons.push({ rule: 'requiredFields', field: name, message: `${name} is missing` });
    else if (isEmptyValue(f.value)) {
      reasons.push({ rule: 'requiredFields', field: name, value: f.value, message: `${name} is empty` });
    }
  }
  if (rules.fraud) reasons.push(...fraudReasons(d, rules.fraud));
  if (rules.lineTotal) reasons.push(...lineTotalReasons(data, general, rules.lineTotal));
  return reasons;
}
