import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lintPackage } from '../../scripts/lint-package.ts';
import { packAsDocumented, repo, type Packed } from './pack.ts';

let packed: Packed;
let tarball: string;
beforeAll(() => {
  packed = packAsDocumented(['n8n-nodes-docex']);
  tarball = packed.tarballs['n8n-nodes-docex']!;
});
afterAll(() => packed?.remove());

describe('n8n-nodes-docex from a plain npm pack', () => {
  it('holds every file its n8n field points at, its README and CHANGELOG', () => {
    const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      n8n: { nodes: string[]; credentials: string[] };
    };
    const files = packed.list(tarball);
    const wanted = [...manifest.n8n.nodes, ...manifest.n8n.credentials];
    expect(wanted.length).toBe(3);
    for (const path of [...wanted, 'README.md', 'CHANGELOG.md', 'dist/package.json'])
      expect(files).toContain(path);
  });

  it('passes n8n community rules, has no dependencies and holds only what n8n needs', async () => {
    const { problems, summary } = await lintPackage(tarball);
    expect(problems, summary).toEqual([]);
  }, 300_000);

  it('passes npm publish --dry-run without a warning (but the one about not being logged in)', () => {
    const result = spawnSync('npm', ['publish', '--dry-run', tarball], {
      cwd: packed.dir,
      env: packed.npmEnv,
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    const warnings = result.stderr.split('\n').filter((l) => /npm warn/i.test(l) && !/logged in/.test(l));
    expect(warnings).toEqual([]);
    expect(result.stderr).toContain('n8n-nodes-docex@');
  });
});
