/**
 * n8n-nodes-docex installed from an npm registry, the three ways n8n users install a community
 * package (docs/n8n.md, "Install"), into a real n8n: the run's packed tarball is published to a
 * local registry (test/e2e/registry.ts: verdaccio, no uplink), n8n is pointed at it with
 * N8N_COMMUNITY_PACKAGES_REGISTRY, and a workflow extracts a file against this file's emulator.
 *
 * On each n8n version the suite covers (the newest and the oldest, n8n-instance.ts), one n8n serves
 * the three: its user folder gets the package by a plain `npm install` in
 * ~/.n8n/nodes (the manual way) before it starts, it starts with N8N_COMMUNITY_PACKAGES naming the
 * package (the Docker way), and the REST call of the UI installer (Settings > Community nodes >
 * Install) is made on it once it runs. What n8n does with the last two happens before it touches the
 * package's folder (its registry checks), so they do not disturb the first.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timed } from '../support/timing.ts';
import { createInvoiceTemplate } from './invoices.ts';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import {
  HEADLESS_N8N,
  installDirOf,
  copyMigratedDatabase,
  n8nEnvironment,
  N8N_VERSION,
  OLDEST_N8N,
} from './n8n-instance.ts';
import { CREDENTIAL, N8nRest } from './n8n-rest.ts';
import { npmEnvironment, startRegistry, type LocalRegistry } from './registry.ts';
import { n8nReady, setUpOwner, startN8n } from './services.ts';
import { installedN8n, sharedPack, SHARED_N8N_WAIT_MS } from './shared.ts';
import { outputOf, readAndExtract } from './workflows.ts';

const run = promisify(execFile);
const PACKAGE = 'n8n-nodes-docex';

let registry: LocalRegistry;
let emulator: Emulator;
let version = '';
let templateId = 0;

beforeAll(async () => {
  const packed = await sharedPack();
  [registry, emulator] = await Promise.all([startRegistry(), startEmulator({ port: 0, taskDelayMs: 50 })]);
  await registry.publish(packed.tarballs[PACKAGE]!);
  version = Object.keys((await registry.packument(PACKAGE)).versions)[0]!;
  templateId = await createInvoiceTemplate(emulator, 'registry e2e');
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await Promise.allSettled([registry?.stop(), emulator?.stop()]);
});

it('the registry holds the package as published: the version of the tarball, tagged latest', async () => {
  const packument = await registry.packument(PACKAGE);
  expect(packument['dist-tags'].latest).toBe(version);
});

/** A real n8n `n8nVersion` whose user folder got the package from the registry (way 3), started with ways 2's settings. */
async function installedFromRegistry(n8nVersion: string) {
  const bin = await installedN8n(n8nVersion);
  const home = await mkdtemp(join(tmpdir(), 'docex-n8n-registry-'));
  // n8n skips its 266 migrations (about 4 CPU-s and 13 s of a boot).
  await copyMigratedDatabase(bin, home);
  const nodesDir = join(home, '.n8n', 'nodes');
  await mkdir(nodesDir, { recursive: true });
  await mkdir(join(home, 'files'));
  // The manual way (docs/n8n.md): `npm install n8n-nodes-docex` in ~/.n8n/nodes, with the registry
  // the package is published to. An empty user config: what a user's plain npm does.
  const emptyConfig = join(home, 'empty.npmrc');
  await writeFile(emptyConfig, '');
  await timed('npm install in ~/.n8n/nodes', () =>
    run('npm', ['install', PACKAGE, '--registry', registry.url, '--no-audit', '--no-fund'], {
      cwd: nodesDir,
      env: npmEnvironment(emptyConfig),
      encoding: 'utf8',
    }),
  );
  // Headless: the UI installer's REST call is made, no browser opens the editor.
  const env = await n8nEnvironment(home, {
    ...HEADLESS_N8N,
    N8N_COMMUNITY_PACKAGES_REGISTRY: registry.url,
    N8N_COMMUNITY_PACKAGES_MANAGED_BY_ENV: 'true',
    N8N_COMMUNITY_PACKAGES: JSON.stringify([{ name: PACKAGE, version }]),
    N8N_UNVERIFIED_PACKAGES_ENABLED: 'true',
  });
  const server = await startN8n({ bin, env });
  const stop = async () => {
    await server.stop();
    await rm(home, { recursive: true, force: true });
  };
  try {
    await n8nReady(server);
    const rest = new N8nRest(server.url, await setUpOwner(server.url), installDirOf(bin), () =>
      server.output().slice(-3000),
    );
    await rest.createCredential({
      ...CREDENTIAL.docexApi,
      type: 'docexApi',
      data: { baseUrl: emulator.url, apiKey: emulator.keys[0] },
    });
    return { home, server, rest, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const VERSIONS = [...new Set([N8N_VERSION, OLDEST_N8N])];

describe.each(VERSIONS)('n8n-nodes-docex from an npm registry into n8n %s', (n8nVersion) => {
  let n8n: Awaited<ReturnType<typeof installedFromRegistry>>;
  beforeAll(async () => {
    n8n = await installedFromRegistry(n8nVersion);
  }, SHARED_N8N_WAIT_MS);
  afterAll(async () => {
    await n8n?.stop();
  });

  it('installs with a plain `npm install` in ~/.n8n/nodes (no peer n8n-workflow fetched), and a workflow extracts a file', async () => {
    const nodesDir = join(n8n.home, '.n8n', 'nodes');
    const manifest = JSON.parse(await readFile(join(nodesDir, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies)).toEqual([PACKAGE]);
    // The peer n8n-workflow is n8n's own: a copy in ~/.n8n/nodes would be a second n8n-workflow
    // (and pulls isolated-vm, which has to compile).
    await expect(readFile(join(nodesDir, 'node_modules', 'n8n-workflow', 'package.json'))).rejects.toThrow();

    // One emulator serves every version's n8n, and it refuses the same bytes twice (DUPLICATE):
    // each version's invoice has a number of its own.
    const invoiceNumber = `REG-${VERSIONS.indexOf(n8nVersion) + 1}`;
    const file = join(n8n.home, 'files', 'invoice.txt');
    await writeFile(file, `Invoice number: ${invoiceNumber}\nTotal: 12,50\n`);
    const runData = await n8n.rest.execute(readAndExtract('wfregistrynpm01', file, templateId));
    const [extracted] = outputOf(runData, 'Extract');
    expect(extracted!.json).toMatchObject({
      document_name: 'invoice.txt',
      'Invoice number': invoiceNumber,
      Total: 12.5,
    });
  });

  // n8n Community edition (no licence) refuses any registry but registry.npmjs.org for its own
  // installer: N8N_COMMUNITY_PACKAGES_REGISTRY is the licensed feature
  // feat:communityNodes:customRegistry (n8n's CommunityPackagesService.getNpmRegistry). These two
  // checks say what such a user sees; docs/n8n.md says it before they try.
  const NOT_LICENSED = 'Your license does not allow for feat:communityNodes:customRegistry';

  it('N8N_COMMUNITY_PACKAGES at start-up with a private registry: n8n Community says the registry needs a licence, and starts', () => {
    const output = n8n.server.output();
    expect(output).toContain(`Failed to install community package '${PACKAGE}@${version}' from env`);
    expect(output).toContain(NOT_LICENSED);
  });

  it("the UI installer's call on an n8n whose packages N8N_COMMUNITY_PACKAGES manages: refused, saying so", async () => {
    // With N8N_COMMUNITY_PACKAGES_MANAGED_BY_ENV the UI cannot change packages at all (what it
    // answers without that setting, the licence refusal, is not tested here: another n8n boot).
    const refused = await n8n.rest
      .call('POST', '/community-packages', { name: PACKAGE, version })
      .then(() => 'installed', (error: Error) => error.message);
    expect(refused).toContain('Community packages are managed via environment variables');
  });
});
