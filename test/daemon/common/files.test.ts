/**
 * Temp files of atomic writes: their names (one random start per process, then a counter) and the
 * start-up clean-up that removes those a crash left.
 */
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { removeStaleTemps, tempSuffix, writeAtomic } from '../../../daemon/src/common/files.ts';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('temp files of atomic writes', () => {
  it('each temp name of the process is new: 8 hex digits, one more each time', () => {
    const names = Array.from({ length: 1000 }, tempSuffix);
    expect(new Set(names).size).toBe(1000);
    for (const name of names) expect(name).toMatch(/^[0-9a-f]{8}$/);
    for (let i = 1; i < names.length; i++)
      expect(Number.parseInt(names[i]!, 16)).toBe((Number.parseInt(names[i - 1]!, 16) + 1) % 2 ** 32);
  });

  it('a write leaves only its file; a temp a crash left (named as writes name them) is removed at start', async () => {
    dir = await mkdtemp(join(tmpdir(), 'docex-files-'));
    await writeAtomic(join(dir, 'a.json'), '{}');
    expect(await readdir(dir)).toEqual(['a.json']);
    const left = `.b.json.${tempSuffix()}.tmp`;
    await writeFile(join(dir, left), '{');
    await writeFile(join(dir, '.b.json.tmp'), 'not ours: no number');
    expect(await removeStaleTemps(dir)).toBe(1);
    expect((await readdir(dir)).sort()).toEqual(['.b.json.tmp', 'a.json']);
  });
});
