/**
 * Which rows a `retry` or an `approve` names: by path, or by a pattern (`*` within a name, `**`
 * across folders) of the path from the watched folder or of the file name; `also` gives more
 * names a row goes by (a file waiting in review_dir is named as found or as waiting). Each name
 * given must name a row: those that name none come back in `unmatched`.
 */
import { basename, sep } from 'node:path';
import { globMatcher } from '../config/config.ts';

export interface NamedRow {
  id: number;
  path: string;
  rel: string;
}

export interface Named {
  ids: number[];
  /** The names given that name no row: said back to the user, so a typo is not a silent no-op. */
  unmatched: string[];
}

export function namedIds<R extends NamedRow>(
  rows: R[],
  patterns: string[],
  also: (row: R) => Array<[path: string, rel: string]> = () => [],
): Named {
  const matchers = patterns.map((p) => globMatcher(p));
  const names = (p: number, path: string, rel: string) =>
    patterns[p] === path || matchers[p]!(rel.split(sep).join('/')) || matchers[p]!(basename(path));
  const matched = new Set<number>();
  const ids = rows
    .filter((r) => {
      let hit = false;
      for (const [path, rel] of [[r.path, r.rel] as [string, string], ...also(r)])
        for (let p = 0; p < patterns.length; p++)
          if (names(p, path, rel)) {
            hit = true;
            matched.add(p);
          }
      return hit;
    })
    .map((r) => r.id);
  return { ids, unmatched: patterns.filter((_, p) => !matched.has(p)) };
}
