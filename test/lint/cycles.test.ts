/**
 * No import cycle anywhere in the repo (type-only imports count: they tie two designs together).
 * The checker is proven on a deliberately bad tree made by the test.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { importCycles, importGraph, sourceFiles } from './imports.ts';

const repo = join(import.meta.dirname, '../..');

describe('import cycles', () => {
  test('the repo has none', () => {
    const files = sourceFiles(repo);
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain('daemon/src/engine/pipeline.ts');
    expect(importCycles(importGraph(repo, files))).toEqual([]);
  });

  test('a cycle is found, type-only and through the package name too; dynamic imports are not one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-cycles-'));
    try {
      const put = async (path: string, text: string) => {
        await mkdir(join(dir, path, '..'), { recursive: true });
        await writeFile(join(dir, path), text);
      };
      await put('a.ts', `import { b } from './sub/b.ts';\nexport const a = b;\n`);
      await put('sub/b.ts', `import type { C } from '../c.ts';\nexport const b = 1 as unknown as C;\n`);
      await put('c.ts', `export type { A } from './a.ts';\nexport type C = number;\n`);
      await put('lazy.ts', `export const load = () => import('./lazy2.ts');\n`);
      await put('lazy2.ts', `import './lazy.ts';\n`);
      await put('shared/src/core/index.ts', `export { x } from '../../../core-user.ts';\n`);
      await put('core-user.ts', `import { x as y } from '@docex/shared';\nexport const x = y;\n`);
      await put('self.ts', `import './self.ts';\n`);
      execFileSync('git', ['init', '-q'], { cwd: dir });
      const cycles = importCycles(importGraph(dir, sourceFiles(dir)));
      expect(cycles).toContainEqual(['a.ts', 'c.ts', 'sub/b.ts']);
      expect(cycles).toContainEqual(['core-user.ts', 'shared/src/core/index.ts']);
      expect(cycles).toContainEqual(['self.ts']);
      expect(cycles.flat()).not.toContain('lazy.ts');
      expect(cycles).toHaveLength(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
