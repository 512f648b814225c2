/**
 * One owner of the result set's names (issue #37): the suffixes of a document's result files are
 * spelled in daemon/src/outputs/result-set.ts and nowhere else in daemon/src, so results, review,
 * the review decisions and retention cannot drift apart. Comments may name them. The checker is
 * proven on a planted source.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { sourceFiles } from './imports.ts';

const repo = join(import.meta.dirname, '../..');
const OWNER = 'daemon/src/outputs/result-set.ts';
/**
 * A suffix in a string or template literal: '.json', ".fields.csv", `${base}.lines.csv`,
 * `${base}.json` (a pulled document's `document-${id}.json` is not a result set's).
 */
const SPELLED = /['"`][^'"`\n]*\.(?:fields\.csv|lines\.csv)['"`]|['"`]\.json['"`]|\$\{base\}\.json`/;

/** The lines of `source` that spell a result suffix outside comments. */
function spelledSuffixes(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return code.split('\n').filter((line) => SPELLED.test(line));
}

describe('the result set has one owner', () => {
  test('no file of daemon/src but result-set.ts spells a result file suffix', () => {
    const offenders = sourceFiles(repo)
      .filter((f) => f.startsWith('daemon/src/') && f !== OWNER)
      .flatMap((f) => spelledSuffixes(readFileSync(join(repo, f), 'utf8')).map((l) => `${f}: ${l.trim()}`));
    expect(offenders).toEqual([]);
    expect(spelledSuffixes(readFileSync(join(repo, OWNER), 'utf8'))).toHaveLength(3);
  });

  test('the checker bites: a planted suffix is named, one in a comment or another extension is not', () => {
    const planted = [
      "for (const suffix of ['.json', '.fields.csv', '.lines.csv'])",
      'put(`${base}.lines.csv`, text);',
      'const report = `${path}.error.json`; // .fields.csv in a comment',
      '/** The .json result. */',
      'const review = `${base}.review.json`;',
      'written.push(await put(`${base}.json`, text));',
    ].join('\n');
    expect(spelledSuffixes(planted)).toEqual([
      "for (const suffix of ['.json', '.fields.csv', '.lines.csv'])",
      'put(`${base}.lines.csv`, text);',
      'written.push(await put(`${base}.json`, text));',
    ]);
  });
});
