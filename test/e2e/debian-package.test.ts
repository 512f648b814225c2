/**
 * The Debian package (npm run release, scripts/release.ts) installed for real, as a back office's
 * administrator would: into a Debian 12 root made from Debian's packages (test/e2e/debian-root.ts,
 * which has no Node.js at all) with `apt-get install ./docex-sync_*.deb` under chroot. Then the unit
 * is checked by `systemd-analyze verify`, docex-sync-enable refuses the config as installed and
 * enables the service once the config passes `check`, the service's own command run as the service
 * user processes a dropped file against the emulator (on 127.0.0.1 here: a chroot shares the
 * network), and remove keeps config and state while purge removes them, never the watched or output
 * folders. lintian checks both packages first (its verdict kept for the same bytes: `lintianVerdict`).
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readlinkSync, statSync } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEB, PLATFORMS } from '../../scripts/release-layout.ts';
import { timed } from '../support/timing.ts';
import { LINTIAN_CACHE, debianRootUnavailable, unpackDebianRoot, type DebianRoot } from './debian-root.ts';
import { releaseOnce, type Release } from './release-build.ts';
import {
  KEY,
  dropAndAwait,
  serviceWorld,
  watchConfig,
  type ServiceWorld,
  signalNodeIn,
} from './release-world.ts';
import { ensureDebianPackage, onPath } from './services.ts';

const run = promisify(execFile);
const skip = debianRootUnavailable();
if (skip) console.log(`debian-package.test.ts skipped: ${skip}`);

let release: Release;
let service: ServiceWorld;
let root: DebianRoot;
const debs = () =>
  PLATFORMS.filter((p) => p.debArch).map((p) => `${DEB.name}_${release.version}_${p.debArch}.deb`);
const amd64 = () => `${DEB.name}_${release.version}_amd64.deb`;
const at = (path: string) => join(root.dir, path);

/** Prints a command's transcript (for the report) and returns it. */
async function shown(command: string[], env?: Record<string, string>) {
  const result = await root.run(command, { env });
  console.log(`# ${command.join(' ')}\n${result.stdout}${result.stderr}(exit ${result.status})\n`);
  return result;
}

/**
 * lintian's verdict on these packages: run now, or the one an earlier run gave for the same bytes
 * (each package's SHA-256) with the same lintian and options, kept in the user cache
 * (~/.cache/docex/lintian). lintian takes ~50 s of CPU for both packages, and the release is made
 * again only when its sources change (test/e2e/release-build.ts), so most runs check the same bytes.
 * Only a clean verdict (exit 0) is kept: a failing one is run again, and shown as it is now.
 */
async function lintianVerdict(options: string[], files: string[]) {
  const version = (await run('lintian', ['--version'])).stdout.trim();
  const key = createHash('sha256').update(JSON.stringify([version, options]));
  for (const file of files)
    key.update(
      createHash('sha256')
        .update(await readFile(file))
        .digest('hex'),
    );
  const kept = join(LINTIAN_CACHE, `${key.digest('hex').slice(0, 32)}.json`);
  if (existsSync(kept)) {
    const verdict = JSON.parse(await readFile(kept, 'utf8')) as LintianVerdict;
    return { ...verdict, cached: new Date(statSync(kept).mtimeMs).toISOString() };
  }
  const ran = await run('lintian', [...options, ...files], { maxBuffer: 16 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ status: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({
      status: error.code ?? -1,
      stdout: error.stdout ?? '',
      stderr: error.stderr ?? String(error),
    }),
  );
  if (ran.status === 0) {
    await mkdir(LINTIAN_CACHE, { recursive: true });
    await writeFile(`${kept}.${process.pid}`, JSON.stringify(ran));
    await rename(`${kept}.${process.pid}`, kept);
  }
  return { ...ran, cached: undefined };
}
interface LintianVerdict {
  status: number;
  stdout: string;
  stderr: string;
}

beforeAll(async () => {
  if (skip) return;
  // The root and the emulator are made while the release is (the run's one, release-build.ts).
  await Promise.all([
    releaseOnce().then((made) => (release = made)),
    serviceWorld().then((made) => (service = made)),
    unpackDebianRoot().then((made) => (root = made)),
  ]);
  await copyFile(release.file(amd64()), at(`/tmp/${amd64()}`));
}, 1_800_000);
afterAll(async () => {
  await service?.stop();
  await root?.remove();
});

describe.skipIf(skip)('the Debian package', () => {
  it('passes lintian without errors (both architectures)', async () => {
    ensureDebianPackage('lintian', () => onPath('lintian'));
    const lintian = await timed(
      'lintian of both packages (run, or its verdict on the same bytes, cached)',
      () =>
        lintianVerdict(
          ['--tag-display-limit', '0'],
          debs().map((d) => release.file(d)),
        ),
    );
    console.log(
      `$ lintian ${debs().join(' ')}${lintian.cached ? ` (the verdict of ${lintian.cached}, on the same bytes)` : ''}\n${lintian.stdout}${lintian.stderr}`,
    );
    expect(lintian.stdout.split('\n').filter((l) => /^E: /.test(l))).toEqual([]);
    expect(lintian.status, lintian.stderr).toBe(0);
  });

  it('arm64: the same files for arm64, with its Node', () => {
    const contents = (deb: string) =>
      spawnSync('dpkg-deb', ['--contents', release.file(deb)], { encoding: 'utf8' })
        .stdout.split('\n')
        .map((l) =>
          l
            .replace(/^.*\s\.\//, './')
            .replace(/ -> .*/, '')
            .replace(/-(x64|arm64)\.node$/, '-ARCH.node'),
        )
        .filter(Boolean)
        .sort();
    const [x64, arm] = debs();
    expect(contents(arm!)).toEqual(contents(x64!));
    expect(
      spawnSync('dpkg-deb', ['--field', release.file(arm!), 'Architecture'], {
        encoding: 'utf8',
      }).stdout.trim(),
    ).toBe('arm64');
  });

  it('installs with apt-get into a Debian 12 without Node.js: commands on PATH, user, config, env, state; the service not enabled', async () => {
    expect((await root.run(['sh', '-c', 'command -v node nodejs'])).status).not.toBe(0);
    const install = await shown(['apt-get', 'install', '-y', '--no-install-recommends', `/tmp/${amd64()}`]);
    expect(install.status, install.stderr).toBe(0);
    expect(install.stdout).toContain('docex-sync-enable');

    expect(readlinkSync(at('/usr/bin/docex-sync'))).toBe(`${DEB.prefix}/bin/docex-sync`);
    expect(readlinkSync(at('/usr/bin/docex'))).toBe(`${DEB.prefix}/bin/docex`);
    expect((await shown(['docex-sync', '--version'])).stdout).toBe(`docex-sync ${release.version}\n`);
    expect((await root.run(['docex', '--version'])).stdout).toBe(`docex ${release.version}\n`);
    // man docex-sync, man docex: gzipped where man looks (dpkg -L, since a minimal root may exclude
    // /usr/share/man from unpacking).
    const listed = (await root.run(['dpkg', '-L', DEB.name])).stdout.split('\n');
    expect(listed).toEqual(
      expect.arrayContaining(['/usr/share/man/man1/docex-sync.1.gz', '/usr/share/man/man1/docex.1.gz']),
    );

    const user = await root.run(['getent', 'passwd', DEB.user]);
    expect(user.stdout).toMatch(
      new RegExp(`^${DEB.user}:x:\\d+:\\d+:[^:]*:${DEB.state}:/usr/sbin/nologin\\n$`),
    );
    const env = statSync(at(`${DEB.etc}/env`));
    expect(env.mode & 0o777).toBe(0o600);
    expect([env.uid, env.gid]).toEqual([0, 0]);
    const conffiles = await root.run(['dpkg-query', '-W', '-f=${Conffiles}', DEB.name]);
    expect(conffiles.stdout).toContain(`${DEB.etc}/docex-sync.yaml`);
    const config = await readFile(at(`${DEB.etc}/docex-sync.yaml`), 'utf8');
    expect(config).toMatch(/^# watch:$/m);
    expect(config).toMatch(/^# {3}- path: \/mnt\/office\/Invoices/m);
    expect(config).toMatch(/^state_db: \/var\/lib\/docex-sync\/state\.db/m);
    const state = await root.run(['stat', '-c', '%U %a', DEB.state]);
    expect(state.stdout.trim()).toBe(`${DEB.user} 750`);
    expect(existsSync(at(DEB.unit))).toBe(true);
    expect((await root.run(['systemctl', 'is-enabled', 'docex-sync.service'])).stdout.trim()).toBe(
      'disabled',
    );
  });

  it('its unit passes systemd-analyze verify, and runs as the service user with the env file', async () => {
    const verify = await shown(['systemd-analyze', 'verify', DEB.unit]);
    expect(verify.status, verify.stderr).toBe(0);
    expect(`${verify.stdout}${verify.stderr}`).not.toMatch(/docex-sync\.service:/);
    const unit = await readFile(at(DEB.unit), 'utf8');
    expect(unit).toMatch(new RegExp(`^User=${DEB.user}$`, 'm'));
    expect(unit).toMatch(new RegExp(`^EnvironmentFile=${DEB.etc}/env$`, 'm'));
    expect(unit).toMatch(
      /^ExecStart=\/usr\/bin\/docex-sync run --config \/etc\/docex-sync\/docex-sync\.yaml$/m,
    );
  });

  it('docex-sync-enable refuses the config as installed, and enables the service once it passes check', async () => {
    const refused = await shown([DEB.enable]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(/give at least one folder to watch/);
    expect(refused.stderr).toContain('the service is not enabled');
    expect(existsSync(at(DEB.wants))).toBe(false);

    // The administrator's edit: a watched share, outputs (one inside the state folder, which purge
    // must keep), the key and the service's URL in the env file.
    for (const dir of ['/srv/docex/inbox', '/srv/docex/processed', '/srv/docex/failed'])
      await mkdir(at(dir), { recursive: true });
    await root.run(['chown', '-R', `${DEB.user}:${DEB.user}`, '/srv/docex']);
    const config = watchConfig('/srv/docex', service.templateId)
      .replace('state_db: /srv/docex/state/sync.db', `state_db: ${DEB.state}/state.db`)
      .replace('output: /srv/docex/results', `output: ${DEB.state}/results`);
    await writeFile(at(`${DEB.etc}/docex-sync.yaml`), config);
    await writeFile(at(`${DEB.etc}/env`), `DOCEX_API_KEY=${KEY}\nDOCEX_BASE_URL=${service.emulator.url}\n`);

    const enabled = await shown([DEB.enable]);
    expect(enabled.status, enabled.stderr).toBe(0);
    expect(enabled.stdout).toContain('the API key is accepted');
    expect(enabled.stdout).toContain('the service is enabled');
    expect(lstatSync(at(DEB.wants)).isSymbolicLink()).toBe(true);
    expect((await root.run(['systemctl', 'is-enabled', 'docex-sync.service'])).stdout.trim()).toBe('enabled');
  });

  it("the service's command, as the service user with its env file, processes a dropped file", async () => {
    const unit = await readFile(at(DEB.unit), 'utf8');
    const execStart = /^ExecStart=(.*)$/m.exec(unit)![1]!.split(' ');
    const envFile = Object.fromEntries(
      (await readFile(at(`${DEB.etc}/env`), 'utf8'))
        .split('\n')
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    let signalled: number[] = [];
    const daemon = root.start(['runuser', '-u', DEB.user, '--', 'env', `HOME=${DEB.state}`, ...execStart], {
      env: envFile,
    });
    try {
      const result = await dropAndAwait(
        at('/srv/docex'),
        'scan-042.txt',
        'DEB-42',
        daemon,
        at(`${DEB.state}/results`),
      );
      expect(JSON.stringify(result.document)).toContain('DEB-42');
      expect(existsSync(at(`${DEB.state}/state.db`))).toBe(true);
      // What the daemon wrote is the service user's (the original keeps its owner when it is moved).
      const owner = await root.run(['stat', '-c', '%U', `${DEB.state}/state.db`, `${DEB.state}/results`]);
      expect(owner.stdout.trim().split('\n')).toEqual([DEB.user, DEB.user]);
      expect(existsSync(at('/srv/docex/processed/scan-042.txt'))).toBe(true);
    } finally {
      signalled = signalNodeIn(daemon.child.pid!, 'SIGTERM');
    }
    expect(signalled, daemon.stderr()).toHaveLength(1);
    expect(await daemon.exited, daemon.stderr()).toBe(0);
    expect(daemon.stderr()).not.toContain(KEY);
  });

  it('remove keeps the config and the state; purge removes them, never the watched or output folders', async () => {
    // What a run leaves (made here, since the run test above is skipped): the state DB under the
    // state folder, results beside it, an original in the processed folder.
    const made = await root.run([
      'runuser',
      '-u',
      DEB.user,
      '--',
      'sh',
      '-c',
      `touch ${DEB.state}/state.db && mkdir -p ${DEB.state}/results && echo '{}' > ${DEB.state}/results/scan-042.json`,
    ]);
    expect(made.status, made.stderr).toBe(0);
    await mkdir(at('/srv/docex/processed'), { recursive: true });
    await mkdir(at('/srv/docex/inbox'), { recursive: true });
    if (!existsSync(at('/srv/docex/processed/scan-042.txt')))
      await writeFile(at('/srv/docex/processed/scan-042.txt'), 'Invoice number: DEB-42\n');
    const removed = await shown(['apt-get', 'remove', '-y', DEB.name]);
    expect(removed.status, removed.stderr).toBe(0);
    expect(existsSync(at('/usr/bin/docex-sync'))).toBe(false);
    expect(existsSync(at(DEB.prefix))).toBe(false);
    for (const kept of [`${DEB.etc}/docex-sync.yaml`, `${DEB.etc}/env`, `${DEB.state}/state.db`])
      expect(existsSync(at(kept)), kept).toBe(true);

    const purged = await shown(['apt-get', 'purge', '-y', DEB.name]);
    expect(purged.status, purged.stderr).toBe(0);
    expect(existsSync(at(DEB.etc))).toBe(false);
    expect(existsSync(at(`${DEB.state}/state.db`))).toBe(false);
    expect(existsSync(at(DEB.wants))).toBe(false);
    expect(await readdir(at('/srv/docex/processed'))).toEqual(['scan-042.txt']);
    expect(existsSync(at('/srv/docex/inbox'))).toBe(true);
    expect((await readdir(at(`${DEB.state}/results`))).some((f) => f.endsWith('.json'))).toBe(true);
    expect(purged.stdout).toContain(`kept ${DEB.state}`);
    expect((await root.run(['dpkg-query', '-W', DEB.name])).status).not.toBe(0);
  });
});
