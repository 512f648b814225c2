/**
 * Names from the data: a pattern such as `{yyyy}/{MM}/{field:Supplier}/{field:Invoice number}{ext}`
 * turned into a relative path for an archived original or a set of result files. Pure: the folder
 * it lands in, and a free name there, are decided by the caller (files.ts freeTarget / inside).
 *
 * The pattern is the operator's and is checked when the config is read; the values are not: a field
 * comes from a scanned document, so every value is made one safe name part (separators replaced,
 * then the whole part through safeFileName: `..`, NUL and control characters, reserved Windows names,
 * trailing dots and spaces, names longer than the file system allows). A value never adds a folder
 * level and never leaves the root.
 */
import { safeFileName } from '@docex/shared';

export const NAME_PLACEHOLDERS = [
  'yyyy',
  'yy',
  'MM',
  'dd',
  'HH',
  'mm',
  'template',
  'template_id',
  'document_id',
  'name',
  'ext',
  'original',
] as const;
type Placeholder = (typeof NAME_PLACEHOLDERS)[number];

type Part =
  | { kind: 'literal'; text: string }
  | { kind: 'placeholder'; name: Placeholder }
  | { kind: 'field'; field: string; fallback: string | undefined };

/** A checked pattern: one list of parts per path segment. */
export interface NamePattern {
  source: string;
  segments: Part[][];
}

/** What a pattern is filled with. */
export interface NameValues {
  /** The date parts: when docex-sync first saw the file (the same on every replay), local time. */
  date: Date;
  templateId: number | null | undefined;
  /** The template's name when known (else `{template}` is its id). */
  templateName?: string | null;
  documentId: number;
  /** The file's name as it was dropped, e.g. "scan 12.pdf". */
  originalName: string;
  /** General fields by name (their values, as the service sent them). */
  fields: ReadonlyMap<string, unknown>;
  /** What a missing or empty field becomes when its placeholder names no default of its own. */
  missing: string;
}

/** A pattern the config gives is refused with what is wrong, e.g. `unknown placeholder {yyy} ...`. */
export function parseNamePattern(source: string): NamePattern {
  if (source.trim() === '') throw new Error('empty pattern');
  if (source.includes('\\')) throw new Error("use '/' between folders, not '\\'");
  if (source.startsWith('/')) throw new Error('a pattern is relative to its folder; remove the leading /');
  const segments = source.split('/').map((segment, i) => {
    if (segment === '')
      throw new Error(`empty folder name at part ${i + 1} (two '/' in a row or a trailing '/')`);
    if (segment === '.' || segment === '..') throw new Error(`"${segment}" is not a folder name`);
    return parseSegment(segment);
  });
  return { source, segments };
}

function parseSegment(segment: string): Part[] {
  const parts: Part[] = [];
  let rest = segment;
  while (rest !== '') {
    const open = rest.indexOf('{');
    const close = rest.indexOf('}');
    if (open === -1) {
      if (close !== -1) throw new Error(`"}" without "{" in "${segment}"`);
      parts.push({ kind: 'literal', text: rest });
      break;
    }
    if (close === -1 || close < open) throw new Error(`"{" without "}" in "${segment}"`);
    if (open > 0) parts.push({ kind: 'literal', text: rest.slice(0, open) });
    parts.push(placeholderOf(rest.slice(open + 1, close)));
    rest = rest.slice(close + 1);
  }
  return parts;
}

function placeholderOf(inner: string): Part {
  if (inner.startsWith('field:')) {
    const [field = '', fallback] = inner.slice('field:'.length).split('|', 2);
    if (field.trim() === '') throw new Error('{field:} names no field, e.g. {field:Supplier}');
    return { kind: 'field', field, fallback };
  }
  if ((NAME_PLACEHOLDERS as readonly string[]).includes(inner))
    return { kind: 'placeholder', name: inner as Placeholder };
  throw new Error(
    `unknown placeholder {${inner}}; known: ${NAME_PLACEHOLDERS.map((p) => `{${p}}`).join(' ')} {field:NAME} {field:NAME|default}`,
  );
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A field's value as text, or undefined when it is missing, empty or not a single value. */
function text(value: unknown): string | undefined {
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (typeof value !== 'string') return undefined;
  return value.trim() === '' ? undefined : value;
}

const EMPTY = '\u0000';
/**
 * An untrusted value inside one name part: separators replaced (it may not add a folder level),
 * then made a safe name on its own, so a value of dots only is missing rather than eating the dot
 * of the `{ext}` after it.
 */
function oneLevel(value: string, missing: string): string {
  const safe = safeFileName(value.replace(/[\\/]/g, '_'), EMPTY);
  return safe !== EMPTY ? safe : safeFileName(missing.replace(/[\\/]/g, '_'), 'unknown');
}

function placeholderValue(name: Placeholder, v: NameValues): string {
  const d = v.date;
  const dot = v.originalName.lastIndexOf('.');
  const ext = dot > 0 ? v.originalName.slice(dot) : '';
  switch (name) {
    case 'yyyy':
      return String(d.getFullYear());
    case 'yy':
      return pad(d.getFullYear() % 100);
    case 'MM':
      return pad(d.getMonth() + 1);
    case 'dd':
      return pad(d.getDate());
    case 'HH':
      return pad(d.getHours());
    case 'mm':
      return pad(d.getMinutes());
    case 'template':
      return text(v.templateName) ?? (v.templateId == null ? v.missing : String(v.templateId));
    case 'template_id':
      return v.templateId == null ? v.missing : String(v.templateId);
    case 'document_id':
      return String(v.documentId);
    case 'name':
      return ext ? v.originalName.slice(0, dot) : v.originalName;
    case 'ext':
      return ext;
    case 'original':
      return v.originalName;
  }
}

/**
 * The relative path (parts joined by '/') a pattern gives for these values; every part is one safe
 * name, so the result cannot leave the folder it is resolved in. A part that comes out empty (a
 * field of dots only, say) becomes `missing`.
 */
export function renderName(pattern: NamePattern, values: NameValues): string {
  const fallbackPart = safeFileName(values.missing, 'unknown');
  return pattern.segments
    .map((parts) => {
      const raw = parts
        .map((part) => {
          if (part.kind === 'literal') return part.text;
          const missing = part.kind === 'field' ? (part.fallback ?? values.missing) : values.missing;
          if (part.kind === 'placeholder') {
            const value = placeholderValue(part.name, values);
            // {ext} is '.pdf': a name of its own would lose its dot.
            return part.name === 'ext' ? value.replace(/[^.\p{L}\p{N}_-]/gu, '_') : oneLevel(value, missing);
          }
          return oneLevel(text(values.fields.get(part.field)) ?? '', missing);
        })
        .join('');
      return safeFileName(raw, fallbackPart);
    })
    .join('/');
}
