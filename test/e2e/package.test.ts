import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { lintPackage } from '../../scripts/lint-package.ts';
import { repo } from './pack.ts';
import { sharedPack, SHARED_N8N_WAIT_MS } from './shared.ts';

/** The sections of n8n's README template for community nodes, in its order. */
const N8N_TEMPLATE_SECTIONS = [
  'Installation',
  'Operations',
  'Credentials',
  'Compatibility',
  'Usage',
  'Resources',
  'Version history',
];

/** The n8n the end-to-end tests install (scripts/n8n-install.sh's default). */
const TESTED_N8N_VERSION = /^version="?(?:\$\{\w+:-)*(\d+\.\d+\.\d+)/m.exec(
  readFileSync(join(repo, 'scripts/n8n-install.sh'), 'utf8'),
)![1]!;

/** The run's one plain `npm pack` (test/e2e/pack.ts, made by the e2e global set-up): read-only here. */
let packed: Awaited<ReturnType<typeof sharedPack>>;
let tarball: string;
beforeAll(async () => {
  packed = await sharedPack();
  tarball = packed.tarballs['n8n-nodes-docex']!;
}, SHARED_N8N_WAIT_MS);

describe('n8n-nodes-docex from a plain npm pack', () => {
  it("was packed against the repo's installed modules, hard-linked, not a fresh npm ci in the copy", () => {
    // The prepacks run scripts/run.sh, which reinstalls when node_modules has no stamp of the lock:
    // a copy without it cost the run minutes of npm ci (the pack's time in the timing report).
    const inode = (root: string) => statSync(join(root, 'node_modules/zod/package.json')).ino;
    expect(inode(join(packed.dir, 'clone'))).toBe(inode(repo));
  });

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

  it("has a README that follows n8n's community-node template", () => {
    const readme = execFileSync('tar', ['-xzOf', tarball, 'package/README.md'], { encoding: 'utf8' });
    expect(readme.split('\n', 1)[0]).toBe('# n8n-nodes-docex');
    expect(readme).toContain('This is an n8n community node.');
    // The template's sections (n8n-nodes-starter, @n8n/node-cli's README.md), in its order, first.
    const sections = readme.match(/^## .+$/gm) ?? [];
    expect(sections.slice(0, N8N_TEMPLATE_SECTIONS.length)).toEqual(
      N8N_TEMPLATE_SECTIONS.map((title) => `## ${title}`),
    );
    // Compatibility names the n8n versions the tests run on.
    const compatibility = readme.split('## Compatibility')[1]!.split('\n## ')[0]!;
    expect(compatibility).toContain(`n8n ${TESTED_N8N_VERSION}`);
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
