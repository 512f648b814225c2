/**
 * n8n's `n8n-node lint` (strict mode, n8n's default config) passes over the n8n package's sources
 * (scripts/n8n-node-lint.ts, docs/decisions.md "n8n-node lint runs in a package view"), and it bites:
 * violations planted in a copy of the sources fail it, each named by its rule.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { n8nNodeLint, N8N_DEFAULT_ESLINT_CONFIG, PACKAGE_SOURCES } from '../../scripts/n8n-node-lint.ts';

const repo = join(import.meta.dirname, '../..');
/** n8n-node lint takes about 10 s of CPU; on a busy two-core machine, a minute or more. */
const LINT_TIMEOUT_MS = 300_000;

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe('n8n-node lint, strict, over the n8n package', () => {
  it('is the pinned @n8n/node-cli, and its default config is the template strict mode wants', () => {
    const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
      devDependencies: Record<string, string>;
      n8n: { strict: boolean };
      scripts: Record<string, string>;
    };
    expect(manifest.devDependencies['@n8n/node-cli']).toMatch(/^\d+\.\d+\.\d+$/);
    expect(manifest.n8n.strict).toBe(true);
    expect(manifest.scripts.lint).toContain('scripts/n8n-node-lint.ts');
    expect(readFileSync(N8N_DEFAULT_ESLINT_CONFIG, 'utf8')).toContain("from '@n8n/node-cli/eslint'");
  });

  it(
    'passes over the sources as they are',
    async () => {
      const { code, output } = await n8nNodeLint();
      expect(output).toContain('n8n-node lint');
      expect(output).not.toMatch(/\berror\b|Strict mode violation/);
      expect(code, output).toBe(0);
    },
    LINT_TIMEOUT_MS,
  );

  it(
    'fails on violations planted in a copy of the sources, naming each rule',
    async () => {
      const copy = mkdtempSync(join(tmpdir(), 'docex-n8n-lint-planted-'));
      scratch.push(copy);
      for (const entry of PACKAGE_SOURCES) cpSync(join(repo, entry), join(copy, entry), { recursive: true });
      const node = join(copy, 'nodes/Docex/Docex.node.ts');
      writeFileSync(
        node,
        `${readFileSync(node, 'utf8')}\n` +
          // the error the repo's own config let through: an unused variable named with a leading _
          `const _plantedUnused = 1;\n` +
          // a global n8n Cloud refuses in node code
          `export const plantedTimer = () => setTimeout(() => undefined, 1);\n`,
      );
      const { code, output } = await n8nNodeLint(copy);
      expect(code).not.toBe(0);
      expect(output).toMatch(
        /'_plantedUnused' is assigned a value but never used\s+@typescript-eslint\/no-unused-vars/,
      );
      expect(output).toContain('@n8n/community-nodes/no-restricted-globals');
      expect(output).toContain('<package>/nodes/Docex/Docex.node.ts');
    },
    LINT_TIMEOUT_MS,
  );
});
