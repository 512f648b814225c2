/**
 * zod's issues said in the words of whoever wrote the YAML file, once for every file of both
 * binaries (yaml.ts): what is wrong with the key and what a valid value looks like ("is
 * missing: set it to the folder where ...", "must be a whole number of days (1 or more), e.g. 30,
 * not 0.0001"), never the library's "Invalid input: expected int, received number".
 *
 * A sentence is made from the kind of issue and from the key's schema (its type, range, format,
 * default), its name (`_ms`, `_days`: the unit) and its meaning (`KeyMeanings`, by key name), so a
 * new key is said plainly without a word written for it. Messages a schema gives itself (a
 * `.check`, a `.refine`, a pattern's message) are its own words and are kept as they are.
 */
import type { z } from 'zod/v4';
import { didYouMean } from './suggest.ts';

/**
 * What a key means, as the rest of "set it to ...": by dotted key path without list positions,
 * the longest match first ("mailboxes.after.folder", then "after.folder", then "folder").
 */
export type KeyMeanings = Readonly<Record<string, string>>;

/** The parts of a zod schema's definition this file reads. */
interface Def {
  type: string;
  innerType?: z.ZodType;
  defaultValue?: unknown;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Record<string, string | number>;
  values?: unknown[];
  in?: z.ZodType;
}

/** What zod computed of a schema's checks: its range, length and format. */
interface Bag {
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  format?: string;
}

const WRAPPERS = new Set(['optional', 'default', 'prefault', 'nullable', 'readonly', 'nonoptional', 'catch']);

interface Node {
  /** The schema under its wrappers. */
  schema: z.ZodType;
  def: Def;
  bag: Bag;
  /** The key's default, when it has one. */
  fallback?: unknown;
  description?: string;
}

function unwrap(schema: z.ZodType): Node {
  let s = schema;
  let fallback: unknown;
  let description = (s as { description?: string }).description;
  for (;;) {
    const def = s.def as Def;
    if (def.type === 'default' && fallback === undefined) fallback = def.defaultValue;
    if (def.type === 'pipe' && def.in) s = def.in;
    else if (WRAPPERS.has(def.type) && def.innerType) s = def.innerType;
    else break;
    description ??= (s as { description?: string }).description;
  }
  return {
    schema: s,
    def: s.def as Def,
    bag: (s as unknown as { _zod: { bag: Bag } })._zod.bag,
    fallback,
    description,
  };
}

/** The schema of the key at `path` (a union: the first of its options that has the key). */
export function nodeAt(schema: z.ZodType, path: ReadonlyArray<PropertyKey>): Node | undefined {
  let node = unwrap(schema);
  for (const part of path) {
    const { def } = node;
    let next: z.ZodType | undefined;
    if (def.type === 'object') next = def.shape?.[String(part)];
    else if (def.type === 'array') next = def.element;
    else if (def.type === 'record') next = def.valueType;
    else if (def.type === 'union')
      next = def.options?.map((o) => unwrap(o)).find((o) => o.def.shape?.[String(part)] !== undefined)?.def
        .shape?.[String(part)];
    if (!next) return undefined;
    node = unwrap(next);
  }
  return node;
}

/** The unit a key's name gives its number: retention.processed_days, poll.interval_ms. */
const UNITS: ReadonlyArray<readonly [RegExp, string, number | undefined]> = [
  [/_ms$/, 'milliseconds', 1000],
  [/_days$/, 'days', 30],
  [/_mb$/, 'MiB', 64],
  [/_bytes$/, 'bytes', 1_048_576],
  // A port's usual value depends on what listens there (8080, 993): no example.
  [/^port$/, '', undefined],
];

/** "1 or more", "from 0 to 65535", "more than 0": a number's range, when it has one. */
function range(bag: Bag, whole: boolean): string {
  const safe = (n: number | undefined) =>
    n !== undefined && Math.abs(n) < Number.MAX_SAFE_INTEGER ? n : undefined;
  let low = safe(bag.minimum);
  const high = safe(bag.maximum);
  let above: number | undefined = safe(bag.exclusiveMinimum);
  // For a whole number, "more than 0" is "1 or more".
  if (above !== undefined && whole) [low, above] = [Math.floor(above) + 1, undefined];
  if (low !== undefined && high !== undefined) return `from ${low} to ${high}`;
  if (low !== undefined) return `${low} or more`;
  if (above !== undefined) return `more than ${above}`;
  if (high !== undefined) return `at most ${high}`;
  return '';
}

/** A value within the range, for "e.g.": the key's default, its unit's usual value, else its lowest. */
function exampleNumber(node: Node, key: string): number | undefined {
  if (typeof node.fallback === 'number') return node.fallback;
  const { bag } = node;
  const fits = (n: number) =>
    (bag.minimum === undefined || n >= bag.minimum) &&
    (bag.maximum === undefined || n <= bag.maximum) &&
    (bag.exclusiveMinimum === undefined || n > bag.exclusiveMinimum);
  const unit = UNITS.find(([pattern]) => pattern.test(key));
  if (unit) return unit[2] !== undefined && fits(unit[2]) ? unit[2] : undefined;
  if (/_id$/.test(key) && fits(3)) return 3;
  if (bag.maximum === 1 && fits(0.8)) return 0.8;
  for (const n of [1, bag.minimum, (bag.exclusiveMinimum ?? NaN) + 1])
    if (n !== undefined && Number.isFinite(n) && fits(n)) return n;
  return undefined;
}

const FORMATS: Record<string, string> = {
  url: 'a URL, e.g. https://api.example.com',
  date: 'a date such as 2026-01-31',
  datetime: 'a date and time with its offset such as 2026-01-31T08:00:00+01:00',
  email: 'an e-mail address, e.g. ap@example.com',
};

const quoted = (value: unknown) =>
  typeof value === 'string' && /[\s:#,]/.test(value) ? `"${value}"` : String(value);

/** What a valid value of the node looks like: its type with range and unit, and an example. */
export function phrase(node: Node, key = ''): string {
  const { def, bag } = node;
  switch (def.type) {
    case 'string': {
      if (bag.format && FORMATS[bag.format]) return FORMATS[bag.format]!;
      return typeof node.fallback === 'string' && node.fallback !== ''
        ? `text, e.g. ${quoted(node.fallback)}`
        : 'text';
    }
    case 'number': {
      const whole = bag.format === 'safeint' || bag.format === 'int32';
      const unit = UNITS.find(([pattern]) => pattern.test(key))?.[1];
      const within = range(bag, whole);
      const example = exampleNumber(node, key);
      return `${whole ? 'a whole number' : 'a number'}${unit ? ` of ${unit}` : ''}${within ? ` (${within})` : ''}${
        example !== undefined ? `, e.g. ${example}` : ''
      }`;
    }
    case 'boolean':
      return 'true or false';
    case 'enum':
      return `one of: ${Object.values(def.entries ?? {}).join(', ')}`;
    case 'literal':
      return (def.values ?? []).length === 1 ? quoted(def.values![0]) : `one of: ${def.values!.join(', ')}`;
    case 'array': {
      const element = nodeAt(node.schema, [0]);
      const atLeast =
        bag.minimum && bag.minimum > 0 ? ` of ${bag.minimum === 1 ? 'one' : bag.minimum} or more` : '';
      if (element && (element.def.type === 'enum' || element.def.type === 'literal'))
        return `a list${atLeast || ' of some'} of: ${phrase(element).replace(/^one of: /, '')}`;
      return `a list${atLeast ? `${atLeast} entries` : ''} (one line per entry, starting with "- ")`;
    }
    case 'object':
      return 'a section (its keys on the lines below it, indented)';
    case 'record':
      return 'a section of "name: value" lines';
    case 'union':
      return (def.options ?? []).map((o) => phrase(unwrap(o), key)).join(', or ');
    default:
      return 'a value of another kind';
  }
}

/** How a wrong value is shown back: `"three"`, `0.0001`, `a list`. */
function shown(input: unknown): string {
  if (typeof input === 'string') {
    if (input === '') return 'empty text';
    return JSON.stringify(input.length > 40 ? `${input.slice(0, 40)}…` : input);
  }
  if (Array.isArray(input)) return input.length ? 'a list' : 'an empty list';
  if (input === null) return 'an empty value';
  if (typeof input === 'object') return 'a section';
  return String(input);
}

/** The meaning of the key at `path`, by its longest dotted name in `meanings`. */
function meaningOf(path: ReadonlyArray<PropertyKey>, meanings: KeyMeanings): string | undefined {
  const names = path.filter((p) => typeof p === 'string');
  for (let i = 0; i < names.length; i++) {
    const meaning = meanings[names.slice(i).join('.')];
    if (meaning) return meaning;
  }
  return undefined;
}

/** The parts of a raw zod issue the sentences use. */
interface RawIssue {
  code?: string;
  path?: PropertyKey[];
  input?: unknown;
  expected?: string;
  origin?: string;
  minimum?: number | bigint;
  maximum?: number | bigint;
  values?: unknown[];
  format?: string;
  divisor?: number;
  note?: string;
}

/**
 * zod's error map for a file checked with `schema` (pass it as `error` to safeParse, with
 * reportInput): the sentence for an issue, or undefined for one inside a union's options (zod asks
 * for those without their path; the union's own issue is said instead).
 */
export function plainWords(schema: z.ZodType, meanings: KeyMeanings = {}) {
  return (issue: RawIssue): string | undefined => {
    const path = issue.path;
    if (path === undefined) return undefined;
    const key = String(path.filter((p) => typeof p === 'string').at(-1) ?? '');
    const node = nodeAt(schema, path);
    const what = node ? phrase(node, key) : 'a value of another kind';
    const setIt = `set it to ${meaningOf(path, meanings) ?? what}`;
    const mustBe = (expected = what) => `must be ${expected}, not ${shown(issue.input)}`;
    if (issue.input === undefined && issue.code !== 'invalid_union') return `is missing: ${setIt}`;
    if (issue.input === null) return `has no value: ${setIt}`;
    switch (issue.code) {
      case 'invalid_type':
        return mustBe();
      case 'too_small':
        if (issue.origin === 'string' && issue.input === '')
          return meaningOf(path, meanings) || what !== 'text'
            ? `is empty: ${setIt}`
            : 'is empty: give a value or remove it';
        if (issue.origin === 'string') return mustBe(`${what} of at least ${issue.minimum} characters`);
        return mustBe();
      case 'too_big':
        if (issue.origin === 'string') return `is longer than ${issue.maximum} characters: shorten it`;
        if (issue.origin === 'array') return `has more than ${issue.maximum} entries: remove some`;
        return mustBe();
      case 'invalid_value':
      case 'invalid_format':
        return `${mustBe()}${typeof issue.input === 'string' && issue.values ? didYouMean(issue.input, issue.values.map(String)) : ''}`;
      case 'invalid_union': {
        // A discriminated union's tag names the option (a mailbox's after.action): its values.
        const union = nodeAt(schema, path.slice(0, -1));
        const tag = union?.def.type === 'union' && union.def.discriminator === key;
        if (tag) {
          const values = (union.def.options ?? []).flatMap((o) => {
            const tagOf = unwrap(o).def.shape?.[key];
            return tagOf ? (unwrap(tagOf).def.values ?? []) : [];
          });
          const given =
            issue.input && typeof issue.input === 'object'
              ? (issue.input as Record<string, unknown>)[key]
              : issue.input;
          if (given === undefined)
            return `is missing: set it to ${meaningOf(path, meanings) ?? `one of: ${values.join(', ')}`}`;
          return `must be one of: ${values.join(', ')}, not ${shown(given)}${typeof given === 'string' ? didYouMean(given, values.map(String)) : ''}`;
        }
        return mustBe();
      }
      case 'invalid_key':
        return `has a name that is not ${node?.def.keyType ? phrase(unwrap(node.def.keyType)) : 'text'}`;
      case 'invalid_element':
        return `has an entry that is not ${what}`;
      case 'not_multiple_of':
        return mustBe(`a multiple of ${issue.divisor}`);
      default:
        return `is not valid here: ${setIt}`;
    }
  };
}
