/**
 * The container image of examples/Dockerfile, built and run here. No image registry is reachable,
 * and `podman run` cannot run on these machines (docs/real-parts-offline.md), so: the base is the
 * Debian 12 root made from Debian's packages (test/e2e/debian-root.ts) imported into buildah's
 * storage, the image is built with `buildah bud --isolation chroot` from the release's linux-x64
 * archive, and its commands run with `buildah run --isolation chroot` (a chroot that shares this
 * machine's network, as the image's user, with volumes bound): `docex-sync --version`, the
 * image's own HEALTHCHECK command against the running daemon, and its ENTRYPOINT + CMD processing
 * a file dropped into the watch volume against the emulator. Not run: Docker's own health-check
 * scheduler, and network isolation (the emulator is on this machine's 127.0.0.1).
 *
 * examples/compose.yaml is checked against the Dockerfile without any tool: same paths, same variables.
 */
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS, archiveFile } from '../../scripts/release-layout.ts';
import { recordInstall, timed } from '../support/timing.ts';
import { debianRootTarball, debianRootUnavailable, mustRun } from './debian-root.ts';
import { repo } from './pack.ts';
import { releaseOnce, type Release } from './release-build.ts';
import {
  KEY,
  dropAndAwait,
  makeFolders,
  runToEnd,
  serviceWorld,
  start,
  type ServiceWorld,
  signalNodeIn,
} from './release-world.ts';
import { ensureDebianPackage, onPath } from './services.ts';

const BASE = 'localhost/docex-test-debian12:latest';
// Tagged by this process: buildah's storage is the machine's, and two runs (two checkouts) may
// build at once; each removes its own image when it ends.
const IMAGE_NAME = 'localhost/docex-sync-test';
const IMAGE = `${IMAGE_NAME}:${process.pid}`;
const dockerfile = await readFile(join(repo, 'examples/Dockerfile'), 'utf8');

describe('examples/compose.yaml and examples/Dockerfile', () => {
  const compose = parse(readFileSync(join(repo, 'examples/compose.yaml'), 'utf8')) as {
    services: Record<
      string,
      {
        build: { context: string; dockerfile: string };
        environment: Record<string, string>;
        volumes: string[];
      }
    >;
  };
  const service = compose.services['docex-sync']!;
  // The container's path of a volume: after the last colon but a mode (`:ro`), since the host part
  // may hold one too (`${DOCEX_INBOX:-./inbox}:/data/inbox`).
  const targets = service.volumes.map((v) =>
    v
      .split(':')
      .filter((p) => p !== 'ro' && p !== 'rw')
      .at(-1)!,
  );

  it('builds the Dockerfile from the checkout, where release/ is', () => {
    expect(join(repo, 'examples', service.build.context)).toBe(repo);
    expect(service.build.dockerfile).toBe('examples/Dockerfile');
    expect(dockerfile).toMatch(/^COPY release\//m);
  });

  it('mounts every folder the image makes for the service user, the state volume and the config its CMD reads', () => {
    const made = [...dockerfile.matchAll(/mkdir -p ([^;]+);/g)]
      .flatMap((m) => m[1]!.split(/\s+/))
      .filter((d) => d.startsWith('/data/') || d === '/var/lib/docex-sync');
    expect(made.length).toBeGreaterThan(4);
    for (const dir of made) expect(targets, dir).toContain(dir);
    expect(JSON.parse(/^VOLUME (.*)$/m.exec(dockerfile)![1]!)).toEqual(['/var/lib/docex-sync']);
    const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(dockerfile)![1]!) as string[];
    expect(targets).toContain(cmd[cmd.indexOf('--config') + 1]);
  });

  it("the compose config's paths are the mounted ones and its status port the health check's; the key comes from DOCEX_API_KEY", async () => {
    const config = parse(await readFile(join(repo, 'examples/docex-sync.compose.yaml'), 'utf8')) as {
      state_db: string;
      watch: { path: string; output: string; processed_dir: string; failed_dir: string }[];
      http: { port: number };
    };
    const w = config.watch[0]!;
    for (const path of [w.path, w.output, w.processed_dir, w.failed_dir])
      expect(targets, path).toContain(path);
    expect(config.state_db.startsWith('/var/lib/docex-sync/')).toBe(true);
    expect(dockerfile).toContain(`http://127.0.0.1:${config.http.port}/healthz`);
    expect(Object.keys(service.environment)).toContain('DOCEX_API_KEY');
    expect(dockerfile).toContain('DOCEX_API_KEY');
  });
});

const unavailable = debianRootUnavailable();
if (unavailable) console.log(`container.test.ts: the image is not built: ${unavailable}`);

let release: Release;
let service: ServiceWorld;
let scratch: string;
let container: string | undefined;
const buildah = (args: string[]) => runToEnd('buildah', args);

/** The base image, from the cached Debian root; kept in buildah's storage for later runs. */
async function baseImage() {
  if ((await buildah(['inspect', '--type', 'image', BASE])).status === 0) return;
  const started = performance.now();
  const from = (await mustRun('buildah', ['from', 'scratch'])).stdout.trim();
  const mount = (await mustRun('buildah', ['mount', from])).stdout.trim();
  await mustRun('tar', ['-xf', debianRootTarball(), '-C', mount]);
  await mustRun('buildah', ['umount', from]);
  await mustRun('buildah', ['commit', '-q', from, BASE]);
  await mustRun('buildah', ['rm', from]);
  recordInstall('buildah base image (Debian root)', performance.now() - started);
}

/**
 * Removes the test images of runs that ended without removing theirs (killed), and the containers
 * made from them: each image is tagged with its process's id, and holds a copy of the release.
 * `rmi` without -f: an image that also has another name only loses this one.
 */
async function removeImagesOfEndedRuns() {
  const ended = (name: string) => {
    const pid = name.startsWith(`${IMAGE_NAME}:`) ? Number(name.slice(IMAGE_NAME.length + 1)) : NaN;
    return Number.isInteger(pid) && pid !== process.pid && !isRunning(pid);
  };
  const containers = await buildah(['containers', '--format', '{{.ContainerName}}|{{.ImageName}}']);
  for (const [name, image] of containers.stdout.split('\n').map((line) => line.split('|')))
    if (name && image && ended(image)) await buildah(['rm', name]);
  const images = await buildah(['images', '--format', '{{.Name}}:{{.Tag}}']);
  for (const image of images.stdout.split('\n')) if (ended(image)) await buildah(['rmi', image]);
}

function isRunning(pid: number) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

beforeAll(async () => {
  if (unavailable) return;
  ensureDebianPackage('buildah', () => onPath('buildah'));
  scratch = await mkdtemp(join(tmpdir(), 'docex-container-'));
  // The emulator and the base image are made while the release is (the run's one, release-build.ts).
  await Promise.all([
    releaseOnce().then((made) => (release = made)),
    serviceWorld().then((made) => (service = made)),
    timed('buildah base image from the Debian root (made once, or its check)', baseImage),
    removeImagesOfEndedRuns(),
  ]);
}, 1_800_000);
afterAll(async () => {
  await service?.stop();
  if (container) await buildah(['rm', container]);
  if (!unavailable) await buildah(['rmi', '-f', IMAGE]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe.skipIf(unavailable)('the image, built with buildah and run', () => {
  let config: {
    User: string;
    Env?: string[];
    Entrypoint: string[];
    Cmd: string[];
    Healthcheck: { Test: string[] };
  };

  it('builds from the release archive on a base given as a build argument', async () => {
    const context = join(scratch, 'context');
    await mkdir(join(context, 'release'), { recursive: true });
    const linux = PLATFORMS.find((p) => p.name === 'linux-x64')!;
    await copyFile(
      release.file(archiveFile(release.version, linux)),
      join(context, 'release', archiveFile(release.version, linux)),
    );
    await copyFile(join(repo, 'examples/Dockerfile'), join(context, 'Dockerfile'));
    const built = await buildah([
      'bud',
      '--isolation',
      'chroot',
      '--format',
      'docker',
      '--build-arg',
      `BASE=${BASE}`,
      '-t',
      IMAGE,
      context,
    ]);
    console.log(
      `$ buildah bud --isolation chroot --format docker --build-arg BASE=${BASE} -t ${IMAGE} .\n${built.stdout.slice(-1500)}${built.stderr.slice(-1500)}`,
    );
    expect(built.status, built.stderr).toBe(0);
    expect(built.stdout).toContain(`docex-sync ${release.version}`);
    const inspected = JSON.parse((await buildah(['inspect', '--type', 'image', IMAGE])).stdout) as {
      Docker: { config: typeof config };
    };
    config = inspected.Docker.config;
    expect(config.User).toBe('docex-sync');
    expect(config.Entrypoint).toEqual(['docex-sync']);
    expect(config.Healthcheck.Test[0]).toBe('CMD');
    container = (await buildah(['from', IMAGE])).stdout.trim();
    expect(container).not.toBe('');
  });

  it('runs as a non-root user and answers docex-sync --version', async () => {
    const id = await buildah(['run', '--isolation', 'chroot', container!, '--', 'id', '-un']);
    expect(id.stdout.trim()).toBe('docex-sync');
    const version = await buildah([
      'run',
      '--isolation',
      'chroot',
      container!,
      '--',
      'docex-sync',
      '--version',
    ]);
    console.log(`$ buildah run ${IMAGE} -- docex-sync --version\n${version.stdout}${version.stderr}`);
    expect(version.stdout).toBe(`docex-sync ${release.version}\n`);
    // No node but the archive's in the image.
    expect(
      (await buildah(['run', '--isolation', 'chroot', container!, '--', 'sh', '-c', 'command -v node']))
        .status,
    ).not.toBe(0);
  });

  // The daemon is stopped through its wrapper as `docker stop` would stop it: SIGTERM to the node
  // process under `buildah run`, found by its program (Node 24 names its main thread MainThread).
  // The health check runs in the mounted root, since a second `buildah run` waits for the first.
  it('processes a file dropped into its watch volume, and its HEALTHCHECK command answers', async () => {
    const host = join(scratch, 'data');
    await makeFolders(host);
    // The compose config as shipped, with the test's template, quicker polls, and the emulator's URL
    // from DOCEX_BASE_URL as its comment says: its `api:` section (only base_url) goes, since
    // api.base_url wins over the variable and an `api:` left empty is refused. Each edit must
    // match, or the test would run a config other than the one it says.
    const edits: [RegExp, string][] = [
      [/^api:\n {2}base_url:.*\n/m, ''],
      [/template_id: 12\b/, `template_id: ${service.templateId}`],
      [/^watch:$/m, 'poll: { interval_ms: 100, max_interval_ms: 500 }\nwatch:'],
      [/(path: \/data\/inbox)$/m, '$1\n    stable_ms: 200'],
    ];
    let configText = await readFile(join(repo, 'examples/docex-sync.compose.yaml'), 'utf8');
    for (const [pattern, replacement] of edits) {
      expect(configText, `examples/docex-sync.compose.yaml has ${pattern}`).toMatch(pattern);
      configText = configText.replace(pattern, replacement);
    }
    await writeFile(join(host, 'docex-sync.yaml'), configText);
    const volumes = [
      `${join(host, 'docex-sync.yaml')}:/etc/docex-sync/docex-sync.yaml:ro`,
      `${join(host, 'inbox')}:/data/inbox`,
      `${join(host, 'results')}:/data/results`,
      `${join(host, 'processed')}:/data/processed`,
      `${join(host, 'failed')}:/data/failed`,
      `${join(host, 'state')}:/var/lib/docex-sync`,
    ].flatMap((v) => ['-v', v]);
    const env = ['--env', `DOCEX_API_KEY=${KEY}`, '--env', `DOCEX_BASE_URL=${service.emulator.url}`];
    // The HEALTHCHECK command runs as a container engine runs it: inside the image's file system, as
    // the image's user, beside the running daemon (docker exec). Not with a second `buildah run`:
    // buildah holds a lock for a run's whole length, so a second run waits until the daemon ends.
    // A chroot into the container's mounted root, on the shared network, is the same command.
    let healthCheck: () => Promise<Awaited<ReturnType<typeof runToEnd>>> = () => {
      throw new Error('the container is not mounted yet');
    };
    const mountRoot = async () => {
      const root = (await buildah(['mount', container!])).stdout.trim();
      expect(root).not.toBe('');
      const passwd = await readFile(join(root, 'etc/passwd'), 'utf8');
      const [, , uid, gid] = passwd
        .split('\n')
        .find((l) => l.startsWith(`${config.User}:`))!
        .split(':');
      // With the image's environment, not this process's (an engine passes none of the host's).
      const env = Object.fromEntries(
        (config.Env ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
      );
      healthCheck = () =>
        runToEnd('chroot', [`--userspec=${uid}:${gid}`, root, ...config.Healthcheck.Test.slice(1)], {
          env,
        });
    };
    const daemon = start(
      'buildah',
      [
        'run',
        '--isolation',
        'chroot',
        ...volumes,
        ...env,
        container!,
        '--',
        ...config.Entrypoint,
        ...config.Cmd,
      ],
      { detached: true },
    );
    let signalled: number[] = [];
    try {
      const result = await dropAndAwait(host, 'scan-007.txt', 'IMG-7', daemon);
      expect(JSON.stringify(result.document)).toContain('IMG-7');
      await mountRoot();
      const health = await healthCheck();
      console.log(
        `$ <HEALTHCHECK CMD> in the image, beside the daemon: exit ${health.status} ${health.stderr}`,
      );
      expect(health.status, health.stderr).toBe(0);
    } finally {
      signalled = signalNodeIn(daemon.child.pid!, 'SIGTERM');
    }
    expect(signalled, daemon.stderr()).toHaveLength(1);
    const code = await daemon.exited;
    expect(daemon.stderr()).toContain('stopped');
    expect(code, daemon.stderr()).toBe(0);
    expect(daemon.stderr()).not.toContain(KEY);
    // The health check fails once the daemon is gone: it asks the daemon, not itself.
    const after = await healthCheck();
    console.log(`$ <HEALTHCHECK CMD> after the daemon stopped: exit ${after.status}`);
    expect(after.status).toBe(1);
    await buildah(['umount', container!]);
  });
});
