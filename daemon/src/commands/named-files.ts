/**
 * Which rows a `retry` or an `approve` names: by path, or by a pattern (`*` within a name, `**`
 * across folders) of the path from the watched folder or of the file name; `also` gives more
 * names a row goes by (a file waiting in review_dir is named as found or as waiting).
 */
import { basename, sep } from 'node:path';
import { globMatcher } from '../common/config.ts';

export interface NamedRow {
  id: number;
  path: string;
  rel: string;
}

export function namedIds<R extends NamedRow>(
  rows: R[],
  patterns: string[],
  also: (row: R) => Array<[path: string, rel: string]> = () => [],
): number[] {
  const matchers = patterns.map((p) => globMatcher(p));
  const named = (path: string, rel: string) =>
    patterns.includes(path) || matchers.some((m) => m(rel.split(sep).join('/')) || m(basename(path)));
  return rows
    .filter((r) => [[r.path, r.rel] as [string, string], ...also(r)].some(([p, rel]) => named(p, rel)))
    .map((r) => r.id);
}
