/**
 * Every shell block of the guides says whether it runs in the suite or is an example, and why
 * (test/docs/shell-blocks.ts); a new block without a marker fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { guideFiles, REPO, shellBlocks, shellBlocksOf, strayMarkers, where } from './shell-blocks.ts';

describe('the markers of the guides’ shell blocks', () => {
  it('finds the guides and their shell blocks', () => {
    const files = guideFiles();
    for (const file of [
      'README.md',
      'docs/daemon.md',
      'docs/cli.md',
      'docs/reference/status.md',
      'daemon/README.md',
    ])
      expect(files).toContain(file);
    expect(files.flatMap(shellBlocks).length).toBeGreaterThan(25);
  });

  it('marks every shell block as runs or example (with the reason)', () => {
    const problems = guideFiles()
      .flatMap(shellBlocks)
      .filter((block) => block.marker === null || block.marker === 'malformed')
      .map(
        (block) =>
          `${where(block)}: ${block.marker === null ? 'no marker' : 'a marker that is neither "runs" nor "example (why)"'} ` +
          'on the line before the fence (<!-- docs-test: runs --> or <!-- docs-test: example (why) -->)',
      );
    expect(problems).toEqual([]);
  });

  it('has no marker that is not right before a shell fence', () => {
    const stray = guideFiles().flatMap((file) =>
      strayMarkers(file, readFileSync(join(REPO, file), 'utf8')).map((line) => `${file}:${line}`),
    );
    expect(stray).toEqual([]);
  });

  it('tells a marked block from an unmarked, a malformed and a stray marker', () => {
    const text = [
      '<!-- docs-test: runs -->',
      '```sh',
      'docex folders list',
      '```',
      '',
      '```bash',
      'docex account check',
      '```',
      '<!-- docs-test: example (needs root) -->',
      '```shell',
      'sudo true',
      '```',
      '<!-- docs-test: example -->',
      '```sh',
      'true',
      '```',
      '```yaml',
      'a: 1',
      '```',
      '<!-- docs-test: runs -->',
      '```yaml',
      'b: 2',
      '```',
    ].join('\n');
    expect(shellBlocksOf('x.md', text).map((b) => [b.line, b.info, b.marker, b.code])).toEqual([
      [2, 'sh', { kind: 'runs' }, 'docex folders list'],
      [6, 'bash', null, 'docex account check'],
      [10, 'shell', { kind: 'example', reason: 'needs root' }, 'sudo true'],
      [14, 'sh', 'malformed', 'true'],
    ]);
    expect(strayMarkers('x.md', text)).toEqual([20]);
  });
});
