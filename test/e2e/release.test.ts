/**
 * The self-contained release archives (npm run release, scripts/release.ts) as an operator gets
 * them. The linux-x64 archive is unpacked and run on this machine twice: with PATH holding only the
 * system's Node 20 (/usr/bin), the machine of issue #39, and with no node on PATH at all; each time
 * `--version`, `check` against the emulator, a dropped file processed and the status page served.
 * The other platforms cannot run here: their layout is checked, and the headers of their Node
 * binary and of their better-sqlite3 addon say the platform they were built for.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS, APP_DIR, archiveFile, releaseName, type Platform } from '../../scripts/release-layout.ts';
import { repo } from './pack.ts';
import { releaseOnce, type Release } from './release-build.ts';
import {
  KEY,
  dropAndAwait,
  freePort,
  makeFolders,
  runToEnd,
  serviceWorld,
  start,
  watchConfig,
  type ServiceWorld,
} from './release-world.ts';

let release: Release;
let service: ServiceWorld;
let scratch: string;

beforeAll(async () => {
  // The emulator starts while the release is made (the run's one, release-build.ts).
  [release, service] = await Promise.all([releaseOnce(), serviceWorld()]);
  scratch = await mkdtemp(join(tmpdir(), 'docex-release-test-'));
  console.log(
    Object.entries(release.sizes)
      .map(([name, bytes]) => `${name}  ${(bytes / 1024 / 1024).toFixed(1)} MB`)
      .join('\n'),
  );
}, 1_800_000);
afterAll(async () => {
  await service?.stop();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** An archive unpacked into a fresh folder; the path of its top folder. */
async function unpack(p: Platform): Promise<string> {
  const into = await mkdtemp(join(scratch, `${p.name}-`));
  const file = release.file(archiveFile(release.version, p));
  if (p.archive === 'zip') execFileSync('unzip', ['-q', file, '-d', into]);
  else execFileSync('tar', ['-xzf', file, '-C', into]);
  expect(await readdir(into)).toEqual([releaseName(release.version, p)]);
  return join(into, releaseName(release.version, p));
}

async function filesUnder(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path, base)));
    else out.push(path.slice(base.length + 1));
  }
  return out;
}

/** The platform a binary was built for, from its header: ELF e_machine, Mach-O cputype, PE machine. */
function headerOf(bytes: Buffer): string {
  if (bytes.readUInt32BE(0) === 0x7f454c46) {
    const machine = bytes.readUInt16LE(18);
    return `elf:${machine === 0x3e ? 'x86-64' : machine === 0xb7 ? 'aarch64' : machine.toString(16)}`;
  }
  if (bytes.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = bytes.readUInt32LE(4);
    return `mach-o:${cpu === 0x0100000c ? 'arm64' : cpu === 0x01000007 ? 'x86-64' : cpu.toString(16)}`;
  }
  if (bytes.toString('latin1', 0, 2) === 'MZ') {
    const pe = bytes.readUInt32LE(0x3c);
    if (bytes.toString('latin1', pe, pe + 4) !== 'PE\0\0') return 'mz-without-pe';
    const machine = bytes.readUInt16LE(pe + 4);
    return `pe:${machine === 0x8664 ? 'x86-64' : machine === 0xaa64 ? 'arm64' : machine.toString(16)}`;
  }
  return 'unknown';
}
const expectedHeader = (p: Platform) =>
  p.format.kind === 'elf'
    ? `elf:${p.format.machine}`
    : p.format.kind === 'mach-o'
      ? `mach-o:${p.format.cpu}`
      : `pe:${p.format.machine}`;

describe('the release', () => {
  it('has an archive for every platform and SHA256SUMS that verify', () => {
    for (const p of PLATFORMS) expect(Object.keys(release.sizes)).toContain(archiveFile(release.version, p));
    const sums = spawnSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: release.dir, encoding: 'utf8' });
    expect(sums.status, sums.stdout + sums.stderr).toBe(0);
    expect(sums.stdout.trim().split('\n')).toHaveLength(Object.keys(release.sizes).length);
  });

  it.each(PLATFORMS.map((p) => [p.name, p] as const))(
    '%s: Node 24 and the addon for that platform, the launchers, licences and example; no dev files',
    async (_name, p) => {
      const top = await unpack(p);
      const files = await filesUnder(top);
      const launchers =
        p.archive === 'zip' ? ['bin/docex-sync.cmd', 'bin/docex.cmd'] : ['bin/docex-sync', 'bin/docex'];
      for (const f of [
        ...launchers,
        p.nodeInArchive,
        'node/LICENSE',
        'LICENSE',
        'THIRD-PARTY-LICENSES.txt',
        'examples/docex-sync.yaml',
        `${APP_DIR}/bin/docex-sync.js`,
        `${APP_DIR}/bin/docex.js`,
        `${APP_DIR}/dist/cli.js`,
        // docex is the docex package, docex-sync's dependency, as npm installs it.
        `${APP_DIR}/node_modules/docex/bin/docex.js`,
        `${APP_DIR}/node_modules/docex/dist/docex.js`,
        `${APP_DIR}/node_modules/yaml/package.json`,
        `${APP_DIR}/node_modules/node-cron/package.json`,
      ])
        expect(files, f).toContain(f);
      // One addon, this platform's; nothing else native.
      expect(files.filter((f) => f.endsWith('.node'))).toEqual([
        `${APP_DIR}/node_modules/better-sqlite3/prebuilds/${p.sqlitePrebuild}.node`,
      ]);
      expect(headerOf(await readFile(join(top, p.nodeInArchive)))).toBe(expectedHeader(p));
      expect(
        headerOf(
          await readFile(
            join(top, `${APP_DIR}/node_modules/better-sqlite3/prebuilds/${p.sqlitePrebuild}.node`),
          ),
        ),
      ).toBe(expectedHeader(p));
      // Node's own version string is in its binary; the one pinned for the platform.
      expect((await readFile(join(top, p.nodeInArchive))).includes(`v${p.nodeVersion}`)).toBe(true);
      expect(p.nodeVersion.split('.')[0]).toBe('24');
      expect(
        files.filter((f) => /\.map$|\.d\.[cm]?ts$|^node\/include\/|\.gyp$|\.(c|cc|cpp|h)$/.test(f)),
      ).toEqual([]);
      expect(files.filter((f) => f.includes('node-addon-api'))).toEqual([]);
      // Of docex, what its package ships (bin, dist), not its sources.
      expect(
        files.filter(
          (f) =>
            f.startsWith(`${APP_DIR}/node_modules/docex/`) &&
            !/\/(bin|dist)\/[\w-]+\.js$|\/package\.json$/.test(f),
        ),
      ).toEqual([]);
      // The bundles name their modules by paths relative to where they were built (node_modules/...),
      // never by a folder of the machine that built them (the release is built in a copy of the
      // sources: test/e2e/release-build.ts).
      const bundles = files.filter(
        (f) =>
          (f.startsWith(`${APP_DIR}/dist/`) || f.startsWith(`${APP_DIR}/node_modules/docex/dist/`)) &&
          f.endsWith('.js'),
      );
      expect(bundles.length).toBeGreaterThan(2);
      for (const bundle of bundles) {
        const code = await readFile(join(top, bundle), 'utf8');
        for (const machinePath of [repo.slice(1), tmpdir().slice(1) + '/docex-'])
          expect(code.includes(machinePath), `${bundle} names ${machinePath}`).toBe(false);
      }
      const launcher = await readFile(join(top, launchers[0]!), 'utf8');
      if (p.archive === 'zip') expect(launcher).toContain('%~dp0..\\node\\node.exe');
      else expect(launcher).toContain('exec "$root/node/bin/node"');
      expect(await readFile(join(top, 'THIRD-PARTY-LICENSES.txt'), 'utf8')).toMatch(
        /better-sqlite3 [\d.]+ \(MIT\)/,
      );
    },
  );
});

const systemNode = ['/usr/bin/node'].find(
  (p) =>
    existsSync(p) &&
    Number(execFileSync(p, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8' })) < 22,
);

describe.each([
  ['PATH with only the system Node 20 (/usr/bin)', 'system-node'],
  ['no node on PATH at all', 'no-node'],
] as const)('the linux-x64 archive unpacked, %s', (_title, kind) => {
  const skip =
    process.platform !== 'linux' || process.arch !== 'x64'
      ? 'this machine is not linux-x64'
      : kind === 'system-node' && !systemNode
        ? 'no Node older than 22 in /usr/bin'
        : undefined;
  if (skip) console.log(`skipped (${kind}): ${skip}`);

  let bin: string;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    if (skip) return;
    const top = await unpack(PLATFORMS.find((p) => p.name === 'linux-x64')!);
    bin = join(top, 'bin');
    let path = '/usr/bin:/bin';
    if (kind === 'no-node') {
      // Only the tools the launcher calls (sh by its #!): no node anywhere on PATH.
      path = join(scratch, 'no-node-bin');
      await mkdir(path, { recursive: true });
      for (const tool of ['readlink', 'dirname'])
        await symlink(
          execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(),
          join(path, tool),
        ).catch(() => {});
    }
    env = { PATH: path, HOME: scratch, DOCEX_API_KEY: KEY, DOCEX_BASE_URL: service.emulator.url };
    const which = spawnSync('sh', ['-c', 'command -v node && node --version'], { env, encoding: 'utf8' });
    if (kind === 'no-node') expect(which.status).not.toBe(0);
    else expect(which.stdout).toMatch(/^\/usr\/bin\/node\nv20\./);
  });

  it.skipIf(skip)(
    'answers --version (both commands), with the Node inside, never the one on PATH',
    async () => {
      const version = await runToEnd(join(bin, 'docex-sync'), ['--version'], { env });
      console.log(`$ docex-sync --version   (${kind})\n${version.stdout}${version.stderr}`);
      expect(version).toEqual({ status: 0, stdout: `docex-sync ${release.version}\n`, stderr: '' });
      expect((await runToEnd(join(bin, 'docex'), ['--version'], { env })).stdout).toBe(
        `docex ${release.version}\n`,
      );
      // A command that loads the bundle and the native addon, through a symlink as /usr/bin's.
      await symlink(join(bin, 'docex-sync'), join(scratch, `linked-${kind}`));
      const help = await runToEnd(join(scratch, `linked-${kind}`), ['status', '--help'], { env });
      expect(help.status, help.stderr).toBe(0);
    },
  );

  it.skipIf(skip)(
    'checks the config against the emulator, processes a dropped file and serves the status page',
    async () => {
      const base = join(scratch, `ops-${kind}`);
      await makeFolders(base);
      const port = await freePort();
      const config = join(base, 'docex-sync.yaml');
      await writeFile(config, watchConfig(base, service.templateId, [`http: { port: ${port} }`]));

      const check = await runToEnd(join(bin, 'docex-sync'), ['check', '--config', config], { env });
      console.log(`$ docex-sync check --config docex-sync.yaml   (${kind})\n${check.stdout}${check.stderr}`);
      expect(check.status, check.stderr).toBe(0);
      expect(check.stdout).toContain('the API key is accepted');

      const daemon = start(join(bin, 'docex-sync'), ['run', '--config', config], { env });
      try {
        const result = await dropAndAwait(base, 'scan-001.txt', `REL-${kind}`, daemon);
        expect(JSON.stringify(result.document)).toContain(`REL-${kind}`);
        const page = await fetch(`http://127.0.0.1:${port}/`);
        expect(page.status).toBe(200);
        expect(await page.text()).toMatch(/^<!doctype html>/);
        const health = await fetch(`http://127.0.0.1:${port}/healthz`);
        const answer = (await health.json()) as { status: string; files: unknown };
        console.log(`GET /healthz (${kind}): ${health.status} ${JSON.stringify(answer)}`);
        expect(health.status).toBe(200);
        expect(answer.status).toBe('ok');
        expect(JSON.stringify(answer.files)).toMatch(/[1-9]/);
      } finally {
        daemon.child.kill('SIGTERM');
      }
      expect(await daemon.exited, daemon.stderr()).toBe(0);
      expect(daemon.stderr()).not.toContain(KEY);
    },
  );
});
