/**
 * zod schemas for every JSON answer of the service. Objects are loose (keys the server adds are
 * kept); where the API document says "not shown", the plausible variants are accepted and
 * normalised (docs/decisions.md lists them).
 */
import { z } from 'zod/v4';

export type AnySchema = z.ZodType;

/** Integer id; a numeric string is accepted too. */
export const Id = z.union(
  [
    z.number().int(),
    z
      .string()
      .regex(/^-?\d+$/)
      .transform(Number),
  ],
  {
    error: 'expected an integer id',
  },
);
/** Task ids are strings; a number is accepted and turned into a string. */
export const TaskId = z.union([z.string(), z.number().transform(String)]);
const str = z.string().nullish();
const num = z.union([
  z.number(),
  z
    .string()
    .regex(/^-?\d+(\.\d+)?$/)
    .transform(Number),
]);

export const ShortTemplate = z.looseObject({ id: Id, name: z.string(), desc: str });

export const Folder = z.looseObject({
  id: Id,
  name: str,
  desc: str,
  template_ids: z.array(Id).nullish(),
  templates: z.array(ShortTemplate).nullish(),
});
export type Folder = z.output<typeof Folder>;

export const FolderList = z.union([
  z.looseObject({ folders: z.array(Folder) }),
  z.array(Folder).transform((folders) => ({ folders })),
]);

const agentIdsOf = (t: Record<string, unknown>): number[] => {
  const ids = new Set<number>();
  const add = (v: unknown) => {
    const n = typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v;
    if (typeof n === 'number' && Number.isInteger(n)) ids.add(n);
  };
  for (const key of ['agent_id', 'datatable_match_agent_id']) add(t[key]);
  for (const key of ['agent_ids', 'agents', 'datatable_match_agents']) {
    const list = t[key];
    if (Array.isArray(list)) {
      for (const item of list) add(item && typeof item === 'object' ? (item as { id?: unknown }).id : item);
    }
  }
  return [...ids];
};

export const Template = z
  .looseObject({
    id: Id,
    name: z.string(),
    desc: str,
    folder_id: Id,
    field_ids: z.array(Id).nullish(),
    instruction_ids: z.array(Id).nullish(),
    number_locale: str,
    date_locale: str,
  })
  .transform((t) => ({ ...t, agent_ids: agentIdsOf(t) }));
export type Template = z.output<typeof Template>;

export const Field = z.looseObject({
  id: Id,
  template_id: Id,
  name: str,
  type: str,
  desc: str,
  format: str,
  position: z
    .union([
      z.number().int(),
      z
        .string()
        .regex(/^-?\d+$/)
        .transform(Number),
    ])
    .nullish(),
});
export type Field = z.output<typeof Field>;

export const Instruction = z.looseObject({
  id: Id,
  template_id: Id,
  content: str,
  type: str,
});
export type Instruction = z.output<typeof Instruction>;

export const TASK_STATUSES = ['IN PROGRESS', 'DONE', 'FAILED', 'DUPLICATE'] as const;
export type KnownTaskStatus = (typeof TASK_STATUSES)[number];
/** A status the document does not list is kept as sent; pollers treat it as not finished. */
export type TaskStatus = KnownTaskStatus | (string & {});
export const FINAL_STATUSES: ReadonlySet<string> = new Set(['DONE', 'FAILED', 'DUPLICATE']);

/** 'in_progress', 'In Progress', 'done' → the document's spelling; anything else is kept. */
export function normalizeStatus(status: string): TaskStatus {
  const canonical = status.trim().toUpperCase().replace(/[_-]+/g, ' ');
  return (TASK_STATUSES as readonly string[]).includes(canonical) ? canonical : status;
}

const freeObject = z.record(z.string(), z.unknown());

export const TaskResult = z.looseObject({
  status: z.string().transform(normalizeStatus),
  status_message: z
    .string()
    .nullish()
    .transform((m) => m ?? ''),
  child_task_ids: z.array(TaskId).nullish(),
  task_id: TaskId.nullish(),
  document_id: Id.nullish(),
  document_name: str,
  General_fields: freeObject.nullish(),
  Line_fields: freeObject.nullish(),
  Fraud_verdict: str,
  Fraud_justification: str,
  Fraud_score: num.nullish(),
  Fraud_detection_tests: z.array(z.unknown()).nullish(),
});
export type TaskResult = z.output<typeof TaskResult>;

export const DocumentData = z.looseObject({
  document_id: Id,
  template_id: Id.nullish(),
  document_name: str,
  General_fields: freeObject.nullish(),
  General_fields_list: z.array(z.unknown()).nullish(),
  Line_fields: freeObject.nullish(),
  task_id: TaskId.nullish(),
});
export type DocumentData = z.output<typeof DocumentData>;

export const DocumentIds = z.union([
  z.array(Id),
  z.looseObject({ document_ids: z.array(Id) }).transform((o) => o.document_ids),
  z.looseObject({ ids: z.array(Id) }).transform((o) => o.ids),
]);

export const BatchFileError = z.looseObject({
  error_code: z.string(),
  error_type: z.string(),
  message: z.string(),
  id_type: str,
  id: z.union([z.number(), z.string()]).nullish(),
});
export type BatchFileError = z.output<typeof BatchFileError>;

/** Rerun error entries: their codes are "not shown", so every key is optional here. */
const RerunError = z
  .looseObject({
    error_code: str,
    error_type: str,
    message: str,
    id_type: str,
    id: z.union([z.number(), z.string()]).nullish(),
  })
  .transform((e) => ({
    ...e,
    error_code: e.error_code ?? 'UNKNOWN',
    error_type: e.error_type ?? 'unknown',
    message: e.message ?? 'not rerun',
  }));

const Count = z.union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)], {
  error: 'expected a count',
});

export const RerunResult = z.looseObject({
  rerun: Count,
  not_rerun: Count,
  rerun_doc_ids: z
    .array(Id)
    .nullish()
    .transform((v) => v ?? []),
  errors: z
    .array(RerunError)
    .nullish()
    .transform((v) => v ?? []),
});
export type RerunResult = z.output<typeof RerunResult>;

/** A task id as sent: a non-empty string without spaces, or an integer. */
const taskIdOf = (v: unknown): string | undefined => {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  if (typeof v === 'string' && /^\S{1,200}$/.test(v.trim())) return v.trim();
  return undefined;
};
/** An item of a list of tasks: an id, or an object with task_id (or id). */
const listedTaskId = (v: unknown): string | undefined => {
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    return taskIdOf(o.task_id) ?? taskIdOf(o.id);
  }
  return taskIdOf(v);
};

/**
 * Upload answer ("not shown"): `{task_id}`, `{task_id, child_task_ids}`, `{task_ids}`,
 * `{tasks: [{task_id}]}`, a list of ids or of `{task_id}`, or a bare id. `task_ids` are the tasks to
 * wait for: the children when there are any, else the task itself.
 */
export const UploadResult = z.unknown().transform((raw, ctx) => {
  const ids: string[] = [];
  let taskId: string | null = null;
  const push = (v: unknown) => {
    const id = listedTaskId(v);
    if (id !== undefined) ids.push(id);
  };
  if (typeof raw === 'string' || typeof raw === 'number') {
    taskId = taskIdOf(raw) ?? null;
  } else if (Array.isArray(raw)) {
    raw.forEach(push);
  } else if (raw && typeof raw === 'object') {
    const o = raw as Record<string, unknown>;
    taskId = taskIdOf(o.task_id) ?? null;
    for (const key of ['child_task_ids', 'task_ids', 'tasks'])
      if (Array.isArray(o[key])) (o[key] as unknown[]).forEach(push);
  }
  if (ids.length === 0 && taskId !== null) ids.push(taskId);
  if (ids.length === 0) {
    ctx.addIssue({ code: 'custom', message: 'no task id in the upload answer', input: raw });
    return z.NEVER;
  }
  return { task_id: taskId ?? (ids.length === 1 ? ids[0]! : null), task_ids: [...new Set(ids)], raw };
});
export type UploadResult = z.output<typeof UploadResult>;

/** check_api_key answer ("not shown"): a 200 means valid unless the body says otherwise. */
export const ApiKeyCheck = z.unknown().transform((raw) => {
  const o = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : {};
  const no = (v: unknown) => v === false || v === 'false';
  const refused = no(raw) || no(o.valid) || no(o.is_valid) || no(o.success);
  return { valid: !refused, details: raw };
});
export type ApiKeyCheck = z.output<typeof ApiKeyCheck>;

/** fetch_raw_text answer ("not shown"): a string, or an object with the text under a usual key or as pages. */
export const RawText = z.unknown().transform((raw, ctx) => {
  if (typeof raw === 'string') return { text: raw, raw };
  const pageText = (p: unknown) =>
    typeof p === 'string' ? p : p && typeof p === 'object' ? (p as { text?: unknown }).text : undefined;
  if (Array.isArray(raw) && raw.length > 0) {
    const pages = raw.map(pageText);
    if (pages.every((p) => typeof p === 'string')) return { text: pages.join('\n'), raw };
  }
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) {
    const o = raw as Record<string, unknown>;
    for (const key of ['raw_text', 'text', 'content', 'ocr_text', 'rawText']) {
      if (typeof o[key] === 'string') return { text: o[key] as string, raw };
    }
    if (Array.isArray(o.pages)) {
      const pages = o.pages.map(pageText);
      if (pages.every((p) => typeof p === 'string')) return { text: pages.join('\n'), raw };
    }
  }
  ctx.addIssue({
    code: 'custom',
    message: 'no raw text (expected a string or raw_text/text/content/pages)',
    input: raw,
  });
  return z.NEVER;
});
export type RawText = z.output<typeof RawText>;

export const AnyJson = z.unknown();

/** 422 body. */
export const ValidationDetail = z.looseObject({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
  input: z.unknown().optional(),
  ctx: freeObject.optional(),
});
export type ValidationDetail = z.output<typeof ValidationDetail>;
