/**
 * n8n-nodes-docex installed and updated with n8n's own UI (Settings > Community Nodes > Install,
 * then Update), in Chromium, as a user meets it once the package is published on the public
 * registry: with no licence and no N8N_COMMUNITY_PACKAGES_REGISTRY (n8n Community refuses any
 * registry but its default one, docs/n8n.md).
 *
 * The n8n reaches https://registry.npmjs.org through this file's proxy (public-registry.ts): its
 * own registry check (n8n's HTTP client honours HTTPS_PROXY and NODE_EXTRA_CA_CERTS) and the npm it
 * runs (`npm pack`, `npm install`, `npm outdated`: npm 11 honours both too) get the test's verdaccio
 * under that name, holding the run's packed tarball, then a "0.1.1" made from it. Nothing else is
 * reachable: every other host the n8n asks for is refused, and the test lists them.
 */
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../emulator/index.ts';
import { timed } from '../support/timing.ts';
import { launchChromiumBrowser, signInAsOwner, type Browser, type BrowserContext, type Page } from './browser.ts';
import { createInvoiceTemplate } from './invoices.ts';
import { installDirOf, copyMigratedDatabase, n8nEnvironment, N8N_VERSION, OLDEST_N8N } from './n8n-instance.ts';
import { CREDENTIAL, N8nRest } from './n8n-rest.ts';
import { PUBLIC_REGISTRY_HOST, startPublicRegistryProxy } from './public-registry.ts';
import { startRegistry, withVersion } from './registry.ts';
import { n8nReady, setUpOwner, startN8n, until } from './services.ts';
import { installedN8n, sharedPack, SHARED_N8N_WAIT_MS } from './shared.ts';
import { outputOf, readAndExtract } from './workflows.ts';

const PACKAGE = 'n8n-nodes-docex';
const NEXT_VERSION = '0.1.1';

/** A bound for a hung install or update (n8n runs npm twice each): not a guess of its time. */
const INSTALL_LIMIT_MS = 300_000;
/** Playwright's own default, the floor of a browser step; a loaded machine stretches it (below). */
const UI_FLOOR_MS = 30_000;
/** A browser step's limit per millisecond its n8n took to be ready (editor.test.ts: 3 x 0.27). */
const UI_MS_PER_READY_MS = 0.81;

let browser: Browser | undefined;
let tarball = '';
let scratch = '';

beforeAll(async () => {
  const packed = await sharedPack();
  tarball = packed.tarballs[PACKAGE]!;
  scratch = await mkdtemp(join(tmpdir(), 'docex-ui-install-'));
  browser = await launchChromiumBrowser();
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await browser?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/**
 * A fresh n8n `n8nVersion` with no community package, whose only way out is the proxy: the world of
 * one version's check (its own registry, proxy and emulator, so each version installs 0.1.0 first).
 */
async function n8nBehindTheProxy(n8nVersion: string) {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => undefined);
  };
  try {
    const [bin, registry, emulator] = await Promise.all([
      installedN8n(n8nVersion),
      startRegistry(),
      startEmulator({ port: 0, taskDelayMs: 50 }),
    ]);
    stops.push(
      () => registry.stop(),
      () => emulator.stop(),
    );
    // Scaffolding, not the proof: the registry gets the tarball by npm publish's own request
    // (registry.test.ts proves `npm publish` itself).
    await registry.put(tarball);
    const proxy = await startPublicRegistryProxy(registry.url);
    stops.push(() => proxy.stop());

    const home = await mkdtemp(join(tmpdir(), 'docex-n8n-ui-install-'));
    stops.push(() => rm(home, { recursive: true, force: true }));
    // n8n skips its 266 migrations (about 4 CPU-s and 13 s of a boot).
    await copyMigratedDatabase(bin, home);
    await mkdir(join(home, 'files'));
    // The npm n8n runs reads a user's config: an empty one, as on a machine where nobody set npm up
    // (and no npm_config_* of an outer `npm test`, which would set npm's registry or cache).
    const userNpmrc = join(home, 'user.npmrc');
    await writeFile(userNpmrc, '');
    const env = Object.fromEntries(
      Object.entries(
        await n8nEnvironment(home, {
          HTTPS_PROXY: proxy.url,
          HTTP_PROXY: proxy.url,
          // The emulator and n8n's own loopback calls are not the registry's.
          NO_PROXY: '127.0.0.1,localhost',
          NODE_EXTRA_CA_CERTS: proxy.caFile,
          N8N_UNVERIFIED_PACKAGES_ENABLED: 'true',
        }),
      ).filter(([key]) => !/^npm_config_/i.test(key) || /^npm_config_globalconfig$/i.test(key)),
    );
    env.npm_config_userconfig = userNpmrc;
    // npm trusts the CA too. NODE_EXTRA_CA_CERTS alone is not enough for npm where its config names
    // a CA (this machine's global npmrc sets cafile): npm then passes `ca` to TLS, which replaces
    // Node's roots and the extra ones with them (npm ping: UNABLE_TO_VERIFY_LEAF_SIGNATURE).
    env.npm_config_cafile = proxy.caFile;
    const server = await startN8n({ bin, env });
    stops.push(() => server.stop());
    const readyMs = await n8nReady(server);
    const rest = new N8nRest(server.url, await setUpOwner(server.url), installDirOf(bin), () =>
      server.output().slice(-3000),
    );
    const templateId = await createInvoiceTemplate(emulator, `ui install ${n8nVersion}`);
    return { home, server, rest, registry, proxy, emulator, templateId, readyMs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const VERSIONS = [...new Set([N8N_VERSION, OLDEST_N8N])];

/**
 * The versions' worlds run at the same time (`concurrent` on each version's suite): each has its own
 * n8n, registry, proxy, emulator and browser context (its own cookies: both n8n are on 127.0.0.1),
 * and most of a world's time is waiting (n8n's boot, npm's installs), so two overlap; in each, the
 * install comes before the update (`concurrent: false` on the tests).
 */
describe.each(VERSIONS)('n8n %s: Settings > Community Nodes, from the public registry', { concurrent: true }, (n8nVersion) => {
  let n8n: Awaited<ReturnType<typeof n8nBehindTheProxy>>;
  let context: BrowserContext;
  let page: Page;
  let uiLimitMs = UI_FLOOR_MS;

  beforeAll(async () => {
    n8n = await n8nBehindTheProxy(n8nVersion);
    uiLimitMs = Math.max(UI_FLOOR_MS, Math.round(UI_MS_PER_READY_MS * n8n.readyMs));
    context = await browser!.newContext({ width: 1400, height: 1000 });
    page = await context.newPage();
    page.setDefaultTimeout(uiLimitMs);
    await page.goto(`${n8n.server.url}/signin`);
    await signInAsOwner(page);
  }, SHARED_N8N_WAIT_MS);

  afterAll(async () => {
    await page?.close();
    await context?.close();
    await n8n?.stop();
  });

  /** The package's card on the settings page, once it shows `text` (a version, the Update button). */
  const card = () => page.locator(`[data-test-id="community-package-card"]:has-text("${PACKAGE}")`);
  const waitForCard = async (text: string, limitMs: number) => {
    await until(
      `the ${PACKAGE} card to show "${text}"`,
      async () => {
        const shown = (await card().count()) > 0 ? await card().first().innerText() : '';
        return shown.includes(text) ? shown : undefined;
      },
      limitMs,
      () =>
        `n8n's output:\n${n8n.server.output().slice(-3000)}\nthe proxy served:\n${n8n.proxy.served.join('\n')}`,
    );
  };

  /** Runs Read File -> Extract on a new invoice; Extract's output. */
  const extractAnInvoice = async (workflowId: string, invoiceNumber: string) => {
    const file = join(n8n.home, 'files', `${invoiceNumber}.txt`);
    await writeFile(file, `Invoice number: ${invoiceNumber}\nTotal: 12,50\n`);
    const runData = await n8n.rest.execute(readAndExtract(workflowId, file, n8n.templateId));
    return outputOf(runData, 'Extract')[0]!.json;
  };

  /**
   * Leaves n8n's editor once the browser's part of a test is done: while it is open, Chromium's
   * renderer keeps computing (measured in the #44 notes of docs/decisions.md), and the rest of each
   * test (n8n's list, the disk, a workflow run) goes through the REST API.
   */
  const leaveTheEditor = () => page.goto('about:blank');

  const installedVersionOnDisk = async () =>
    (
      JSON.parse(
        await readFile(join(n8n.home, '.n8n', 'nodes', 'node_modules', PACKAGE, 'package.json'), 'utf8'),
      ) as { version: string }
    ).version;

  it('Install: n8n-nodes-docex comes from registry.npmjs.org (through the proxy), its nodes load, and a workflow extracts a file', { concurrent: false }, async () => {
    const version = Object.keys((await n8n.registry.packument(PACKAGE)).versions)[0]!;
    await page.goto(`${n8n.server.url}/settings/community-nodes`);
    // The empty page's one button, then the install dialog, as a user fills it in.
    await page.locator('button:has-text("Install a community node")').click();
    await page
      .locator('[data-test-id="package-name-input"] input, input[data-test-id="package-name-input"]')
      .first()
      .fill(PACKAGE);
    await page.locator('[data-test-id="user-agreement-checkbox"]').click();
    const started = performance.now();
    await page.locator('[data-test-id="install-community-package-button"]').click();
    await waitForCard(`v${version}`, INSTALL_LIMIT_MS);
    const installMs = performance.now() - started;
    await timed('UI install of n8n-nodes-docex', () => undefined, installMs);
    process.stderr.write(
      `ui-install e2e (n8n ${n8nVersion}): installed ${version} through the UI in ${Math.round(installMs)} ms (load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})\n`,
    );

    // The card names the package's nodes: n8n loaded them.
    const shown = await card().first().innerText();
    expect(shown).toContain('Document Extraction');
    await leaveTheEditor();
    const packages = await n8n.rest.call<
      Array<{ packageName: string; installedVersion: string; installedNodes: Array<{ type: string }> }>
    >('GET', '/community-packages');
    expect(packages.map((p) => [p.packageName, p.installedVersion])).toEqual([[PACKAGE, version]]);
    expect(packages[0]!.installedNodes.map((n) => n.type).sort()).toEqual([
      `${PACKAGE}.docex`,
      `${PACKAGE}.docexTrigger`,
    ]);
    expect(await installedVersionOnDisk()).toBe(version);
    // What n8n and its npm asked the public registry for: the package, nothing else.
    expect(n8n.proxy.served).toContain(`GET /${PACKAGE}/-/${PACKAGE}-${version}.tgz -> 200`);
    expect(n8n.proxy.served.every((line) => line.includes(PACKAGE))).toBe(true);

    // The credential type is the package's: n8n knows it only now.
    await n8n.rest.createCredential({
      ...CREDENTIAL.docexApi,
      type: 'docexApi',
      data: { baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0] },
    });
    const extracted = await extractAnInvoice('wfuiinstall00001', `UI-${version}`);
    process.stderr.write(
      `ui-install e2e (n8n ${n8nVersion}): Extract with ${version} returned ${JSON.stringify(extracted)}\n`,
    );
    expect(extracted).toMatchObject({
      document_name: `UI-${version}.txt`,
      'Invoice number': `UI-${version}`,
      Total: 12.5,
    });
  });

  it(`Update: ${NEXT_VERSION} published, the card offers it, the update installs it, and the workflow runs on it`, { concurrent: false }, async () => {
    await n8n.registry.put(await withVersion(tarball, NEXT_VERSION, await mkdtemp(join(scratch, `${n8nVersion}-`))));
    // The page asks n8n for the installed packages on load; n8n asks `npm outdated` (the registry).
    await page.goto(`${n8n.server.url}/settings/community-nodes`);
    await card().first().locator('button:has-text("Update")').click();
    const started = performance.now();
    await page.locator('button:has-text("Confirm update")').click();
    await waitForCard(`v${NEXT_VERSION}`, INSTALL_LIMIT_MS);
    const updateMs = performance.now() - started;
    await leaveTheEditor();
    await timed('UI update of n8n-nodes-docex', () => undefined, updateMs);
    process.stderr.write(
      `ui-install e2e (n8n ${n8nVersion}): updated to ${NEXT_VERSION} through the UI in ${Math.round(updateMs)} ms (load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})\n`,
    );

    expect(await installedVersionOnDisk()).toBe(NEXT_VERSION);
    const packages = await n8n.rest.call<Array<{ packageName: string; installedVersion: string }>>(
      'GET',
      '/community-packages',
    );
    expect(packages.map((p) => [p.packageName, p.installedVersion])).toEqual([[PACKAGE, NEXT_VERSION]]);
    expect(n8n.proxy.served).toContain(`GET /${PACKAGE}/-/${PACKAGE}-${NEXT_VERSION}.tgz -> 200`);

    const extracted = await extractAnInvoice('wfuiinstall00002', `UI-${NEXT_VERSION}`);
    process.stderr.write(
      `ui-install e2e (n8n ${n8nVersion}): Extract with ${NEXT_VERSION} returned ${JSON.stringify(extracted)}\n`,
    );
    expect(extracted).toMatchObject({
      document_name: `UI-${NEXT_VERSION}.txt`,
      'Invoice number': `UI-${NEXT_VERSION}`,
      Total: 12.5,
    });
    // Every other host n8n tried (its own services) was refused, never reached.
    process.stderr.write(
      `ui-install e2e (n8n ${n8nVersion}): hosts refused by the proxy: ${[...new Set(n8n.proxy.refused)].join(', ') || 'none'}\n`,
    );
    expect(n8n.proxy.refused).not.toContain(`${PUBLIC_REGISTRY_HOST}:443`);
  });
});
