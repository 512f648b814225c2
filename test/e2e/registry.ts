/**
 * A local npm registry for the end-to-end tests: verdaccio (scripts/verdaccio-install.sh, once into
 * the user cache) on a free loopback port, with storage of its own and no uplink, so that what is in
 * it is only what the test published: the run's packed n8n-nodes-docex, as a maintainer publishes it.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { timed } from '../support/timing.ts';
import { freePort, startProcess, until, type Service } from './services.ts';

const run = promisify(execFile);
const repo = join(import.meta.dirname, '../..');

export interface LocalRegistry {
  /** The registry's URL, `http://127.0.0.1:<port>` (what N8N_COMMUNITY_PACKAGES_REGISTRY and npm's --registry take). */
  url: string;
  /** A user config for npm with the publisher's token for this registry. */
  npmrc: string;
  /** Publishes a tarball (`npm publish <tarball>`), as its maintainer would. */
  publish(tarball: string): Promise<void>;
  /**
   * Puts a tarball in the registry with the request `npm publish` sends (one PUT of the packument
   * with the tarball attached), made here, without an npm process: for the tests whose proof is
   * what an install gets from the registry, not how the package got there (registry.test.ts
   * proves `npm publish` itself). An npm process costs 1-2 CPU-s and seconds of wall per publish.
   */
  put(tarball: string): Promise<void>;
  /** What the registry holds of `name`: its versions and dist-tags. */
  packument(name: string): Promise<{ versions: Record<string, unknown>; 'dist-tags': Record<string, string> }>;
  output(): string;
  stop(): Promise<void>;
}

/** npm's environment without what an outer `npm run` exports (npm_config_*), but the machine's global config. */
export const npmEnvironment = (userconfig: string): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^npm_config_/i.test(k) || /^npm_config_globalconfig$/i.test(k),
    ),
  ),
  npm_config_userconfig: userconfig,
});

export async function startRegistry(): Promise<LocalRegistry> {
  const { stdout } = await timed('verdaccio install (or its check)', () =>
    run('bash', [join(repo, 'scripts/verdaccio-install.sh')], { encoding: 'utf8' }),
  );
  const bin = stdout.trim();
  const dir = await mkdtemp(join(tmpdir(), 'docex-registry-'));
  await mkdir(join(dir, 'storage'));
  // Anyone may read; publishing takes a user (npm publish refuses to send without a token anyway).
  await writeFile(
    join(dir, 'config.yaml'),
    [
      `storage: ${join(dir, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(dir, 'htpasswd')}`,
      'packages:',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const server: Service = startProcess(bin, ['--config', join(dir, 'config.yaml'), '--listen', `127.0.0.1:${port}`]);
  await until(
    'verdaccio to answer /-/ping',
    async () => {
      if (server.process.exitCode !== null) throw new Error(`verdaccio exited:\n${server.output()}`);
      const response = await fetch(`${url}/-/ping`).catch(() => undefined);
      return response?.status === 200 ? true : undefined;
    },
    120_000,
    server.output,
  );
  // The publisher's account, as `npm adduser` makes it: the answer carries the token npm sends.
  const added = await fetch(`${url}/-/user/org.couchdb.user:docex`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'docex', password: 'docex-e2e-registry' }),
  });
  const { token } = (await added.json()) as { token?: string };
  if (added.status !== 201 || !token) throw new Error(`verdaccio refused the publisher's account: ${added.status}`);
  const npmrc = join(dir, 'npmrc');
  await writeFile(npmrc, `//127.0.0.1:${port}/:_authToken=${token}\n`);
  return {
    url,
    npmrc,
    async publish(tarball) {
      await timed('npm publish to the local registry', () =>
        run('npm', ['publish', tarball, '--registry', url, '--loglevel=error'], {
          env: npmEnvironment(npmrc),
          encoding: 'utf8',
        }),
      );
    },
    async put(tarball) {
      await timed('PUT of a tarball into the local registry', async () => {
        const request = publishRequest(await readFile(tarball), await manifestOf(tarball), url);
        const response = await fetch(`${url}/${encodeURIComponent(request.name)}`, {
          method: 'PUT',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(request),
        });
        if (response.status !== 201)
          throw new Error(
            `verdaccio refused ${request.name}'s tarball ${tarball}: ${response.status} ${await response.text()}`,
          );
      });
    },
    async packument(name) {
      const response = await fetch(`${url}/${encodeURIComponent(name)}`);
      if (response.status !== 200) throw new Error(`the registry has no ${name}: ${response.status}`);
      return (await response.json()) as Awaited<ReturnType<LocalRegistry['packument']>>;
    },
    output: () => server.output(),
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The package.json inside a package tarball (npm's layout: package/package.json). */
async function manifestOf(tarball: string): Promise<PackageManifest> {
  const { stdout } = await run('tar', ['-xzOf', tarball, 'package/package.json'], {
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as PackageManifest;
}

interface PackageManifest {
  name: string;
  version: string;
  description?: string;
  [field: string]: unknown;
}

/**
 * The body of `npm publish` (npm's libnpmpublish) for `tarball` with `manifest` to the registry at
 * `registryUrl`: the packument of one version, tagged latest, its dist naming the tarball by its
 * sha1 and sha512 (what npm checks at install), and the tarball itself, base64, as an attachment.
 */
function publishRequest(tarball: Buffer, manifest: PackageManifest, registryUrl: string) {
  const { name, version } = manifest;
  const fileName = `${name.replace(/^@[^/]+\//, '')}-${version}.tgz`;
  const dist = {
    shasum: createHash('sha1').update(tarball).digest('hex'),
    integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
    tarball: `${registryUrl}/${name}/-/${fileName}`,
  };
  return {
    _id: name,
    name,
    description: manifest.description,
    'dist-tags': { latest: version },
    versions: { [version]: { ...manifest, _id: `${name}@${version}`, dist } },
    access: null,
    _attachments: {
      [fileName]: { content_type: 'application/octet-stream', data: tarball.toString('base64'), length: tarball.length },
    },
  };
}

/**
 * A copy of `tarball` as version `version` (its package.json changed, nothing else): the "next
 * release" an update installs. Written into `dir`; its path.
 */
export async function withVersion(tarball: string, version: string, dir: string): Promise<string> {
  const work = await mkdtemp(join(dir, 'version-'));
  await run('tar', ['-xzf', tarball, '-C', work]);
  const manifest = join(work, 'package', 'package.json');
  const json = JSON.parse(await readFile(manifest, 'utf8')) as { name: string; version: string };
  json.version = version;
  await writeFile(manifest, `${JSON.stringify(json, null, 2)}\n`);
  const out = join(dir, `${json.name}-${version}.tgz`);
  await run('tar', ['-czf', out, '-C', work, 'package']);
  return out;
}
