/**
 * Reading extracted values. The inner keys of value and confidence entries are "not shown" in the
 * API document; these readers accept the plausible variants (docs/decisions.md).
 */
import type { DocumentData, TaskResult } from './schemas.ts';

export interface FieldValue {
  value: unknown;
  confidence: number | null;
}
export interface NamedFieldValue extends FieldValue {
  name: string;
}

const VALUE_KEYS = ['value', 'val', 'text', 'content', 'extracted_value'] as const;
export const CONFIDENCE_KEYS = ['confidence', 'confidence_score', 'score', 'conf', 'probability'] as const;

function toConfidence(v: unknown): number | null {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) ? n : null;
}

/** { value, confidence } | { value, confidence_score } | [value, confidence 0..1] | a bare value. */
export function readFieldValue(entry: unknown): FieldValue {
  // [value, confidence] only when the second item is a probability: [12.5, 3] is a list of two values.
  if (Array.isArray(entry) && entry.length === 2 && typeof entry[0] !== 'object') {
    const confidence = toConfidence(entry[1]);
    if (confidence !== null && confidence >= 0 && confidence <= 1) return { value: entry[0], confidence };
  }
  if (entry && typeof entry === 'object' && !Array.isArray(entry)) {
    const o = entry as Record<string, unknown>;
    const valueKey = VALUE_KEYS.find((k) => k in o);
    const confidenceKey = CONFIDENCE_KEYS.find((k) => k in o);
    if (valueKey !== undefined || confidenceKey !== undefined) {
      return {
        value: valueKey === undefined ? null : o[valueKey],
        confidence: confidenceKey === undefined ? null : toConfidence(o[confidenceKey]),
      };
    }
  }
  return { value: entry ?? null, confidence: null };
}

type WithFields = Pick<DocumentData, 'General_fields' | 'Line_fields'> & {
  General_fields_list?: unknown[] | null;
};

/** General fields as a list, from General_fields (object) or else General_fields_list. */
export function generalFieldsOf(data: WithFields | TaskResult): NamedFieldValue[] {
  const fields = data.General_fields;
  if (fields && typeof fields === 'object' && Object.keys(fields).length > 0) {
    return Object.entries(fields).map(([name, entry]) => ({ name, ...readFieldValue(entry) }));
  }
  const list = 'General_fields_list' in data ? data.General_fields_list : undefined;
  if (!Array.isArray(list)) return [];
  return list.flatMap((item) => {
    if (!item || typeof item !== 'object') return [];
    const o = item as Record<string, unknown>;
    const name = o.name ?? o.field_name ?? o.label;
    return typeof name === 'string' ? [{ name, ...readFieldValue(o) }] : [];
  });
}

/**
 * The line items as a table read a line at a time: the columns in order of first appearance (the
 * keys lineItemsOf's lines have, in the order they come), how many lines, and line `i` as
 * lineItemsOf gives it. Nothing is made for every line at once: a document may have 200,000 lines,
 * and their results are written a slice at a time.
 */
export interface LineItemTable {
  names: string[];
  count: number;
  line(i: number): Record<string, FieldValue>;
}

/**
 * Line items as rows. Accepts { field: [entry, ...] } (one array per field, index = line),
 * { field: { values: [...], confidences: [...] } }, and a list of line objects [{ field: entry }].
 */
export function lineItemTable(data: WithFields | TaskResult): LineItemTable {
  const lines = data.Line_fields as unknown;
  if (Array.isArray(lines)) {
    const objects = lines.filter((l): l is object => Boolean(l) && typeof l === 'object');
    const names = new Set<string>();
    for (const line of objects) for (const key of Object.keys(line)) names.add(key);
    return {
      names: [...names],
      count: objects.length,
      line: (i) => Object.fromEntries(Object.entries(objects[i]!).map(([k, v]) => [k, readFieldValue(v)])),
    };
  }
  if (!lines || typeof lines !== 'object') return { names: [], count: 0, line: () => ({}) };
  /** Each column: how many lines it has, and its entry of line i. */
  const columns = Object.entries(lines as Record<string, unknown>).map(
    ([name, entry]): { name: string; length: number; at: (i: number) => FieldValue } => {
      if (Array.isArray(entry)) return { name, length: entry.length, at: (i) => readFieldValue(entry[i]) };
      if (entry && typeof entry === 'object' && Array.isArray((entry as { values?: unknown }).values)) {
        const { values, confidences } = entry as { values: unknown[]; confidences?: unknown };
        const conf = Array.isArray(confidences) ? confidences : [];
        return {
          name,
          length: values.length,
          at: (i) => ({ value: values[i], confidence: toConfidence(conf[i]) }),
        };
      }
      return { name, length: 1, at: () => readFieldValue(entry) };
    },
  );
  const count = Math.max(0, ...columns.map((c) => c.length));
  return {
    // The keys of line 0, which has every column that has lines (integer-like names first, as in
    // any object's keys).
    names: Object.keys(Object.fromEntries(columns.filter((c) => c.length > 0).map((c) => [c.name, 0]))),
    count,
    line: (i) => Object.fromEntries(columns.flatMap((c) => (i < c.length ? [[c.name, c.at(i)]] : []))),
  };
}

/** Line items as rows (lineItemTable, every line made at once). */
export function lineItemsOf(data: WithFields | TaskResult): Array<Record<string, FieldValue>> {
  const table = lineItemTable(data);
  return Array.from({ length: table.count }, (_, i) => table.line(i));
}
