/**
 * A local npm registry for the end-to-end tests: verdaccio (scripts/verdaccio-install.sh, once into
 * the user cache) on a free loopback port, with storage of its own and no uplink, so that what is in
 * it is only what the test published: the run's packed n8n-nodes-docex, as a maintainer publishes it.
 */
import { execFile } from 'node:child_process';
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
