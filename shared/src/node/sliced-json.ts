/**
 * JSON read and written a slice at a time, so that a large answer never holds the event loop.
 *
 * `JSON.parse` and `JSON.stringify` take a whole value in one call: for the 16 MiB answer the daemon
 * reads at most, with many small line items, that held a daemon's event loop for seconds on a
 * loaded machine, and `/healthz` went unanswered (docs/decisions.md, "Large answers in slices").
 * Here the native functions still do the work, on pieces of about SLICE_CHARS characters, and the
 * event loop runs between two pieces.
 *
 * Reading: the text's UTF-8 bytes (an answer's body, a file) are scanned for the boundaries of the
 * values inside the top containers; a run of whole values that fits in a slice is decoded and
 * parsed by one `JSON.parse`, and a value larger than a slice (the array of 200,000 line items) is
 * entered, its own values parsed in runs. The result is the one `JSON.parse(text)` gives, property
 * order and `__proto__` keys included; text that is not JSON throws a SyntaxError, and so do large
 * values nested deeper than MAX_SLICED_DEPTH (no answer of the service is).
 *
 * Writing: a value is written as `JSON.stringify(value, null, indent)` writes it, in pieces: a
 * container larger than a slice is written member by member, smaller values by `JSON.stringify`.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Characters (bytes, when reading) parsed or written between two turns of the event loop: a few ms. */
export const SLICE_CHARS = 64 * 1024;

/**
 * Containers larger than a slice are entered at most this deep: far deeper than any answer of the
 * service, and it bounds how often a character is scanned again (once per level entered).
 */
export const MAX_SLICED_DEPTH = 64;

export interface SliceOptions {
  /** Characters per slice (default SLICE_CHARS). */
  sliceChars?: number;
  /** Waits between two slices (default: the next turn of the event loop, after its I/O). */
  pause?: () => Promise<unknown>;
}

const nextTurnAfterIo = () => nextTurn();

// Character codes the scanner looks at.
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/*
 * The reader works on the UTF-8 bytes of the text, as they came off the wire: every character it
 * looks for is ASCII, and no byte of a multi-byte character is below 0x80, so a scan of the bytes
 * finds what a scan of the characters would. Only the runs handed to JSON.parse are decoded, so a
 * large answer is never decoded, nor held as one string, all at once.
 */

function skipSpace(bytes: Uint8Array, i: number): number {
  while (i < bytes.length && isSpace(bytes[i])) i++;
  return i;
}

/** The index just past the string that starts at `i` (a quote), or -1 when it does not end. */
function stringEnd(bytes: Buffer, i: number): number {
  for (let quote = bytes.indexOf(QUOTE, i + 1); quote !== -1; quote = bytes.indexOf(QUOTE, quote + 1)) {
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
  }
  return -1;
}

/** The index just past the number or literal that starts at `i`. */
function tokenEnd(bytes: Uint8Array, i: number): number {
  while (i < bytes.length) {
    const c = bytes[i]!;
    if (c === COMMA || c === CLOSE_ARRAY || c === CLOSE_OBJECT || isSpace(c)) break;
    i++;
  }
  return i;
}

/**
 * Scans the values of a container from `from` (inside it) up to `limit`: where its last value that
 * ends before `limit` is followed by a comma (`comma`, -1 for none), or where the container closes
 * (`close`), if that comes before `limit`. Brackets are only counted: the runs found are checked
 * by JSON.parse.
 */
function scanRun(bytes: Buffer, from: number, limit: number): { comma: number; close: number } {
  let depth = 0;
  let comma = -1;
  const end = Math.min(limit, bytes.length);
  for (let i = from; i < end; i++) {
    const c = bytes[i]!;
    if (c === QUOTE) {
      const after = stringEnd(bytes, i);
      if (after === -1 || after > end) break;
      i = after - 1;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) depth++;
    else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (depth === 0) return { comma, close: i };
      depth--;
    } else if (c === COMMA && depth === 0) comma = i;
  }
  return { comma, close: -1 };
}

/** Sets a member as JSON.parse does: an own property, `__proto__` included (never the prototype). */
function setMember(target: Record<string, unknown>, key: string, value: unknown) {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  else target[key] = value;
}

interface Frame {
  container: unknown[] | Record<string, unknown>;
  /** The character that closes it. */
  close: number;
  /** A value must come next (just after a comma): a closing bracket there is an error. */
  afterComma: boolean;
}

const syntaxError = (what: string, at: number) => new SyntaxError(`${what} in JSON at byte ${at}`);

/**
 * `JSON.parse` of the text whose UTF-8 bytes are `json` (an answer's body, a file), a slice at a
 * time (see the top of this file). A text of one slice or less is parsed at once.
 */
export async function parseJsonInSlices(json: Uint8Array, options: SliceOptions = {}): Promise<unknown> {
  const sliceChars = options.sliceChars ?? SLICE_CHARS;
  const pause = options.pause ?? nextTurnAfterIo;
  const bytes = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  const text = (from: number, to: number) => bytes.toString('utf8', from, to);
  let i = skipSpace(bytes, 0);
  const first = bytes[i];
  if (bytes.length <= sliceChars || (first !== OPEN_ARRAY && first !== OPEN_OBJECT))
    return JSON.parse(text(0, bytes.length));

  const root: unknown[] | Record<string, unknown> = first === OPEN_ARRAY ? [] : {};
  const stack: Frame[] = [
    { container: root, close: first === OPEN_ARRAY ? CLOSE_ARRAY : CLOSE_OBJECT, afterComma: false },
  ];
  i++;
  let sincePause = 0;
  /** After a value of the top frame: a comma (more values) or its closing bracket. */
  const afterValue = (frame: Frame) => {
    i = skipSpace(bytes, i);
    const c = bytes[i];
    if (c === COMMA) {
      frame.afterComma = true;
      i++;
    } else if (c === frame.close) {
      stack.pop();
      i++;
      if (stack.length > 0) afterValue(stack.at(-1)!);
    } else
      throw syntaxError(
        c === undefined ? 'Unexpected end' : `Unexpected character ${String.fromCharCode(c)}`,
        i,
      );
  };

  while (stack.length > 0) {
    // A run ends at the last comma before a slice's end, so it is a little less than a slice: a
    // pause before each run, unless what came since the last was small (closing brackets).
    if (sincePause >= sliceChars / 2) {
      sincePause = 0;
      await pause();
    }
    const frame = stack.at(-1)!;
    const isArray = Array.isArray(frame.container);
    const start = skipSpace(bytes, i);
    if (bytes[start] === frame.close) {
      if (frame.afterComma) throw syntaxError('Unexpected character after a comma', start);
      i = start;
      afterValue(frame); // closes it
      continue;
    }
    const run = scanRun(bytes, start, start + sliceChars);
    const end = run.close !== -1 ? run.close : run.comma;
    if (end !== -1) {
      // Whole values up to the comma or the closing bracket: one JSON.parse.
      if (skipSpace(bytes, start) === end) throw syntaxError('Unexpected character', end);
      const values = text(start, end);
      const parsed: unknown = JSON.parse(isArray ? `[${values}]` : `{${values}}`);
      if (isArray) for (const value of parsed as unknown[]) (frame.container as unknown[]).push(value);
      else {
        const members = parsed as Record<string, unknown>;
        for (const key of Object.keys(members))
          setMember(frame.container as Record<string, unknown>, key, members[key]);
      }
      sincePause += end - start;
      frame.afterComma = false;
      i = end;
      afterValue(frame);
      continue;
    }
    // The next value is larger than a slice (the scan of a slice found no end): its key (objects),
    // then the value itself.
    sincePause += sliceChars;
    let key: string | undefined;
    i = start;
    if (!isArray) {
      if (bytes[i] !== QUOTE) throw syntaxError('Expected a property name', i);
      const keyEnd = stringEnd(bytes, i);
      if (keyEnd === -1) throw syntaxError('Unterminated string', i);
      key = JSON.parse(text(i, keyEnd)) as string;
      i = skipSpace(bytes, keyEnd);
      if (bytes[i] !== COLON) throw syntaxError("Expected ':' after a property name", i);
      i = skipSpace(bytes, i + 1);
    }
    const c = bytes[i];
    let value: unknown;
    let entered: Frame | undefined;
    if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (stack.length >= MAX_SLICED_DEPTH)
        throw syntaxError(`Large values nested deeper than ${MAX_SLICED_DEPTH} levels`, i);
      value = c === OPEN_ARRAY ? [] : {};
      entered = {
        container: value as Frame['container'],
        close: c === OPEN_ARRAY ? CLOSE_ARRAY : CLOSE_OBJECT,
        afterComma: false,
      };
      i++;
    } else {
      // A string (or number) longer than a slice: parsed whole, nothing can be cut out of it.
      const valueEnd = c === QUOTE ? stringEnd(bytes, i) : tokenEnd(bytes, i);
      if (valueEnd === -1) throw syntaxError('Unterminated string', i);
      value = JSON.parse(text(i, valueEnd));
      sincePause += valueEnd - i;
      i = valueEnd;
    }
    if (isArray) (frame.container as unknown[]).push(value);
    else setMember(frame.container as Record<string, unknown>, key!, value);
    frame.afterComma = false;
    if (entered) stack.push(entered);
    else afterValue(frame);
  }
  if (skipSpace(bytes, i) !== bytes.length)
    throw syntaxError('Unexpected non-whitespace character after JSON', i);
  return root;
}

/** A plain object or array: the containers written member by member (anything else is JSON.stringify's). */
function isPlainContainer(value: unknown): value is unknown[] | Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
  if (Array.isArray(value)) return true;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/**
 * About how many characters `value` takes as JSON, counted from its structure (keys, strings, a few
 * characters for any other value) and no further than just past `budget`: telling a large value
 * costs about one slice.
 */
function sizeUpTo(value: unknown, budget: number): number {
  let size = 0;
  const pending: unknown[] = [value];
  while (pending.length > 0 && size <= budget) {
    const next = pending.pop();
    if (typeof next === 'string') size += next.length + 2;
    else if (next !== null && typeof next === 'object') {
      if (Array.isArray(next)) {
        size += 2 + next.length;
        for (let k = 0; k < next.length && size <= budget; k++) pending.push(next[k]);
      } else {
        const keys = Object.keys(next);
        size += 2;
        for (let k = 0; k < keys.length && size <= budget; k++) {
          size += keys[k]!.length + 4;
          pending.push((next as Record<string, unknown>)[keys[k]!]);
        }
      }
    } else size += 8;
  }
  return size;
}

/**
 * `JSON.stringify(value, null, indent)` in pieces of about a slice each, with a pause after each
 * piece (see the top of this file). Yields nothing when JSON.stringify would give undefined.
 */
export async function* jsonInSlices(
  value: unknown,
  indent: number | string = '',
  options: SliceOptions = {},
): AsyncGenerator<string> {
  const sliceChars = options.sliceChars ?? SLICE_CHARS;
  const pause = options.pause ?? nextTurnAfterIo;
  // As JSON.stringify takes its space argument: at most 10 spaces or characters.
  const unit =
    typeof indent === 'number' ? ' '.repeat(Math.min(10, Math.max(0, indent))) : indent.slice(0, 10);
  const colon = unit === '' ? ':' : ': ';
  /** Where a line at `depth` starts (nothing when the JSON is written on one line). */
  const lineAt = (depth: number) => (unit === '' ? '' : `\n${unit.repeat(depth)}`);
  /** JSON.stringify's text of `v` as it stands at `depth`: each line after the first indented by it. */
  const atDepth = (text: string, depth: number) =>
    unit === '' || depth === 0 ? text : text.replaceAll('\n', lineAt(depth));

  const pieces: string[] = [];
  let pending = 0;
  const put = (text: string) => {
    pieces.push(text);
    pending += text.length;
  };
  const ancestors = new Set<object>();
  const large = (v: unknown): v is unknown[] | Record<string, unknown> =>
    isPlainContainer(v) && sizeUpTo(v, sliceChars) > sliceChars;

  /**
   * The members `from` to `to` of a container at `depth`, written by one JSON.stringify of a
   * container of just them, without its brackets; '' when JSON leaves them all out.
   */
  const members = (
    v: unknown[] | Record<string, unknown>,
    keys: string[] | undefined,
    from: number,
    to: number,
    depth: number,
  ) => {
    let part: unknown[] | Record<string, unknown>;
    if (keys === undefined) part = (v as unknown[]).slice(from, to);
    else {
      part = {};
      for (let k = from; k < to; k++) setMember(part, keys[k]!, (v as Record<string, unknown>)[keys[k]!]);
    }
    const text = JSON.stringify(part, null, unit);
    if (text === '{}' || text === '[]') return '';
    return atDepth(unit === '' ? text.slice(1, -1) : text.slice(1, -2), depth);
  };

  async function* write(v: unknown, depth: number): AsyncGenerator<string> {
    if (!large(v)) {
      const text = JSON.stringify(v, null, unit) as string | undefined;
      if (text !== undefined) put(atDepth(text, depth));
      return;
    }
    if (ancestors.has(v)) throw new TypeError('Converting circular structure to JSON');
    ancestors.add(v);
    const keys = Array.isArray(v) ? undefined : Object.keys(v);
    const count = keys === undefined ? (v as unknown[]).length : keys.length;
    const memberAt = (k: number) =>
      keys === undefined ? (v as unknown[])[k] : (v as Record<string, unknown>)[keys[k]!];
    put(keys === undefined ? '[' : '{');
    let written = false;
    /** The run of small members not written yet: from `runFrom`, about `runSize` characters. */
    let runFrom = 0;
    let runSize = 0;
    const writeRun = (to: number) => {
      const text = to > runFrom ? members(v, keys, runFrom, to, depth) : '';
      if (text !== '') {
        put(written ? `,${text}` : text);
        written = true;
      }
      runFrom = to;
      runSize = 0;
    };
    for (let k = 0; k < count; k++) {
      const member = memberAt(k);
      if (large(member)) {
        writeRun(k);
        put(
          `${written ? ',' : ''}${lineAt(depth + 1)}${keys === undefined ? '' : `${JSON.stringify(keys[k])}${colon}`}`,
        );
        written = true;
        yield* write(member, depth + 1);
        runFrom = k + 1;
      } else {
        runSize += sizeUpTo(member, sliceChars) + (keys === undefined ? 2 : keys[k]!.length + 4);
        if (runSize >= sliceChars) writeRun(k + 1);
      }
      if (pending >= sliceChars) {
        yield pieces.join('');
        pieces.length = 0;
        pending = 0;
        await pause();
      }
    }
    writeRun(count);
    put(`${written ? lineAt(depth) : ''}${keys === undefined ? ']' : '}'}`);
    ancestors.delete(v);
  }

  yield* write(value, 0);
  if (pieces.length > 0) yield pieces.join('');
}
