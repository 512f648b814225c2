/**
 * Which extracted documents need a person to look at them, and why. One implementation for the n8n
 * node's "Needs Review" output, its trigger filter and the daemon's review queue. Pure: data in,
 * reasons out. Each field's confidence is read by field-confidences.ts.
 */
import { lineItemsOf } from './fields.ts';
import {
  isObject,
  PERCENT_MARK,
  rawNumber,
  readFieldConfidences,
  type FieldConfidence,
  type Obj,
  type ReviewData,
} from './field-confidences.ts';

export { readFieldConfidences, type FieldConfidence, type ReviewData };

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
