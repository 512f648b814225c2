/**
 * The docex binary as users get it: `npm pack` of the docex package (cli/) in a fresh clone (its
 * prepack builds), the tarball unpacked, and its `bin` entry run through a symlink named docex, the
 * way npm installs it. The tarball's npm dependencies come from this repo's node_modules.
 *
 * A plain `npm pack`: the repo's .npmrc lets the package's prepack run (README, "Packing and
 * publishing"); test/e2e/docex-package.test.ts installs the same tarball with npm, alone.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdir, mkdtemp, readFile, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../emulator/index.ts';

const repo = join(import.meta.dirname, '../..');
let dir: string;
let emulator: Emulator;
let bin: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'docex-pack-'));
  execFileSync('git', ['clone', '--quiet', '--no-hardlinks', repo, join(dir, 'clone')]);
  await symlink(join(repo, 'node_modules'), join(dir, 'clone', 'node_modules'));
  const packed = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], {
    cwd: join(dir, 'clone', 'cli'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { filename } = (JSON.parse(packed.slice(packed.indexOf('['))) as Array<{ filename: string }>)[0]!;
  await mkdir(join(dir, 'installed'));
  execFileSync('tar', ['xzf', join(dir, filename), '-C', join(dir, 'installed')]);
  await symlink(join(repo, 'node_modules'), join(dir, 'installed', 'package', 'node_modules'));
  const manifest = JSON.parse(await readFile(join(dir, 'installed', 'package', 'package.json'), 'utf8'));
  await mkdir(join(dir, 'bin'));
  bin = join(dir, 'bin', 'docex');
  await symlink(join(dir, 'installed', 'package', manifest.bin.docex), bin);
  emulator = await startEmulator({ port: 0, companies: [{ name: 'Acme', apiKey: 'sk-pack-test-1' }] });
}, 300_000);

afterAll(async () => {
  await emulator?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// Not spawnSync: the emulator answers from this process's event loop.
const run = (args: string[]) =>
  promisify(execFile)(bin, args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      DOCEX_BASE_URL: emulator.url,
      DOCEX_API_KEY: 'sk-pack-test-1',
      XDG_CONFIG_HOME: join(dir, 'none'),
    },
  });

describe('the packed docex binary', { timeout: 60_000 }, () => {
  it('is in the tarball as an executable bin, with no native or daemon dependency', async () => {
    const manifest = JSON.parse(await readFile(join(dir, 'installed', 'package', 'package.json'), 'utf8'));
    // The bin is a launcher that checks the Node version, then loads its bundle from dist/.
    expect(manifest.bin).toEqual({ docex: 'bin/docex.js' });
    // yaml is required on first use (cli-kit/src/lazy.ts); the rest is in the bundle.
    expect(Object.keys(manifest.dependencies)).toEqual(['yaml']);
    const file = join(dir, 'installed', 'package', 'bin', 'docex.js');
    expect((await readFile(file, 'utf8')).startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect((await stat(file)).mode & 0o111).not.toBe(0);
    await stat(join(dir, 'installed', 'package', 'dist', 'docex.js'));
  });

  it('runs through a symlink named docex: help, an operation, and templates export', async () => {
    // execFile rejects on a non-zero exit, so each of these exited 0.
    const help = await run(['--help']);
    expect(help.stdout).toContain(
      'docex — every operation of the Document Extraction Service from the shell.',
    );
    const created = await run(['folders', 'create', '--name', 'Packed']);
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'Packed' });
    const exported = await run(['templates', 'export']);
    expect(exported.stdout).toContain('folders:\n  - name: Packed\n');
  });
});
