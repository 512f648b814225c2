/**
 * `npm run docex-sync -- ARGS` runs the binary from this checkout's sources in the folder npm was
 * called from (README, "Contributing"), so a relative --config means what it says.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '../../..');
const run = promisify(execFile);

describe('npm run docex-sync from a checkout', () => {
  it('answers --version, and reads a relative --config from the folder it was called in', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-checkout-'));
    try {
      const npm = (args: string[]) =>
        run('npm', ['--prefix', repo, 'run', '-s', 'docex-sync', '--', ...args], { cwd: dir }).then(
          (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
          (e: { code: number; stdout: string; stderr: string }) => e,
        );
      const version = await npm(['--version']);
      expect(version.stdout).toMatch(/^docex-sync \d+\.\d+\.\d+/);
      await writeFile(join(dir, 'here.yaml'), 'nothing_valid: 1\n');
      const check = await npm(['check', '--config', 'here.yaml']);
      expect(check.code).toBe(2);
      expect(check.stderr).toContain('here.yaml:1 nothing_valid: unknown key');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
