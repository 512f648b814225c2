/**
 * The daemon's layers point one way (test/lint/layers.ts: support < config < domain < store <
 * intake | outputs < pipeline < jobs | actions < status < app < commands): every import of a
 * daemon file, type-only and lazy ones included, goes to its own layer or a lower one, and every
 * file is in a layer. The checker is proven on a planted tree.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { importEdges, sourceFiles } from './imports.ts';
import { DAEMON_LAYERS, layerOf, layerViolations, type Layer } from './layers.ts';

const repo = join(import.meta.dirname, '../..');

describe('the daemon layers', () => {
  test('every import points down or stays in its layer, and every file has a layer', () => {
    const files = sourceFiles(repo);
    // A floor, so that a path change that empties the walk fails (docex's own files left for cli/).
    expect(files.filter((f) => f.startsWith('daemon/src/')).length).toBeGreaterThan(60);
    expect(layerViolations(files, importEdges(repo, files), DAEMON_LAYERS, 'daemon/src/')).toEqual([]);
  });

  test('each layer of the table holds files (no stale row)', () => {
    const files = sourceFiles(repo);
    const empty = DAEMON_LAYERS.flatMap((l) => l.paths).filter((p) => !files.some((f) => f.startsWith(p)));
    expect(empty).toEqual([]);
  });

  test('a planted tree: upward, sideways, type-only and lazy imports are named; a file with no layer too', async () => {
    const layers: Layer[] = [
      { name: 'low', rank: 0, paths: ['src/low/'] },
      { name: 'left', rank: 1, paths: ['src/left/'] },
      { name: 'right', rank: 1, paths: ['src/right/', 'src/low/special.ts'] },
      { name: 'top', rank: 2, paths: ['src/top/'] },
    ];
    const dir = await mkdtemp(join(tmpdir(), 'docex-layers-'));
    try {
      const put = async (path: string, text: string) => {
        await mkdir(join(dir, path, '..'), { recursive: true });
        await writeFile(join(dir, path), text);
      };
      await put('src/low/a.ts', `import { t } from '../top/t.ts';\nexport const a = t;\n`);
      await put('src/low/b.ts', `\nimport type { L } from '../left/l.ts';\nexport type B = L;\n`);
      await put('src/low/special.ts', `export const s = 1;\n`);
      await put('src/low/c.ts', `import { s } from './special.ts';\nexport const c = s;\n`);
      await put('src/left/l.ts', `export type L = 1;\nexport const load = () => import('../right/r.ts');\n`);
      await put('src/right/r.ts', `import { a } from '../low/a.ts';\nexport const r = a;\n`);
      await put(
        'src/top/t.ts',
        `import { r } from '../right/r.ts';\nimport { type L } from '../left/l.ts';\nexport const t = r as L;\n`,
      );
      await put('src/stray.ts', `export const stray = 1;\n`);
      execFileSync('git', ['init', '-q'], { cwd: dir });
      const files = sourceFiles(dir);
      expect(layerOf('src/low/special.ts', layers)?.name).toBe('right');
      expect(layerViolations(files, importEdges(dir, files), layers, 'src/').sort()).toEqual([
        'src/left/l.ts:2 (left) imports src/right/r.ts (right): a sibling, lazily',
        'src/low/a.ts:1 (low) imports src/top/t.ts (top): a higher layer',
        'src/low/b.ts:2 (low) imports src/left/l.ts (left): a higher layer, type-only',
        'src/low/c.ts:1 (low) imports src/low/special.ts (right): a higher layer',
        'src/stray.ts is in no layer',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
