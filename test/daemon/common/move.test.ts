/**
 * The one move (daemon/src/common/move.ts): across file systems (EXDEV) as on one, and a process
 * killed between making the new name and removing the source, which a restart must finish with
 * one copy at the first name, not a second one beside it. Across file systems is /dev/shm (tmpfs)
 * to the temp folder, where they are two file systems.
 */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { movedInto, moveInto, moveTo } from '../../../daemon/src/common/move.ts';

const MOVE_TS = resolve(import.meta.dirname, '../../../daemon/src/common/move.ts');
const SHM = '/dev/shm';
const otherFileSystem = (() => {
  try {
    return statSync(SHM).dev !== statSync(tmpdir()).dev;
  } catch {
    return false;
  }
})();

const cleanups: string[] = [];
afterEach(async () => {
  for (const dir of cleanups.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function folder(under: string) {
  const dir = await mkdtemp(join(under, 'docex-move-'));
  cleanups.push(dir);
  return dir;
}

/** Everything under `dir`, temp files included, sorted. */
const tree = async (dir: string) => (await readdir(dir, { recursive: true })).sort();

/**
 * Runs `moveInto(source, dir, 'a.pdf')` (or `moveTo(source, dir/a.pdf)`) in a process of its own
 * that stops for good when it is about to remove the source (the new name made), and kills it
 * there with SIGKILL.
 */
async function killedBeforeTheSourceIsRemoved(kind: 'moveInto' | 'moveTo', source: string, dir: string) {
  const script = `
    import fsp from 'node:fs/promises';
    import { syncBuiltinESMExports } from 'node:module';
    const realRm = fsp.rm;
    fsp.rm = async (path, options) => {
      if (path === ${JSON.stringify(source)}) {
        process.stdout.write('placed\\n');
        await new Promise(() => {}); // killed here
      }
      return realRm(path, options);
    };
    syncBuiltinESMExports();
    const move = await import(${JSON.stringify(MOVE_TS)});
    ${
      kind === 'moveInto'
        ? `await move.moveInto(${JSON.stringify(source)}, ${JSON.stringify(dir)}, 'a.pdf');`
        : `await move.moveTo(${JSON.stringify(source)}, ${JSON.stringify(join(dir, 'a.pdf'))});`
    }
    process.stdout.write('moved without stopping\\n');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<NodeJS.Signals | null>((done) => child.once('close', (_code, signal) => done(signal)));
  await new Promise<void>((placed, failed) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('placed\n')) placed();
    });
    child.once('close', () => failed(new Error(`the mover ended before the source was removed: ${out}${err}`)));
  });
  child.kill('SIGKILL');
  expect(await exited).toBe('SIGKILL');
}

describe.each([
  ['on one file system', () => tmpdir()],
  ['across file systems (EXDEV)', () => SHM],
])('a move %s', (_name, sourceRoot) => {
  const skip = sourceRoot() === SHM && !otherFileSystem;

  it.skipIf(skip)('moves the whole file and leaves nothing behind: no source, no temp file', async () => {
    const from = await folder(sourceRoot());
    const to = await folder(tmpdir());
    const source = join(from, 'scan.pdf');
    await writeFile(source, 'x'.repeat(100_000));
    expect(await moveInto(source, to, 'sub/a.pdf')).toBe(join(to, 'sub', 'a.pdf'));
    expect(await tree(from)).toEqual([]);
    expect(await tree(to)).toEqual(['sub', 'sub/a.pdf']);
    expect(await readFile(join(to, 'sub', 'a.pdf'), 'utf8')).toBe('x'.repeat(100_000));
  });

  it.skipIf(skip)('never over another file: the next free name, or (moveTo) an error and the source kept', async () => {
    const from = await folder(sourceRoot());
    const to = await folder(tmpdir());
    await writeFile(join(to, 'a.pdf'), 'another file');
    await writeFile(join(from, 'one.pdf'), 'one');
    expect(await moveInto(join(from, 'one.pdf'), to, 'a.pdf')).toBe(join(to, 'a (2).pdf'));
    await writeFile(join(from, 'two.pdf'), 'two');
    await expect(moveTo(join(from, 'two.pdf'), join(to, 'a.pdf'))).rejects.toThrow(/taken by another file/);
    expect(await readFile(join(to, 'a.pdf'), 'utf8')).toBe('another file');
    expect(await readFile(join(from, 'two.pdf'), 'utf8')).toBe('two');
    expect(await tree(to)).toEqual(['a (2).pdf', 'a.pdf']);
  });

  it.skipIf(skip)('movedInto finds where a move put the file (by inode, or across file systems by size and mtime)', async () => {
    const from = await folder(sourceRoot());
    const to = await folder(tmpdir());
    await writeFile(join(to, 'a.pdf'), 'another file, same size!');
    await utimes(join(to, 'a.pdf'), new Date(1_000_000), new Date(1_000_000));
    const source = join(from, 'scan.pdf');
    await writeFile(source, 'the moved file, its size');
    // An mtime past the half millisecond (as most are: nanoseconds), which a Date would round up.
    await utimes(source, 1_700_000_000.0007, 1_700_000_000.0007);
    const info = await stat(source);
    const was = { ino: info.ino, size: info.size, mtimeMs: Math.floor(info.mtimeMs) };
    const moved = await moveInto(source, to, 'a.pdf');
    expect(moved).toBe(join(to, 'a (2).pdf'));
    expect(await movedInto(to, 'a.pdf', was)).toBe(moved);
    expect(await movedInto(to, 'a.pdf', { ...was, ino: -1, mtimeMs: 1 })).toBeUndefined();
    expect(await movedInto(to, 'b.pdf', was)).toBeUndefined();
  });

  for (const kind of ['moveInto', 'moveTo'] as const)
    it.skipIf(skip)(`${kind} killed between the new name and the source's removal: the next move finishes it, one copy`, async () => {
      const from = await folder(sourceRoot());
      const to = await folder(tmpdir());
      const source = join(from, 'scan.pdf');
      await writeFile(source, 'y'.repeat(50_000));
      await killedBeforeTheSourceIsRemoved(kind, source, to);
      // What the crash left: the whole file at its new name, the source still there.
      expect((await stat(join(to, 'a.pdf'))).size).toBe(50_000);
      expect((await stat(source)).size).toBe(50_000);
      // The restart moves it again.
      if (kind === 'moveInto') expect(await moveInto(source, to, 'a.pdf')).toBe(join(to, 'a.pdf'));
      else await moveTo(source, join(to, 'a.pdf'));
      expect(await tree(from)).toEqual([]);
      expect(await tree(to)).toEqual(['a.pdf']);
      expect(await readFile(join(to, 'a.pdf'), 'utf8')).toBe('y'.repeat(50_000));
    });
});

it.skipIf(!otherFileSystem)('a file of the same size but another mtime at the name is another file, across file systems', async () => {
  const from = await folder(SHM);
  const to = await folder(tmpdir());
  await writeFile(join(to, 'a.pdf'), 'same size');
  const source = join(from, 'a.pdf');
  await writeFile(source, 'SAME SIZE');
  await utimes(join(to, 'a.pdf'), new Date(1_000_000), new Date(1_000_000));
  expect(await moveInto(source, to, 'a.pdf')).toBe(join(to, 'a (2).pdf'));
  expect(await readFile(join(to, 'a.pdf'), 'utf8')).toBe('same size');
});
