/**
 * Simplify: a document's extracted data as plain values, the shape most workflows want.
 *
 *   { document_id, document_name, <general field>: value, ..., line_items: [{ <line field>: value }],
 *     fraud: { verdict, score } }
 *
 * The inner keys of the value entries are "not shown" in the API document; the core's readers
 * (shared/src/core/fields.ts) accept the plausible shapes ({value, confidence}, [value, confidence],
 * a bare value; General_fields or General_fields_list; Line_fields by column or by row). Confidence
 * scores are left out unless "Include Confidence" is on: then `confidence: { <general field>: 0..1 }`
 * (the core's readFieldConfidences, one 0..1 scale). A general field named like one of the fixed keys
 * comes out as `field_<name>`, so it never hides the document's own ID or name.
 */
import type { IDataObject, INodeProperties } from 'n8n-workflow';
import {
  generalFieldsOf,
  lineItemsOf,
  readFieldConfidences,
  type DocumentData,
  type TaskResult,
} from '@docex/shared';

export const SIMPLIFY: INodeProperties = {
  displayName: 'Simplify',
  name: 'simplify',
  type: 'boolean',
  default: true,
  description: 'Whether to return a simplified version of the response instead of the raw data',
};

/** Option of Extract and Get Data (Options collection): keep each general field's confidence. */
export const INCLUDE_CONFIDENCE: INodeProperties = {
  displayName: 'Include Confidence',
  name: 'includeConfidence',
  type: 'boolean',
  default: false,
  description:
    'Whether the simplified output keeps the confidence (0 to 1) of each general field, under "confidence"',
};

const FIXED_KEYS = new Set([
  'document_id',
  'document_name',
  'line_items',
  'fraud',
  'status',
  'status_message',
  'error',
]);

type ExtractedData = (Partial<DocumentData> | TaskResult) & {
  Fraud_verdict?: unknown;
  Fraud_score?: unknown;
};

/** Whether the data carries extracted fields at all (a task result may leave them to fetch_document_data). */
export const hasFields = (data: ExtractedData) =>
  Boolean(
    data.General_fields ??
    (data as { General_fields_list?: unknown }).General_fields_list ??
    data.Line_fields,
  );

export function simplifyDocument(
  data: ExtractedData,
  options: { includeConfidence?: boolean } = {},
): IDataObject {
  const out: IDataObject = {
    document_id: data.document_id ?? null,
    document_name: data.document_name ?? null,
  };
  // "confidence" is a fixed key only when it is put out, so today's output keeps a field of that name.
  const fixed = (name: string) =>
    FIXED_KEYS.has(name) || (options.includeConfidence === true && name === 'confidence');
  for (const field of generalFieldsOf(data as DocumentData)) {
    const key = fixed(field.name) ? `field_${field.name}` : field.name;
    out[key] = field.value as IDataObject[string];
  }
  out.line_items = lineItemsOf(data as DocumentData).map(
    (line): IDataObject =>
      Object.fromEntries(Object.entries(line).map(([name, entry]) => [name, entry.value])) as IDataObject,
  );
  const score = typeof data.Fraud_score === 'number' ? data.Fraud_score : null;
  out.fraud = { verdict: typeof data.Fraud_verdict === 'string' ? data.Fraud_verdict : null, score };
  if (options.includeConfidence === true) {
    out.confidence = Object.fromEntries(
      readFieldConfidences(data).flatMap((f) => (f.confidence === undefined ? [] : [[f.name, f.confidence]])),
    );
  }
  return out;
}
