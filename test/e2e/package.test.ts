import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '../..');

describe('the packed n8n-nodes-docex tarball', () => {
  it('passes n8n community rules, has no dependencies and holds only what n8n needs', () => {
    const output = execFileSync(process.execPath, ['scripts/lint-package.ts'], {
      cwd: repo,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(output).toContain('package checks passed');
  }, 120_000);
});
