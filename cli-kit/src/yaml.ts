/**
 * The one YAML loader of both binaries (docex-sync's config, docex's profiles and templates as
 * code): a file checked with zod, whose every mistake is one line `file:line key: message`, all at
 * once; a syntax error names the line and column, shows the line with a caret under the spot and
 * says what to do.
 */
import { readFileSync } from 'node:fs';
import type { Document, LineCounter } from 'yaml';
import type { z } from 'zod/v4';
import { ConfigError } from './errors.ts';
import { yaml } from './lazy.ts';
import { plainWords, type KeyMeanings } from './plain-words.ts';
import { didYouMean } from './suggest.ts';

export type Path = ReadonlyArray<PropertyKey>;

/** watch[0].template_id */
export const keyPath = (path: Path) =>
  path
    .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
    .join('')
    .replace(/^\./, '') || '(top level)';

export interface Located<T> {
  data: T;
  file: string;
  /** The line of the value at `path`, or of its nearest parent that is in the file. */
  lineOf(path: Path): number | undefined;
  /** "setup.yaml:12 templates[0].folder" */
  at(path: Path): string;
}

export interface YamlOptions {
  /** The first line of a list of mistakes after the file's name (default "invalid"). */
  invalid?: string;
  /** The command that checks the file again once fixed, for a syntax error's last line. */
  recheck?: string;
  /** What its keys mean, for "is missing: set it to ..." (plain-words.ts). */
  meanings?: KeyMeanings;
}

/**
 * The keys an object in `schema` accepts at `path` (through defaults, optionals, arrays and unions:
 * a union's are those of every option, e.g. a mailbox's `after: { action: move, folder }`).
 */
export function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  const def = schema.def as {
    innerType?: z.ZodType;
    element?: z.ZodType;
    shape?: Record<string, z.ZodType>;
    options?: z.ZodType[];
    valueType?: z.ZodType;
  };
  if (def.innerType) return keysAt(def.innerType, path);
  if (def.options) return [...new Set(def.options.flatMap((option) => keysAt(option, path)))];
  if (path.length === 0) return Object.keys(def.shape ?? {});
  const [head, ...rest] = path;
  if (def.element && typeof head === 'number') return keysAt(def.element, rest);
  // A record's entries (a review's `fields`) share one schema, whatever their names.
  if (def.valueType) return keysAt(def.valueType, rest);
  const next = def.shape?.[String(head)];
  return next ? keysAt(next, rest) : [];
}

function locator(doc: Document, counter: LineCounter) {
  return (path: Path): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n) as unknown[], true);
      if (yaml().isNode(node) && node.range) return counter.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

/** A syntax error as the line and column, the reason, the line itself with a caret under the spot, and what to do. */
function syntaxProblem(
  file: string,
  error: { message: string; linePos?: Array<{ line: number; col: number }> },
  recheck: string | undefined,
) {
  const [first = '', ...rest] = error.message.split('\n');
  const at = error.linePos?.[0];
  const reason = first.replace(/ at line \d+, column \d+:?$/, '');
  return [
    `${file}: not valid YAML${at ? ` at line ${at.line}, column ${at.col}` : ''}: ${reason}`,
    ...rest.filter((line) => line.trim() !== '').map((line) => `  ${line}`),
    `  Fix it there (a value containing ": " or "#" needs quotes)${recheck ? `, then: ${recheck}` : ''}`,
  ].join('\n');
}

/** The mistakes of a file: its name and `invalid`, then one indented line per problem. */
export const invalidFile = (file: string, problems: string[], invalid = 'invalid') =>
  new ConfigError(`${file}: ${invalid}\n${problems.map((p) => `  ${p}`).join('\n')}`, problems);

/**
 * `data` checked with `schema`: its value, or one line `<at(path)>: message` per mistake, each in the
 * file's own words (plain-words.ts), unknown keys with "did you mean".
 */
export function check<S extends z.ZodType>(
  schema: S,
  data: unknown,
  at: (path: Path) => string,
  meanings?: KeyMeanings,
): { success: true; data: z.output<S> } | { success: false; problems: string[] } {
  const parsed = schema.safeParse(data, { reportInput: true, error: plainWords(schema, meanings) });
  if (parsed.success) return { success: true, data: parsed.data };
  const problems = parsed.error.issues.flatMap((issue) => {
    if (issue.code !== 'unrecognized_keys') return [`${at(issue.path)}: ${issue.message}`];
    const known = keysAt(schema, issue.path);
    return issue.keys.map((key) => `${at([...issue.path, key])}: unknown key${didYouMean(key, known)}`);
  });
  return { success: false, problems };
}

/** Parses `text` (named `file` in messages) and checks it with `schema`. */
export function parseYaml<S extends z.ZodType>(
  text: string,
  file: string,
  schema: S,
  options: YamlOptions = {},
): Located<z.output<S>> {
  const { LineCounter, parseDocument } = yaml();
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: true });
  if (doc.errors.length) throw new ConfigError(syntaxProblem(file, doc.errors[0]!, options.recheck));
  const lineOf = locator(doc, counter);
  const at = (path: Path) => {
    const line = lineOf(path);
    return `${file}${line ? `:${line}` : ''} ${keyPath(path)}`;
  };
  const checked = check(schema, doc.toJS() ?? {}, at, options.meanings);
  if (!checked.success) throw invalidFile(file, checked.problems, options.invalid);
  return { data: checked.data, file, lineOf, at };
}

export function readYamlFile<S extends z.ZodType>(
  file: string,
  schema: S,
  options: YamlOptions = {},
): Located<z.output<S>> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `${file}: cannot read (${code ?? (error as Error).message})${unreadable[code ?? ''] ?? ''}`,
    );
  }
  return parseYaml(text, file, schema, options);
}

/** What the usual reasons a file cannot be read mean, and what to do (the code alone says little at 3 a.m.). */
const denied = ': permission denied; let the user this runs as read it (or run as a user who can)';
const unreadable: Record<string, string> = {
  ENOENT: ': there is no file there; check the path (relative paths start from the current folder)',
  EACCES: denied,
  EPERM: denied,
  EISDIR: ': that is a folder; give the path of the file in it',
};
