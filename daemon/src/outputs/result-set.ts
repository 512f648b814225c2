/**
 * A document's result set: the files docex-sync writes for it in output under one base name, and
 * the one place their names are spelled. results.ts writes them, review.ts holds copies of them for
 * a held file, review-decisions.ts removes a rejected file's copies, retention prunes them.
 */
import { safeFileName } from '@docex/shared';

/** The JSON (`json` in formats): the document, its task, the source file, where it was archived. */
export const JSON_SUFFIX = '.json';
/** The general fields, one row (`csv` in formats). */
export const FIELDS_SUFFIX = '.fields.csv';
/** The line items, a row each (`csv` in formats). */
export const LINES_SUFFIX = '.lines.csv';
/** Every file a result set may have, in the order they are looked at. */
export const RESULT_SUFFIXES = [JSON_SUFFIX, FIELDS_SUFFIX, LINES_SUFFIX] as const;

/** The base of result file names: the source file's name (made safe) and the document id. */
export function resultBase(sourceName: string, documentId: number): string {
  const stem = safeFileName(sourceName).replace(/\.[^.]+$/, '') || 'document';
  return `${stem}.doc-${documentId}`;
}
