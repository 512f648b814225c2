/**
 * When a poll's answer may stand for the document's data (issue #42, docs/decisions.md "The JSON
 * result from the task's answer"): then fetch_document_data is not asked. Pure.
 *
 * The results need the document id and name, the template (its layout orders the CSV columns), and
 * each field's value and confidence: the task answer carries them when its upload named the
 * template and each general field and line cell reads with a confidence. Only for DONE: a
 * DUPLICATE's fields are another upload's document, whose template may be another. The CSVs are
 * then the same as from the document's data; the JSON's `document` holds what the answer told
 * (no General_fields_list, none of the keys only the document data has), which the JSON says
 * (`document_from: "task"`). `document_data: always` reads the document for every file, as
 * before this.
 */
import { lineItemTable, readFieldValue, type DocumentData, type TaskResult } from '@docex/shared';
import type { WatchConfig } from '../config/config.ts';

/** What a watch (or mailbox) says about its results. */
export interface DataSettings {
  formats: readonly string[];
  /** when_needed (the default): the task answer may stand for the document's data; always: never. */
  document_data?: 'when_needed' | 'always';
}
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
  settings: DataSettings,
  templateId: number | undefined,
): DocumentData | undefined {
  if (!task || settings.document_data === 'always' || templateId === undefined) return undefined;
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
