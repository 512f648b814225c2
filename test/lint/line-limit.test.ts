/**
 * A file holds one job: at most 400 lines in daemon/src and shared/src. The few files over it are
 * named below with why; an exception that fits again must leave the list, so the list only shrinks.
 * The checker is proven on a planted tree.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { sourceFiles } from './imports.ts';

const repo = join(import.meta.dirname, '../..');
const LIMIT = 400;
const UNDER = ['daemon/src/', 'shared/src/'];

/** The files allowed over the limit, and why. */
const EXCEPTIONS: Record<string, string> = {
  // Tables: one row per API operation; splitting it would scatter one list.
  'shared/src/core/operations.ts': 'the operation table, one entry per operation of the API',
  // One state machine: split, the transitions of one state would be read in several files.
  'daemon/src/domain/lifecycle.ts': "one state machine: every decision about a file's fate, in one place",
};

function overLimit(root: string, files: string[], exceptions: Record<string, string>): string[] {
  const problems: string[] = [];
  for (const file of files) {
    if (!UNDER.some((u) => file.startsWith(u))) continue;
    const lines = readFileSync(join(root, file), 'utf8').split('\n').length - 1;
    if (lines > LIMIT && !(file in exceptions))
      problems.push(
        `${file}: ${lines} lines, over ${LIMIT}: split it by job (or name it in EXCEPTIONS with why)`,
      );
    if (lines <= LIMIT && file in exceptions)
      problems.push(`${file}: ${lines} lines, within ${LIMIT}: remove it from EXCEPTIONS`);
  }
  for (const file of Object.keys(exceptions))
    if (!files.includes(file)) problems.push(`${file}: in EXCEPTIONS but not in the repo`);
  return problems;
}

describe('the line limit', () => {
  test(`files under ${UNDER.join(', ')} have at most ${LIMIT} lines, but the named exceptions`, () => {
    expect(overLimit(repo, sourceFiles(repo), EXCEPTIONS)).toEqual([]);
  });

  test('a planted tree: a long file is named, a stale or missing exception too', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-lines-'));
    try {
      const put = async (path: string, lines: number) => {
        await mkdir(join(dir, path, '..'), { recursive: true });
        await writeFile(join(dir, path), 'export {};\n'.repeat(lines));
      };
      await put('daemon/src/long.ts', LIMIT + 1);
      await put('daemon/src/fits.ts', LIMIT);
      await put('shared/src/core/table.ts', LIMIT + 50);
      await put('shared/src/core/shrunk.ts', 10);
      await put('test/long.ts', LIMIT * 2);
      execFileSync('git', ['init', '-q'], { cwd: dir });
      const exceptions = {
        'shared/src/core/table.ts': 'a table',
        'shared/src/core/shrunk.ts': 'was long',
        'gone.ts': 'x',
      };
      expect(overLimit(dir, sourceFiles(dir), exceptions).sort()).toEqual([
        `daemon/src/long.ts: ${LIMIT + 1} lines, over ${LIMIT}: split it by job (or name it in EXCEPTIONS with why)`,
        'gone.ts: in EXCEPTIONS but not in the repo',
        `shared/src/core/shrunk.ts: 10 lines, within ${LIMIT}: remove it from EXCEPTIONS`,
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
