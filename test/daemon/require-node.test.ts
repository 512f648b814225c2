/**
 * The sentence an npm-installed docex-sync or docex says on a Node older than 22 (cli/bin/require-node.js),
 * run by that older Node where the machine has one (Debian 12's nodejs is 20): it names the version
 * needed and the ways to install that need no Node at all (issue #39).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const requireNode = join(import.meta.dirname, '../../cli/bin/require-node.js');
const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find(
  (p) =>
    existsSync(p) &&
    Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' })) < 22,
);
if (!oldNode)
  console.log('require-node.test.ts: no Node older than 22 here; the sentence is checked under this Node');

describe('an npm-installed command on an older Node', () => {
  it.each(['docex-sync', 'docex'])(
    '%s says how to install it without a newer Node, and exits 2',
    (command) => {
      const node = oldNode ?? process.execPath;
      // Under a new enough Node the floor is raised for the check, so the sentence is said all the same.
      const floor = oldNode ? '' : 'process.versions = { node: "20.19.0" };';
      const result = spawnSync(
        node,
        [
          '--input-type=module',
          '-e',
          `${floor} const m = await import(${JSON.stringify(requireNode)}); m.requireNode(${JSON.stringify(command)});`,
        ],
        { encoding: 'utf8' },
      );
      expect(result.status).toBe(2);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      expect(lines[0]).toMatch(
        new RegExp(`^${command} needs Node\\.js 22 or newer, but this is Node\\.js 20\\.`),
      );
      expect(result.stderr).toContain('install Node.js 22+');
      expect(result.stderr).toContain('Debian package');
      expect(result.stderr).toContain('release archive');
      expect(result.stderr).toContain('https://github.com/docex/docex/blob/main/docs/daemon.md#install');
    },
  );
});
