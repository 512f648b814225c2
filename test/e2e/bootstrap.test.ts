/**
 * The README's two commands on a fresh machine: `npm test` / `npm run demo` run scripts/run.sh from
 * inside an npm script of this repo, so the bootstrap of Node 24 runs with the npm_config_* settings
 * that npm exports from the repo's .npmrc (strict-allow-scripts among them). Here the bootstrap runs
 * the same way (`npm exec` in the repo), with the machine's older Node first on PATH and an empty
 * cache, and must end with a Node >= 22.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repo } from './pack.ts';

function olderSystemNode(): string | undefined {
  for (const dir of ['/usr/bin', '/usr/local/bin', '/bin']) {
    const node = join(dir, 'node');
    if (!existsSync(node)) continue;
    const major = spawnSync(node, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' });
    if (Number(major.stdout) < 22) return dir;
  }
  return undefined;
}

const oldNodeDir = olderSystemNode();
const cache = mkdtempSync(join(tmpdir(), 'docex-bootstrap-'));
afterAll(() => rmSync(cache, { recursive: true, force: true }));

describe.skipIf(!oldNodeDir)('bootstrap of Node 24 on a machine with an older Node', () => {
  it('installs Node 24 from inside an npm script of this repo, under its .npmrc', () => {
    const run = spawnSync(
      join(oldNodeDir!, 'npm'),
      ['exec', '--', 'bash', '-c', 'source scripts/env.sh && node --version'],
      {
        cwd: repo,
        encoding: 'utf8',
        env: {
          HOME: process.env.HOME,
          PATH: `${oldNodeDir}:/usr/bin:/bin`,
          DOCEX_CACHE: cache,
          DOCEX_SKIP_DEPS: '1',
        },
        timeout: 300_000,
      },
    );
    expect(run.stderr).toContain('installing Node 24');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toMatch(/^v(2[2-9]|[3-9]\d)\./);
  });
});
