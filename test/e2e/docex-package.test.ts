/**
 * docex as a user gets it alone (docs/cli.md, "Install"): a plain `npm pack` in cli/ of a clean copy
 * of the repo (test/e2e/pack.ts; the run's one pack, made by the e2e global set-up), `npm install -g`
 * of that tarball only into a fresh prefix outside the repo: no native module, nothing of the daemon;
 * then `--version`, and operations and templates export against the emulator.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { repo } from './pack.ts';
import { sharedPack, SHARED_N8N_WAIT_MS } from './shared.ts';

const KEY = 'sk-cli-user-0042';
const manifest = JSON.parse(await readFile(join(repo, 'cli/package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};
/** The run's pack: read-only here; what the test makes goes into `dir`. */
let packed: Awaited<ReturnType<typeof sharedPack>>;
let dir: string;
let emulator: Emulator;
let prefix: string;

beforeAll(async () => {
  packed = await sharedPack();
  dir = await mkdtemp(join(tmpdir(), 'docex-package-'));
  emulator = await startEmulator({ port: 0, companies: [{ name: 'Solo', apiKey: KEY }] });
  prefix = join(dir, 'prefix');
  const installed = spawnSync(
    'npm',
    [
      'install',
      '--global',
      '--prefix',
      prefix,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      packed.tarballs.docex!,
    ],
    { cwd: dir, env: packed.npmEnv, encoding: 'utf8' },
  );
  expect(installed.status, installed.stderr).toBe(0);
}, SHARED_N8N_WAIT_MS);
afterAll(async () => {
  await emulator?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

// Not spawnSync: the emulator answers from this process's event loop.
const docex = (args: string[]) =>
  promisify(execFile)(join(prefix, 'bin', 'docex'), args, {
    encoding: 'utf8',
    env: {
      ...process.env,
      DOCEX_BASE_URL: emulator.url,
      DOCEX_API_KEY: KEY,
      XDG_CONFIG_HOME: join(dir, 'none'),
    },
  });

describe('the docex package from a plain npm pack, installed alone', () => {
  it('holds its bin, its bundle and nothing from the sources', () => {
    expect(packed.list(packed.tarballs.docex!).sort()).toEqual(
      [
        'CHANGELOG.md',
        'README.md',
        'bin/answers.js',
        'bin/compile-cache.js',
        'bin/docex.js',
        'bin/require-node.js',
        'dist/answers.js',
        'dist/docex.js',
        'man/docex.1',
        'package.json',
      ].sort(),
    );
    expect(manifest.bin).toEqual({ docex: 'bin/docex.js' });
  });

  it('installs no native module and nothing of docex-sync: its dependencies are what its bundle requires', async () => {
    const modules = join(prefix, 'lib', 'node_modules');
    expect(await readdir(modules)).toEqual(['docex']);
    const installedDeps = await readdir(join(modules, 'docex', 'node_modules'));
    expect(installedDeps.filter((d) => !d.startsWith('.'))).toEqual(['yaml']);
    expect(existsSync(join(modules, 'docex', 'node_modules', 'better-sqlite3'))).toBe(false);
    const code = await readFile(join(modules, 'docex', 'dist', 'docex.js'), 'utf8');
    const required = new Set<string>();
    for (const [, name] of code.matchAll(/(?<![\w$])(?:__require|require|load\d*)\("([^"]+)"\)/g))
      if (!isBuiltin(name!)) required.add(name!.split('/')[0]!);
    expect([...required]).toEqual(['yaml']);
  });

  it('passes npm publish --dry-run without a warning (but the one about not being logged in)', () => {
    const result = spawnSync('npm', ['publish', '--dry-run', packed.tarballs.docex!], {
      cwd: dir,
      env: packed.npmEnv,
      encoding: 'utf8',
    });
    expect(result.status, result.stderr).toBe(0);
    const warnings = result.stderr.split('\n').filter((l) => /npm warn/i.test(l) && !/logged in/.test(l));
    expect(warnings).toEqual([]);
    expect(result.stderr).toContain('docex@');
  });

  it('installs its man page where man finds it: man docex', () => {
    const installed = join(prefix, 'share', 'man', 'man1', 'docex.1');
    expect(existsSync(installed), `${installed} (npm links the package's "man" pages)`).toBe(true);
    expect(readFileSync(installed, 'utf8')).toBe(readFileSync(join(repo, 'cli', 'man', 'docex.1'), 'utf8'));
  });

  it('answers --version, runs operations and exports templates as YAML', async () => {
    expect(execFileSync(join(prefix, 'bin', 'docex'), ['--version'], { encoding: 'utf8' })).toBe(
      `docex ${manifest.version}\n`,
    );
    const created = await docex(['folders', 'create', '--name', 'Alone']);
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'Alone' });
    const exported = await docex(['templates', 'export']);
    expect(exported.stdout).toContain('folders:\n  - name: Alone\n');
    const rerun = await docex(['rerun', '--template', '0']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(rerun).toMatchObject({
      code: 2,
      stderr: 'docex rerun: --template must be a positive whole number (got "0")\n',
    });
  }, 120_000);
});
