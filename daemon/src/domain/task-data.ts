/**
 * When a poll's answer may stand for the document's data (issue #42, docs/decisions.md "Fewer
 * requests per document"): then fetch_document_data is not asked, and the results are the same.
 * Pure.
 *
 * The JSON result holds the document's data as read (template_id, General_fields_list, task_id,
 * any other key the service sends), so a watch writing JSON always reads it. A CSV-only watch
 * needs the document id and name, the template (its column order), and each field's value and
 * confidence: the task answer carries them when its upload named the template and each general
 * field reads with a confidence. Only for DONE: a DUPLICATE's fields are another upload's document,
 * whose template may be another.
 */
import { lineItemTable, readFieldValue, type DocumentData, type TaskResult } from '@docex/shared';
import type { WatchConfig } from '../config/config.ts';
import { routeSettings } from '../config/route-settings.ts';

/** The template the file's upload named (its route's, else its watch's), if any. */
export function templateSent(watch: WatchConfig, route: string | null): number | undefined {
  const own = route === null ? undefined : watch.routes.find((r) => (r.name ?? r.match) === route);
  return own ? routeSettings(watch, own).template_id : watch.template_id;
}

const withConfidences = (fields: unknown): fields is Record<string, unknown> =>
  !!fields &&
  typeof fields === 'object' &&
  !Array.isArray(fields) &&
  Object.keys(fields).length > 0 &&
  Object.values(fields).every((entry) => readFieldValue(entry).confidence !== null);

/** Every cell of the line items reads with a confidence (the lines CSV has a column for each). */
function linesWithConfidences(task: TaskResult): boolean {
  const table = lineItemTable(task);
  for (let i = 0; i < table.count; i++) {
    const item = table.line(i);
    if (table.names.some((n) => item[n] !== undefined && (item[n]!.confidence ?? null) === null))
      return false;
  }
  return true;
}

/** The document's data as the task answer tells it, or undefined: fetch_document_data must be asked. */
export function dataFromTask(
  task: TaskResult | null,
  formats: readonly string[],
  templateId: number | undefined,
): DocumentData | undefined {
  if (!task || formats.includes('json') || templateId === undefined) return undefined;
  if (task.status !== 'DONE') return undefined;
  if (typeof task.document_id !== 'number' || typeof task.document_name !== 'string') return undefined;
  if (!withConfidences(task.General_fields)) return undefined;
  if (!task.Line_fields || typeof task.Line_fields !== 'object' || !linesWithConfidences(task))
    return undefined;
  return {
    document_id: task.document_id,
    template_id: templateId,
    document_name: task.document_name,
    General_fields: task.General_fields,
    Line_fields: task.Line_fields,
    task_id: task.task_id ?? null,
  } as DocumentData;
}
