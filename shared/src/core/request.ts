/** Turns a call's input into a transport request, refusing bad input before anything is sent. */
import { DocexInputError } from './errors.ts';
import type { OperationSpec, ParamSpec } from './operations.ts';
import type { FileInput, MultipartPart, TransportRequest } from './transport.ts';

export interface BuildOptions {
  /** Send the instruction id as a path segment (/v1/fetch_instruction/5) instead of ?instruction_id=5. */
  instructionIdIn?: 'query' | 'path';
}

const CALL_OPTION_KEYS: ReadonlySet<string> = new Set(['signal', 'timeoutMs', 'retry', 'instructionIdIn']);

const isAbsent = (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0);

const PARAM_NAMES = new WeakMap<OperationSpec, ReadonlySet<string>>();
/** The operation's parameter names, computed once per operation (this runs for every call). */
function paramNames(op: OperationSpec): ReadonlySet<string> {
  let names = PARAM_NAMES.get(op);
  if (!names) PARAM_NAMES.set(op, (names = new Set(op.params.map((p) => p.name))));
  return names;
}

export function buildRequest(
  op: OperationSpec,
  input: Record<string, unknown> | undefined,
  options: BuildOptions = {},
): Omit<TransportRequest, 'signal' | 'timeoutMs'> {
  const values = input ?? {};
  const fail = (message: string): never => {
    throw new DocexInputError(op.name, message);
  };
  if (typeof values !== 'object' || Array.isArray(values)) fail('input must be an object');
  const known = paramNames(op);
  for (const key of Object.keys(values)) {
    if (!known.has(key) && values[key] !== undefined) {
      const hint = CALL_OPTION_KEYS.has(key) ? '; call options such as signal go in the second argument' : '';
      fail(`unknown parameter "${key}" (expected ${known.size ? [...known].join(', ') : 'none'}${hint})`);
    }
  }
  if (op.exactlyOneOf && op.exactlyOneOf.filter((k) => !isAbsent(values[k])).length !== 1) {
    fail(`give exactly one of ${op.exactlyOneOf.join(', ')}`);
  }
  if (op.atLeastOneOf && op.atLeastOneOf.every((k) => isAbsent(values[k]))) {
    fail(`give at least one of ${op.atLeastOneOf.join(', ')}`);
  }

  const usePathForm = options.instructionIdIn === 'path' && op.pathForm !== undefined;
  let path = usePathForm ? op.pathForm! : op.path;
  const query: Array<[string, string]> = [];
  const body: Record<string, unknown> = {};
  const parts: MultipartPart[] = [];

  for (const param of op.params) {
    const raw = values[param.name];
    if (raw === undefined || (raw === null && !param.nullable)) {
      if (param.required) fail(`missing required parameter "${param.name}"`);
      continue;
    }
    const value = raw === null ? null : coerce(op, param, raw);
    const where = param.in === 'query' && usePathForm && path.includes(`{${param.name}}`) ? 'path' : param.in;
    switch (where) {
      case 'path':
        path = path.replace(`{${param.name}}`, encodeURIComponent(String(value)));
        break;
      case 'query':
        if (value !== null) query.push([param.name, String(value)]);
        break;
      case 'body':
        body[param.name] = value;
        if (param.alsoInQuery && value !== null) query.push([param.name, String(value)]);
        break;
      case 'form':
        if (value === null) break;
        if (param.kind === 'file' || param.kind === 'file[]') {
          for (const file of value as FileInput[]) parts.push(filePart(param.name, file));
        } else {
          parts.push({ name: param.name, value: String(value) });
        }
        break;
    }
  }

  const request: Omit<TransportRequest, 'signal' | 'timeoutMs'> = {
    operation: op.name as TransportRequest['operation'],
    method: op.method,
    path,
    query,
    headers: { accept: op.output === 'binary' ? '*/*' : 'application/json' },
    responseType: op.output === 'binary' ? 'binary' : 'json',
    idempotent: op.idempotent,
  };
  if (parts.length > 0) request.body = { type: 'multipart', parts };
  else if (op.params.some((p) => p.in === 'body')) request.body = { type: 'json', value: body };
  return request;
}

function coerce(op: OperationSpec, param: ParamSpec, value: unknown): unknown {
  const bad = (expected: string): never => {
    throw new DocexInputError(
      op.name,
      `parameter "${param.name}" must be ${expected} (got ${describe(value)})`,
    );
  };
  switch (param.kind) {
    case 'integer':
      return toInteger(value) ?? bad('an integer');
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      return bad('true or false');
    case 'string': {
      if (typeof value !== 'string') return bad('a string');
      if (param.values && !param.values.includes(value))
        bad(`one of ${param.values.map((v) => `'${v}'`).join(', ')}`);
      return value;
    }
    case 'date':
      return toDate(value) ?? bad('a date YYYY-MM-DD or a Date');
    case 'datetime':
      return toDateTime(value) ?? bad('an ISO 8601 date or date-time, or a Date');
    case 'integer[]': {
      if (!Array.isArray(value)) return bad('an array of integers');
      const ints = value.map((v) => toInteger(v) ?? bad('an array of integers'));
      checkCount(op, param, ints.length);
      return ints;
    }
    case 'string[]': {
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== ''))
        return bad('an array of non-empty strings');
      checkCount(op, param, value.length);
      return value;
    }
    case 'metadata':
      if (typeof value === 'string') return value;
      if (typeof value === 'object') return JSON.stringify(value);
      return bad('a string or an object');
    case 'file':
    case 'file[]': {
      const files = Array.isArray(value) ? value : [value];
      if (files.length === 0) bad('at least one file');
      if (param.kind === 'file' && files.length !== 1) bad('exactly one file');
      files.forEach(
        (f) => fileNameOf(f) ?? bad('a file: { path } or { data, fileName } or { stream, fileName }'),
      );
      return files;
    }
  }
}

function checkCount(op: OperationSpec, param: ParamSpec, count: number) {
  const min = param.minItems ?? (param.required ? 1 : 0);
  if (count < min || (param.maxItems !== undefined && count > param.maxItems)) {
    const hint = op.name === 'rerun_documents' ? ' (rerunAll() sends any number of ids in chunks)' : '';
    throw new DocexInputError(
      op.name,
      `parameter "${param.name}" must have ${min} to ${param.maxItems ?? 'any number of'} items, got ${count}${hint}`,
    );
  }
}

function toInteger(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d{1,15}$/.test(v.trim())) return Number(v.trim());
  return undefined;
}

function isRealDate(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

/** A Date becomes its UTC calendar day. */
function toDate(v: unknown): string | undefined {
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString().slice(0, 10);
  if (typeof v !== 'string') return undefined;
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v.trim());
  return m && isRealDate(+m[1]!, +m[2]!, +m[3]!) ? m[0] : undefined;
}

const ISO_DATETIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Sent with an explicit offset so no reader can take it for local time: a Date as UTC with +00:00,
 * a string without an offset is read as UTC (as the service does) and gets +00:00, an offset is kept,
 * a date alone is midnight UTC of that day.
 */
export function toDateTime(v: unknown): string | undefined {
  if (v instanceof Date)
    return Number.isNaN(v.getTime()) ? undefined : v.toISOString().replace('Z', '+00:00');
  if (typeof v !== 'string') return undefined;
  const m = ISO_DATETIME.exec(v.trim());
  if (!m || !isRealDate(+m[1]!, +m[2]!, +m[3]!)) return undefined;
  if (m[4] === undefined) return `${m[1]}-${m[2]}-${m[3]}T00:00:00+00:00`;
  if (+m[4] > 23 || +m[5]! > 59 || +(m[6] ?? 0) > 59) return undefined;
  if (m[8] && !/^z$/i.test(m[8]) && (+m[8].slice(1, 3) > 23 || +m[8].slice(-2) > 59)) return undefined;
  const time = `${m[4]}:${m[5]}:${m[6] ?? '00'}${m[7] ?? ''}`;
  const offset =
    m[8] === undefined || m[8].toUpperCase() === 'Z'
      ? '+00:00'
      : m[8].includes(':')
        ? m[8]
        : `${m[8].slice(0, 3)}:${m[8].slice(3)}`;
  return `${m[1]}-${m[2]}-${m[3]}T${time}${offset}`;
}

export function fileNameOf(file: unknown): string | undefined {
  if (!file || typeof file !== 'object') return undefined;
  const f = file as Partial<Record<'path' | 'data' | 'stream' | 'fileName', unknown>>;
  if (
    typeof f.fileName === 'string' &&
    f.fileName !== '' &&
    (f.path !== undefined || f.data !== undefined || f.stream !== undefined)
  )
    return f.fileName;
  if (typeof f.path === 'string' && f.path !== '') return f.path.split(/[\\/]/).pop() || undefined;
  return undefined;
}

const CONTENT_TYPES: Record<string, string> = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  tif: 'image/tiff',
  tiff: 'image/tiff',
  gif: 'image/gif',
  bmp: 'image/bmp',
  webp: 'image/webp',
  heic: 'image/heic',
  txt: 'text/plain',
  csv: 'text/csv',
  json: 'application/json',
  xml: 'application/xml',
  zip: 'application/zip',
  eml: 'message/rfc822',
  doc: 'application/msword',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xls: 'application/vnd.ms-excel',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

export function contentTypeFor(fileName: string): string {
  const ext = /\.([a-z0-9]+)$/i.exec(fileName)?.[1]?.toLowerCase();
  return (ext && CONTENT_TYPES[ext]) || 'application/octet-stream';
}

function filePart(name: string, file: FileInput): MultipartPart {
  const fileName = fileNameOf(file)!;
  return { name, file, fileName, contentType: file.contentType ?? contentTypeFor(fileName) };
}

/** True when every file of the request can be read again for a retry. */
export function bodyIsReplayable(request: Pick<TransportRequest, 'body'>): boolean {
  if (request.body?.type !== 'multipart') return true;
  return request.body.parts.every((p) => !('file' in p) || !('stream' in p.file));
}

function describe(v: unknown): string {
  if (v instanceof Date) return 'an invalid Date';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);
  return v === null ? 'null' : typeof v === 'object' ? 'an object' : String(v);
}
