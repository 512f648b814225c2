/**
 * docex-sync as an operator gets it (daemon/README.md): a plain `npm pack` in daemon/ of a clean copy
 * of the repo (test/e2e/pack.ts; the run's one pack, made by the e2e global set-up), `npm install -g`
 * of the tarball into a fresh prefix outside the repo, so the installed command can only use its own dependencies; then `--version`, `check`,
 * `run` on a dropped file against the emulator, and a clean stop.
 *
 * Its dependency docex (cli/) is not on the registry until it is published: it is installed from its
 * tarball in the same command, as the registry would give it; npm resolves docex-sync's dependency
 * to it and fetches nothing.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isBuiltin } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { createNodeClient } from '@docex/shared/node';
import { until } from '../daemon/helpers.ts';
import { repo } from './pack.ts';
import { sharedPack, SHARED_N8N_WAIT_MS } from './shared.ts';
import { templateWithField } from '../support/templates.ts';

const KEY = 'sk-operator-key-0042';
const manifest = JSON.parse(await readFile(join(repo, 'daemon/package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  engines: { node: string };
};
/** The run's pack: read-only here; what the test makes goes into `dir`. */
let packed: Awaited<ReturnType<typeof sharedPack>>;
let dir: string;
let emulator: Emulator;
let prefix: string;
let bin: string;

function npm(args: string[], cwd: string) {
  return spawnSync('npm', [...args, '--no-audit', '--no-fund'], {
    cwd,
    env: packed.npmEnv,
    encoding: 'utf8',
  });
}

function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

beforeAll(async () => {
  packed = await sharedPack();
  dir = await mkdtemp(join(tmpdir(), 'docex-sync-package-'));
  emulator = await startEmulator({ port: 0, taskDelayMs: 30, companies: [{ name: 'Ops', apiKey: KEY }] });
  prefix = join(dir, 'prefix');
  const installed = npm(
    [
      'install',
      '--global',
      '--prefix',
      prefix,
      '--prefer-offline',
      packed.tarballs.docex!,
      packed.tarballs['docex-sync']!,
    ],
    dir,
  );
  expect(installed.status, installed.stderr).toBe(0);
  bin = join(prefix, 'bin', 'docex-sync');
}, SHARED_N8N_WAIT_MS);
afterAll(async () => {
  await emulator?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the docex-sync package from a plain npm pack', () => {
  it('holds every file its bin needs, its README and CHANGELOG, and nothing from the sources', () => {
    const all = packed.list(packed.tarballs['docex-sync']!).sort();
    for (const target of Object.values(manifest.bin)) expect(all).toContain(target.replace(/^\.\//, ''));
    // The code the entries import on demand (scripts/build.ts splits the bundles).
    const chunks = all.filter((f) => f.startsWith('dist/chunks/'));
    expect(chunks.length).toBeGreaterThan(0);
    expect(chunks.filter((f) => !/^dist\/chunks\/[\w-]+\.js$/.test(f))).toEqual([]);
    const files = all.filter((f) => !f.startsWith('dist/chunks/'));
    expect(files).toEqual(
      [
        'CHANGELOG.md',
        'README.md',
        'bin/daemon-heap.js',
        'bin/docex-sync.js',
        // docex's bin, which runs the docex package's (a dependency): no copy of docex inside.
        'bin/docex.js',
        'dist/cli.js',
        'dist/answers.js',
        // man docex-sync, man docex (docs:reference makes them from the command tables).
        'man/docex-sync.1',
        'man/docex.1',
        'package.json',
      ].sort(),
    );
  });

  it('depends on exactly the packages its bundles load at run time (the rest is bundled in)', () => {
    // A package the bundles require() at run time must be a dependency, or the installed command
    // fails on first use; a dependency they never require is bundled already and only costs the
    // operator an install.
    const installedManifest = JSON.parse(
      execFileSync('tar', ['-xOzf', packed.tarballs['docex-sync']!, 'package/package.json'], {
        encoding: 'utf8',
      }),
    ) as { dependencies?: Record<string, string> };
    const required = new Set<string>();
    const bundles = packed.list(packed.tarballs['docex-sync']!).filter((f) => /^(dist|bin)\/.*\.js$/.test(f));
    expect(bundles).toEqual(expect.arrayContaining(['dist/cli.js', 'bin/docex.js']));
    for (const bundle of bundles) {
      const code = execFileSync('tar', ['-xOzf', packed.tarballs['docex-sync']!, `package/${bundle}`], {
        encoding: 'utf8',
        maxBuffer: 256 * 1024 * 1024,
      });
      // A bin imports docex's start-up helpers and bin (`import ... from 'docex/bin/...'`).
      for (const [, requiredName, imported] of code.matchAll(
        /(?<![\w$])(?:__require|require|load\d*)\("([^"]+)"\)|^import (?:[^'"]* from )?'([^.'][^']*)'/gm,
      )) {
        const name = requiredName ?? imported!;
        if (!isBuiltin(name))
          required.add(name.startsWith('@') ? name.split('/').slice(0, 2).join('/') : name.split('/')[0]!);
      }
    }
    expect(Object.keys(installedManifest.dependencies ?? {}).sort()).toEqual([...required].sort());
  });

  it('passes npm publish --dry-run without a warning (but the one about not being logged in)', () => {
    const result = npm(['publish', '--dry-run', packed.tarballs['docex-sync']!], dir);
    expect(result.status, result.stderr).toBe(0);
    const warnings = result.stderr.split('\n').filter((l) => /npm warn/i.test(l) && !/logged in/.test(l));
    expect(warnings).toEqual([]);
    expect(result.stderr).toContain('docex-sync@');
  });

  it('installs its man pages where man finds them: man docex-sync, man docex', () => {
    for (const page of ['docex-sync.1', 'docex.1']) {
      const installed = join(prefix, 'share', 'man', 'man1', page);
      expect(existsSync(installed), `${installed} (npm links the package's "man" pages)`).toBe(true);
      expect(readFileSync(installed, 'utf8')).toBe(readFileSync(join(repo, 'daemon', 'man', page), 'utf8'));
    }
  });

  it('answers --version with the package version, and keeps docex on PATH', () => {
    expect(execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()).toBe(
      `docex-sync ${manifest.version}`,
    );
    expect(execFileSync(join(prefix, 'bin', 'docex'), ['--version'], { encoding: 'utf8' })).toMatch(
      /^docex \d+\.\d+\.\d+\n$/,
    );
    // docex-sync's own bin/docex (what a docex-sync install links where docex is not beside it) runs it too.
    const own = join(prefix, 'lib', 'node_modules', 'docex-sync', 'bin', 'docex.js');
    expect(execFileSync(process.execPath, [own, 'folders', '--help'], { encoding: 'utf8' })).toMatch(
      /^Usage: docex folders <action>/,
    );
  });

  const oldNode = ['/usr/bin/node', '/usr/local/bin/node'].find(
    (p) =>
      existsSync(p) &&
      Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' })) < 22,
  );
  it.skipIf(!oldNode)(`both commands refuse an older Node (${oldNode}) with one sentence and exit 2`, () => {
    for (const [command, target] of Object.entries(manifest.bin)) {
      const script = join(prefix, 'lib', 'node_modules', 'docex-sync', target);
      const result = spawnSync(oldNode!, [script, '--help'], { encoding: 'utf8' });
      expect(result.status, command).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(
        /^docex(-sync)? needs Node\.js 22 or newer, but this is Node\.js 2\d\.[^\n]*\nOr install [^\n]*the Debian package, or the release archive[^\n]*\n$/,
      );
      expect(result.stderr.startsWith(`${command} needs`)).toBe(true);
    }
    expect(manifest.engines.node).toBe('>=22');
  });

  it('checks its config and processes a dropped file, installed with its own dependencies', async () => {
    const client = createNodeClient({ baseUrl: emulator.url, apiKey: KEY });
    const folder = await client.createFolder({ name: 'AP' });
    const template = await templateWithField(client, folder.id, 'Invoice');
    const ops = join(dir, 'ops');
    await mkdir(join(ops, 'inbox'), { recursive: true });
    const config = join(ops, 'docex-sync.yaml');
    await writeFile(
      config,
      [
        'state_db: ./state/sync.db',
        'poll: { interval_ms: 100, max_interval_ms: 500 }',
        'watch:',
        `  - { path: ./inbox, template_id: ${template.id}, output: ./results, processed_dir: ./processed, failed_dir: ./failed, stable_ms: 200 }`,
        '',
      ].join('\n'),
    );
    const env = { ...process.env, DOCEX_API_KEY: KEY, DOCEX_BASE_URL: emulator.url };

    // Never spawnSync here: the emulator answers from this process.
    const check = await runToEnd(bin, ['check', '--config', config], env);
    expect(check.status, check.stderr).toBe(0);
    expect(check.stdout).toContain('the API key is accepted');

    await writeFile(join(ops, 'inbox', 'scan-001.txt'), 'Invoice number: OPS-1\n');
    const daemon = spawn(bin, ['run', '--config', config], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    daemon.stdout.on('data', (d) => (stdout += d));
    daemon.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => daemon.once('exit', resolve));
    try {
      await until(
        'the file processed',
        async () =>
          (await readdir(join(ops, 'processed')).catch((): string[] => [])).includes('scan-001.txt'),
        60_000,
      );
      // The same process (execve keeps the PID, which is what systemd and Docker watch) now runs
      // with the young generation capped (daemon/bin/daemon-heap.js).
      const cmdline = (await readFile(`/proc/${daemon.pid}/cmdline`, 'utf8')).split('\0');
      expect(cmdline).toContain('--max-semi-space-size=16');
      expect(cmdline.slice(cmdline.indexOf('--max-semi-space-size=16') + 1)).toEqual([
        join(prefix, 'bin', 'docex-sync'),
        'run',
        '--config',
        config,
        '',
      ]);
    } finally {
      daemon.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
    expect(stdout, 'run logs to stderr; stdout is for results').toBe('');
    expect(stderr).toContain('stopped');
    const results = await readdir(join(ops, 'results'));
    const json = results.find((f) => f.endsWith('.json'))!;
    const data = JSON.parse(await readFile(join(ops, 'results', json), 'utf8'));
    expect(JSON.stringify(data.document)).toContain('OPS-1');
    expect(stderr).not.toContain(KEY);
  }, 300_000);
});
