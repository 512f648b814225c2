/**
 * multipart/form-data as a list of segments: bytes the core can make, and files it cannot read
 * (paths, streams) that the transport streams in their place. Nothing is buffered here.
 */
import type { FileInput, MultipartPart } from './transport.ts';

export type MultipartSegment = Uint8Array | { file: FileInput };

export interface MultipartPlan {
  contentType: string;
  segments: MultipartSegment[];
}

const encoder = new TextEncoder();

/** As browsers encode form names and file names (WHATWG): quotes and line breaks percent-escaped. */
const escapeName = (s: string) => s.replace(/\r/g, '%0D').replace(/\n/g, '%0A').replace(/"/g, '%22');

export function makeBoundary(random: () => number): string {
  let s = '';
  for (let i = 0; i < 24; i++) s += Math.floor(random() * 36).toString(36);
  return `----docexFormBoundary${s}`;
}

export function planMultipart(parts: MultipartPart[], boundary: string): MultipartPlan {
  const segments: MultipartSegment[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${escapeName(part.name)}"`;
    if ('file' in part) {
      head += `; filename="${escapeName(part.fileName)}"\r\nContent-Type: ${part.contentType.replace(/[\r\n]+/g, ' ')}\r\n\r\n`;
      segments.push(encoder.encode(head), { file: part.file }, encoder.encode('\r\n'));
    } else {
      segments.push(encoder.encode(`${head}\r\n\r\n${part.value}\r\n`));
    }
  }
  segments.push(encoder.encode(`--${boundary}--\r\n`));
  return { contentType: `multipart/form-data; boundary=${boundary}`, segments };
}

/** Total length, when the size of every file is known (sizeOf answers undefined for unknown). */
export function multipartLength(
  plan: MultipartPlan,
  sizeOf: (file: FileInput) => number | undefined,
): number | undefined {
  let total = 0;
  for (const s of plan.segments) {
    const n = s instanceof Uint8Array ? s.byteLength : sizeOf(s.file);
    if (n === undefined) return undefined;
    total += n;
  }
  return total;
}

/** One buffer, for transports that hold files in memory anyway (n8n binary data). */
export function multipartToBytes(plan: MultipartPlan): Uint8Array {
  const chunks = plan.segments.map((s) => {
    if (s instanceof Uint8Array) return s;
    if ('data' in s.file) return s.file.data;
    throw new Error('multipartToBytes: only in-memory files ({ data }) can be encoded into one buffer');
  });
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}
