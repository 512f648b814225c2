/**
 * The way back from the node's parameters to the API's input, and from the client's answers and
 * errors to n8n items. Generic over the operation table, like common.descriptions.ts.
 */
import {
  NodeApiError,
  NodeOperationError,
  type IBinaryData,
  type IDataObject,
  type IExecuteFunctions,
  type INode,
  type INodeExecutionData,
  type JsonObject,
} from 'n8n-workflow';
import {
  DocexApiError,
  DocexError,
  DocexRateLimitError,
  DocexValidationError,
  readAll,
  safeFileName,
  type BinaryResult,
  type FileInput,
  type ParamSpec,
} from '@docex/shared';
import {
  BINARY_PROPERTY,
  collectionOf,
  isTopLevel,
  locatorLabel,
  LOOK_UP_BY,
} from './common.descriptions.ts';
import { parameterName } from './naming.ts';
import type { ApiInput, NodeOperation } from './node.type.ts';
import { fileFromBase64, fileFromUrl, SOURCE, type Source } from './sources.ts';
import { RATE_LIMIT_BUDGET_MS } from '../transport/index.ts';

/** A list parameter: an array (from an expression) or comma/space/semicolon-separated text. */
export function splitList(value: unknown): string[] {
  const parts = Array.isArray(value) ? value.map((v) => String(v)) : String(value ?? '').split(/[\s,;]+/);
  return parts.map((s) => s.trim()).filter((s) => s !== '');
}

/** A resource locator's value ({ __rl, mode, value }) or the plain value. */
export function locatorValue(value: unknown): unknown {
  if (value && typeof value === 'object' && 'value' in value) return (value as { value: unknown }).value;
  return value;
}

const HAS_OFFSET = /(?:[zZ]|[+-]\d{2}:?\d{2})$/;

/** The offset of `timeZone` at the instant `utcMs`, as +HH:MM. */
function offsetOf(timeZone: string, utcMs: number): string {
  const name = new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' })
    .formatToParts(new Date(utcMs))
    .find((p) => p.type === 'timeZoneName')?.value;
  const m = /GMT([+-]\d{2}):?(\d{2})?/.exec(name ?? '');
  return m ? `${m[1]}:${m[2] ?? '00'}` : '+00:00';
}

/**
 * n8n's date pickers give a local time without offset, meant in the workflow's time zone; the service
 * would read it as UTC. The workflow's offset at that time is added; a value with an offset is kept.
 */
export function inTimeZone(value: string, timeZone: string): string {
  const v = value.trim();
  const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?))?$/.exec(v);
  if (!m || HAS_OFFSET.test(v)) return v;
  const local = `${m[1]}T${m[2] ?? '00:00:00'}`;
  const asUtc = Date.parse(`${local}Z`);
  if (Number.isNaN(asUtc)) return v;
  // The offset at the instant meant (two steps settle daylight-saving transitions).
  let offset = offsetOf(timeZone, asUtc);
  offset = offsetOf(timeZone, asUtc - offsetMs(offset));
  return `${local}${offset}`;
}
const offsetMs = (offset: string) => {
  const sign = offset.startsWith('-') ? -1 : 1;
  return sign * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4, 6))) * 60_000;
};

/** The input binary fields named by `names` ("data", "a, b", or "*" for all of them) as files. */
export async function filesOf(ctx: IExecuteFunctions, i: number, names: unknown): Promise<FileInput[]> {
  const item = ctx.getInputData()[i]!;
  const wanted = splitList(names);
  const fields = wanted.includes('*') ? Object.keys(item.binary ?? {}) : wanted;
  if (fields.length === 0)
    throw new NodeOperationError(ctx.getNode(), 'No input binary field to upload', {
      itemIndex: i,
      description: 'Name the binary field(s) holding the files, e.g. "data" or "data, attachment_1".',
    });
  const files: FileInput[] = [];
  for (const field of fields) {
    if (!item.binary?.[field]) {
      const present = Object.keys(item.binary ?? {});
      throw new NodeOperationError(ctx.getNode(), `Item ${i} has no binary field "${field}"`, {
        itemIndex: i,
        description:
          present.length > 0
            ? `Its binary fields are: ${present.join(', ')}. Set "Input Binary Field" to one of them.`
            : 'The item carries no file at all. Read or download the file first (Read/Write Files from Disk, HTTP Request), or choose the URL or Base64 Text input source.',
      });
    }
    const meta: IBinaryData = ctx.helpers.assertBinaryData(i, field);
    const data = await ctx.helpers.getBinaryDataBuffer(i, field);
    if (data.length === 0) {
      throw new NodeOperationError(
        ctx.getNode(),
        `The file in binary field "${field}" of item ${i} is empty (0 bytes)`,
        {
          itemIndex: i,
          description: `${meta.fileName ?? 'The file'} has no content; the service cannot extract from it.`,
        },
      );
    }
    const ext = meta.fileExtension ? `.${meta.fileExtension}` : '';
    files.push({
      data,
      fileName: meta.fileName || `${field}${ext}`,
      contentType: meta.mimeType || undefined,
    });
  }
  return files;
}

const isLocator = (raw: unknown) => typeof raw === 'object' && raw !== null && '__rl' in raw;
const WHOLE_NUMBER = /^\d+$/;

/**
 * The ID typed into a resource locator's "By ID", trimmed, or a node error naming the locator as the
 * form does. The node checks it itself: n8n would run a `validation` regex at every execution and
 * fail the execution when that regex takes 250 ms on a busy machine.
 */
export function locatorId(
  node: INode,
  param: Pick<ParamSpec, 'label'>,
  value: string,
  itemIndex?: number,
): string {
  const id = value.trim();
  if (WHOLE_NUMBER.test(id)) return id;
  const what = locatorLabel(param);
  throw new NodeOperationError(node, `${what}: "${id}" is not an ID`, {
    itemIndex,
    description: `An ID is a whole number, such as 42. Pick the ${what.toLowerCase()} From List, or give its ID.`,
  });
}

/** One parameter's value of item `i` as the API wants it; undefined when not given. */
function convert(
  ctx: IExecuteFunctions,
  i: number,
  param: ParamSpec,
  raw: unknown,
  inCollection: boolean,
): unknown {
  const value = locatorValue(raw);
  if (value === undefined || value === null) return undefined;
  if (value === '') return inCollection && param.nullable && param.kind === 'string' ? null : undefined;
  switch (param.kind) {
    case 'integer[]':
    case 'string[]': {
      const list = splitList(value);
      return list.length > 0 ? list : undefined;
    }
    case 'date':
      return typeof value === 'string' ? value.trim().slice(0, 10) : value;
    case 'datetime':
      return typeof value === 'string' ? inTimeZone(value, ctx.getTimezone()) : value;
    case 'integer': {
      if (typeof value !== 'string') return value;
      return isLocator(raw) ? locatorId(ctx.getNode(), param, value, i) : value.trim();
    }
    default:
      return value;
  }
}

/** The API input of item `i` for `op`, read from the generated parameters (API names as keys). */
export async function readInput(
  ctx: IExecuteFunctions,
  i: number,
  op: Pick<NodeOperation, 'api' | 'required' | 'sources'>,
): Promise<ApiInput> {
  const { api } = op;
  const input: ApiInput = {};
  const collection = collectionOf(api).name;
  const optional = api.params.some((p) => !isTopLevel(op, p))
    ? (ctx.getNodeParameter(collection, i, {}) as IDataObject)
    : {};
  const chosen = api.exactlyOneOf ? (ctx.getNodeParameter(LOOK_UP_BY, i) as string) : undefined;
  for (const param of api.params) {
    if (param.kind === 'file' || param.kind === 'file[]') {
      const source = op.sources ? (ctx.getNodeParameter(SOURCE, i, 'binary') as Source) : 'binary';
      const files =
        source === 'url'
          ? [await fileFromUrl(ctx, i, ctx.getNodeParameter('fileUrl', i))]
          : source === 'base64'
            ? [fileFromBase64(ctx, i, ctx.getNodeParameter('encodedField', i))]
            : await filesOf(ctx, i, ctx.getNodeParameter(BINARY_PROPERTY, i));
      input[param.name] = param.kind === 'file' ? files[0] : files;
      continue;
    }
    const name = parameterName(param.name);
    let raw: unknown;
    if (!isTopLevel(op, param)) raw = optional[name];
    else if (chosen !== undefined && api.exactlyOneOf!.includes(param.name))
      raw = chosen === name ? ctx.getNodeParameter(name, i) : undefined;
    else raw = ctx.getNodeParameter(name, i);
    const value = convert(ctx, i, param, raw, !isTopLevel(op, param));
    if (value !== undefined) input[param.name] = value;
  }
  return input;
}

/** The Limit of item `i` (RETURN_ALL), or undefined with Return All on. */
export function limitOf(ctx: IExecuteFunctions, i: number): number | undefined {
  if (ctx.getNodeParameter('returnAll', i, false)) return undefined;
  return Math.max(1, Math.floor(Number(ctx.getNodeParameter('limit', i, 50))) || 1);
}

/** An answer as one item; a non-object answer goes under `result`. */
export function jsonItem(i: number, value: unknown): INodeExecutionData {
  const json =
    value && typeof value === 'object' && !Array.isArray(value)
      ? (value as IDataObject)
      : { result: value ?? null };
  return { json, pairedItem: { item: i } };
}

/** A downloaded file as binary output, named with the core's safeFileName. */
export async function binaryItem(
  ctx: IExecuteFunctions,
  i: number,
  result: BinaryResult,
  fallbackName: string,
  json: IDataObject,
): Promise<INodeExecutionData> {
  const bytes = Buffer.from(await readAll(result.body));
  const fileName = safeFileName(result.fileName, fallbackName);
  const field = (ctx.getNodeParameter('binaryPropertyOutput', i, 'data') as string).trim() || 'data';
  const contentType = result.contentType?.split(';')[0]?.trim() || undefined;
  const binary = await ctx.helpers.prepareBinaryData(bytes, fileName, contentType);
  return {
    json: { ...json, fileName, mimeType: binary.mimeType, fileSize: bytes.length },
    binary: { [field]: binary },
    pairedItem: { item: i },
  };
}

/** What a 429 that reached the workflow means, and what to change (docs/n8n.md, "Requests per Second"). */
export const RATE_LIMIT_ADVICE =
  `The service kept refusing requests as too many (HTTP 429) for the ${RATE_LIMIT_BUDGET_MS / 60_000} minutes this step retries them, ` +
  'or asked to wait longer than a minute. Every execution of this n8n instance that uses this credential shares its ' +
  '"Requests per Second" (default 10): set it to the rate your service allows; with queue-mode workers, ' +
  'to that rate divided by the number of workers.';

/** What n8n shows below the message: the 422 entries, the batch error code, or the server's words. */
function descriptionOf(error: DocexApiError): string | undefined {
  if (error instanceof DocexValidationError && error.issues.length > 0) return error.issues.join('\n');
  if (error instanceof DocexRateLimitError) return RATE_LIMIT_ADVICE;
  const batch = error.batchError;
  if (batch) {
    const id = batch.id_type ? ` (${batch.id_type} ${String(batch.id)})` : '';
    return `${batch.error_code} [${batch.error_type}]${id}: ${batch.message}`;
  }
  return error.serverMessage || undefined;
}

/** A client error as n8n shows it: NodeApiError with the service's own message, or NodeOperationError. */
export function toNodeError(
  ctx: IExecuteFunctions | { getNode: IExecuteFunctions['getNode'] },
  error: unknown,
  i?: number,
): Error {
  if (error instanceof NodeApiError || error instanceof NodeOperationError) return error;
  if (error instanceof DocexApiError) {
    const response: JsonObject = {
      message: error.message,
      status: error.status,
      code: error.code ?? null,
      body: (error.body ?? null) as JsonObject,
    };
    return new NodeApiError(ctx.getNode(), response, {
      message: error.message,
      description: descriptionOf(error),
      httpCode: String(error.status),
      itemIndex: i,
    });
  }
  if (error instanceof DocexError) {
    // Connection failures, timeouts, answers of the wrong shape, input refused before sending.
    return new NodeOperationError(ctx.getNode(), error.message, { itemIndex: i });
  }
  return new NodeOperationError(ctx.getNode(), error instanceof Error ? error : String(error), {
    itemIndex: i,
  });
}

/** The item Continue On Fail puts out instead of failing the run. */
export function errorItem(error: Error, i: number): INodeExecutionData {
  const e = error as Error & { description?: string | null; httpCode?: string | null };
  const json: IDataObject = { error: e.message };
  if (e.description) json.description = e.description;
  if (e.httpCode) json.httpCode = e.httpCode;
  return { json, pairedItem: { item: i } };
}
