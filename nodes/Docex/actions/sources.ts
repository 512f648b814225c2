/**
 * Where Extract takes its file from: the input item's binary field(s) (as before), a URL fetched with
 * n8n's HTTP helper (streamed, stopped at a size cap, content type and file name kept), or base64
 * text in a JSON field (plain or a data: URL). An AI agent passes a URL or text far better than a
 * binary. Every failure names the item, the field or the URL (without its query, which may hold a
 * signed token) and what to do.
 */
import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeProperties,
} from 'n8n-workflow';
import { fileNameFromContentDisposition, safeFileName, type FileInput } from '@docex/shared';

export const SOURCE = 'source';
export type Source = 'binary' | 'url' | 'base64';

/** Default cap of a file fetched from a URL or decoded from base64, in MB. */
export const DEFAULT_MAX_FILE_MB = 50;

export const sourceProperties: INodeProperties[] = [
  {
    displayName: 'Input Source',
    name: SOURCE,
    type: 'options',
    options: [
      { name: 'Binary File', value: 'binary', description: "A file in the input item's binary data" },
      { name: 'URL', value: 'url', description: 'A file n8n downloads from a link' },
      {
        name: 'Base64 Text',
        value: 'base64',
        description: 'A file encoded as base64 in a field of the input item',
      },
    ],
    default: 'binary',
    description: 'Where the file to extract comes from',
  },
  {
    displayName: 'File URL',
    name: 'fileUrl',
    type: 'string',
    default: '',
    required: true,
    placeholder: 'e.g. https://example.com/invoices/1042.pdf',
    description: 'Link to the document (PDF or image); n8n downloads it and sends it to the service',
    displayOptions: { show: { [SOURCE]: ['url'] } },
  },
  {
    displayName: 'Base64 Field',
    name: 'encodedField',
    type: 'string',
    default: 'data',
    required: true,
    placeholder: 'e.g. file.content',
    hint: 'The name (or dotted path) of the input field holding the base64 text',
    description: 'Field of the input item with the file as base64 (a data: URL is accepted)',
    displayOptions: { show: { [SOURCE]: ['base64'] } },
  },
];

/** Entries of the Options collection that go with the sources. */
export const sourceOptions: INodeProperties[] = [
  {
    displayName: 'File Name',
    name: 'fileName',
    type: 'string',
    default: '',
    placeholder: 'e.g. invoice-1042.pdf',
    description:
      'Name sent with a file from a URL or base64; by default the name the server gives, the last part of the URL, or "document" with an extension from the content type',
  },
  {
    displayName: 'Max File Size (MB)',
    name: 'maxFileSizeMb',
    type: 'number',
    typeOptions: { minValue: 0.001 },
    default: DEFAULT_MAX_FILE_MB,
    description: 'A file from a URL or base64 larger than this fails the item instead of filling memory',
  },
];

const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/tiff': 'tiff',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'image/bmp': 'bmp',
  'text/plain': 'txt',
  'text/csv': 'csv',
};

/** The type of well-known files from their first bytes, for base64 without a data: prefix. */
export function sniffContentType(bytes: Uint8Array): string | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x25, 0x50, 0x44, 0x46)) return 'application/pdf';
  if (starts(0x89, 0x50, 0x4e, 0x47)) return 'image/png';
  if (starts(0xff, 0xd8, 0xff)) return 'image/jpeg';
  if (starts(0x49, 0x49, 0x2a, 0x00) || starts(0x4d, 0x4d, 0x00, 0x2a)) return 'image/tiff';
  return undefined;
}

const defaultName = (contentType: string | undefined) => {
  const ext = contentType ? EXTENSIONS[contentType] : undefined;
  return ext ? `document.${ext}` : 'document';
};

/** A URL as it may appear in a message: no user info, no query or fragment (signed links carry tokens there). */
export function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    const hidden = u.search || u.hash ? ' (query hidden)' : '';
    return `${u.protocol}//${u.host}${u.pathname}${hidden}`;
  } catch {
    return '(not a valid URL)';
  }
}

/** The last part of a URL's path, if it looks like a file name. */
function nameFromUrl(url: URL): string | undefined {
  const last = url.pathname.split('/').filter(Boolean).pop();
  if (!last) return undefined;
  try {
    const name = decodeURIComponent(last);
    return /\.[a-z0-9]{1,8}$/i.test(name) ? name : undefined;
  } catch {
    return undefined;
  }
}

const fail = (ctx: IExecuteFunctions, i: number, message: string, description: string) =>
  new NodeOperationError(ctx.getNode(), message, { itemIndex: i, description });

interface SourceOptions {
  fileName?: string;
  maxBytes: number;
}

function optionsOf(ctx: IExecuteFunctions, i: number): SourceOptions {
  const opts = ctx.getNodeParameter('options', i, {}) as IDataObject;
  const mb = Number(opts.maxFileSizeMb ?? DEFAULT_MAX_FILE_MB);
  const fileName =
    typeof opts.fileName === 'string' && opts.fileName.trim() ? opts.fileName.trim() : undefined;
  return {
    fileName,
    maxBytes: Math.max(1, Math.round((Number.isFinite(mb) ? mb : DEFAULT_MAX_FILE_MB) * 1024 * 1024)),
  };
}

const mb = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 100) / 100} MB`;

type HttpResponse = { statusCode: number; statusMessage?: string; headers: IDataObject; body: unknown };

/** Reads a streamed body, stopping (and destroying the stream) once it passes `maxBytes`. */
async function readCapped(body: unknown, maxBytes: number): Promise<Buffer | 'too large'> {
  if (body instanceof Uint8Array) return body.byteLength > maxBytes ? 'too large' : Buffer.from(body);
  if (typeof body === 'string') return readCapped(Buffer.from(body), maxBytes);
  const chunks: Buffer[] = [];
  let total = 0;
  const stream = body as AsyncIterable<Uint8Array> & { destroy?: () => void };
  for await (const chunk of stream) {
    total += chunk.byteLength;
    if (total > maxBytes) {
      stream.destroy?.();
      return 'too large';
    }
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** The file behind a URL, downloaded by n8n's HTTP helper (n8n's proxy settings apply). */
export async function fileFromUrl(ctx: IExecuteFunctions, i: number, raw: unknown): Promise<FileInput> {
  const text = String(raw ?? '').trim();
  let url: URL;
  try {
    url = new URL(text);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
  } catch {
    throw fail(
      ctx,
      i,
      `The File URL of item ${i} is not an http(s) link`,
      `Give a full link starting with http:// or https://; got ${text ? `"${text.slice(0, 80)}"` : 'nothing'}.`,
    );
  }
  const { maxBytes, fileName } = optionsOf(ctx, i);
  const shown = displayUrl(url.href);
  let response: HttpResponse;
  try {
    response = (await ctx.helpers.httpRequest({
      method: 'GET',
      url: url.href,
      encoding: 'stream',
      returnFullResponse: true,
      ignoreHttpStatusErrors: true,
    })) as HttpResponse;
  } catch (error) {
    throw fail(
      ctx,
      i,
      `Could not download the file of item ${i} from ${shown}: ${(error as Error).message}`,
      'Check that the link is reachable from the n8n server (and its proxy settings).',
    );
  }
  const { statusCode } = response;
  if (statusCode < 200 || statusCode > 299) {
    (response.body as { destroy?: () => void } | undefined)?.destroy?.();
    throw fail(
      ctx,
      i,
      `Downloading the file of item ${i} failed: ${shown} answered HTTP ${statusCode}${response.statusMessage ? ` ${response.statusMessage}` : ''}`,
      'The link must answer 200 with the file. A 401/403 link needs authentication: download it with an HTTP Request node and use the Binary File source.',
    );
  }
  const header = (name: string) => {
    const v = response.headers[name];
    return typeof v === 'string' ? v : Array.isArray(v) ? String(v[0]) : undefined;
  };
  const declared = Number(header('content-length'));
  const data =
    Number.isFinite(declared) && declared > maxBytes
      ? 'too large'
      : await readCapped(response.body, maxBytes);
  if (data === 'too large') {
    throw fail(
      ctx,
      i,
      `The file of item ${i} at ${shown} is larger than ${mb(maxBytes)}`,
      'Raise "Max File Size (MB)" in the options if the service accepts files that large.',
    );
  }
  if (data.length === 0) {
    throw fail(
      ctx,
      i,
      `The file of item ${i} at ${shown} is empty (0 bytes)`,
      'The link answered with no content; check it in a browser.',
    );
  }
  const contentType = header('content-type')?.split(';')[0]?.trim().toLowerCase() || sniffContentType(data);
  const name = fileName ?? fileNameFromContentDisposition(header('content-disposition')) ?? nameFromUrl(url);
  return { data, fileName: safeFileName(name, defaultName(contentType)), contentType };
}

/** The value at a dotted path of an item's JSON ("file.content"); a key with dots is found whole first. */
function valueAt(json: IDataObject, path: string): unknown {
  if (path in json) return json[path];
  return path
    .split('.')
    .reduce<unknown>((v, key) => (v && typeof v === 'object' ? (v as IDataObject)[key] : undefined), json);
}

/** The file in base64 text (or a data: URL) in a field of the input item. */
export function fileFromBase64(ctx: IExecuteFunctions, i: number, field: unknown): FileInput {
  const path = String(field ?? '').trim();
  const json = ctx.getInputData()[i]?.json ?? {};
  const value = path ? valueAt(json, path) : undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    const keys = Object.keys(json);
    throw fail(
      ctx,
      i,
      `Item ${i} has no base64 text in field "${path}"`,
      value === undefined
        ? `The item's fields are: ${keys.length > 0 ? keys.slice(0, 20).join(', ') : '(none)'}. Set "Base64 Field" to the one holding the file.`
        : `The field holds ${value === null ? 'null' : typeof value === 'string' ? 'an empty text' : `a ${typeof value}`}, not base64 text.`,
    );
  }
  const { maxBytes, fileName } = optionsOf(ctx, i);
  const dataUrl = /^data:([^;,]*)(;[^,]*)?,/i.exec(value.trim());
  const text = (dataUrl ? value.trim().slice(dataUrl[0].length) : value).replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) {
    throw fail(
      ctx,
      i,
      `The field "${path}" of item ${i} is not base64`,
      'Expected base64 text (A-Z, a-z, 0-9, +, /, =) or a data: URL such as data:application/pdf;base64,JVBERi0...',
    );
  }
  if (Math.floor((text.length * 3) / 4) > maxBytes + 2) {
    throw fail(
      ctx,
      i,
      `The file in field "${path}" of item ${i} is larger than ${mb(maxBytes)}`,
      'Raise "Max File Size (MB)" in the options if the service accepts files that large.',
    );
  }
  const data = Buffer.from(text, 'base64');
  if (data.length === 0) {
    throw fail(
      ctx,
      i,
      `The file in field "${path}" of item ${i} is empty (0 bytes)`,
      'The field decodes to no bytes.',
    );
  }
  const contentType = (dataUrl?.[1]?.trim().toLowerCase() || undefined) ?? sniffContentType(data);
  return { data, fileName: safeFileName(fileName, defaultName(contentType)), contentType };
}
