/** YAML files checked with zod, whose mistakes name the file, the line and the key. */
import { readFileSync } from 'node:fs';
import type { Document, LineCounter } from 'yaml';
import type { z } from 'zod/v4';
import { ConfigError, keysAt } from '../common/config.ts';
import { didYouMean } from '../common/suggest.ts';
import { yaml } from '../common/lazy.ts';

export type Path = ReadonlyArray<PropertyKey>;

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

function locator(doc: Document, counter: LineCounter) {
  return (path: Path): number | undefined => {
    for (let n = path.length; n >= 0; n--) {
      const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n) as unknown[], true);
      if (yaml().isNode(node) && node.range) return counter.linePos(node.range[0]).line;
    }
    return undefined;
  };
}

/** Parses `text` (named `file` in messages) and checks it with `schema`. */
export function parseYaml<S extends z.ZodType>(text: string, file: string, schema: S): Located<z.output<S>> {
  const { LineCounter, parseDocument } = yaml();
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, prettyErrors: true });
  if (doc.errors.length) {
    const first = doc.errors[0]!;
    const line = first.linePos?.[0]?.line;
    throw new ConfigError(
      `${file}${line ? `:${line}` : ''}: not valid YAML: ${first.message.split('\n')[0]}`,
    );
  }
  const lineOf = locator(doc, counter);
  const at = (path: Path) => {
    const line = lineOf(path);
    return `${file}${line ? `:${line}` : ''} ${keyPath(path)}`;
  };
  const parsed = schema.safeParse(doc.toJS() ?? {});
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
      return keys
        .map((key) => {
          const path = key === undefined ? issue.path : [...issue.path, key];
          const message =
            key === undefined ? issue.message : `unknown key${didYouMean(key, keysAt(schema, issue.path))}`;
          return `  ${at(path)}: ${message}`;
        })
        .join('\n');
    });
    throw new ConfigError(`${file}: invalid\n${lines.join('\n')}`);
  }
  return { data: parsed.data, file, lineOf, at };
}

export function readYamlFile<S extends z.ZodType>(file: string, schema: S): Located<z.output<S>> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(
      `${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  return parseYaml(text, file, schema);
}
