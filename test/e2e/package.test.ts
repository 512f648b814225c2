import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { lintPackage } from '../../scripts/lint-package.ts';
import { repo } from './pack.ts';
import { sharedPack, SHARED_N8N_WAIT_MS } from './shared.ts';

/** The run's one plain `npm pack` (test/e2e/pack.ts, made by the e2e global set-up): read-only here. */
let packed: Awaited<ReturnType<typeof sharedPack>>;
let tarball: string;
beforeAll(async () => {
  packed = await sharedPack();
  tarball = packed.tarballs['n8n-nodes-docex']!;
}, SHARED_N8N_WAIT_MS);

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
