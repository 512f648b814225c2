/**
 * The packed package in a running n8n (the run's shared n8n, test/e2e/shared.ts: `n8n start`,
 * owner set up through its REST API) as a builder meets it: the credential test through the REST
 * call the credential dialog makes, and the editor's node panel driven in Chromium. One n8n and one
 * browser serve every check.
 */
import { join } from 'node:path';
import type { INodePropertyOptions } from 'n8n-workflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Docex } from '../../nodes/Docex/Docex.node.ts';
import { DocexTrigger } from '../../nodes/DocexTrigger/DocexTrigger.node.ts';
import { launchChromium, signInAsOwner, type BrowserContext, type Page } from './browser.ts';
import { createInvoiceTemplate } from './invoices.ts';
import { until } from './services.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
import { importOpenAiCredential } from './stand-in-model.ts';
import { exampleWorkflow } from './workflows.ts';

let n8n: SharedN8n;
let browser: BrowserContext | undefined;
let page: Page;
let base = '';

/**
 * How long a browser step may take (the first load of the editor's bundle is the slowest), per
 * millisecond n8n took to become ready: both are CPU-bound start-ups that stretch together on a
 * loaded machine. The measured ratio (docs/decisions.md, "The editor test has an n8n of its own") times a margin of 3.
 */
const SIGNIN_PER_READY = 0.27;
const UI_MS_PER_READY_MS = 3 * SIGNIN_PER_READY;
/** Playwright's own default, kept as the floor. */
const UI_FLOOR_MS = 30_000;
let uiLimitMs = UI_FLOOR_MS;

/** examples/n8n-agent.json, imported before the browser opens it: an AI Agent whose tools are our node. */
const AGENT_WORKFLOW = 'wfeditoragent001';
let agentExample: Awaited<ReturnType<typeof exampleWorkflow>>;

beforeAll(async () => {
  // An n8n of its own ('editor'): its start-up time sets the browser steps' limits (below).
  [n8n, browser] = await Promise.all([
    sharedN8n({}, 'editor'),
    launchChromium({ width: 1400, height: 1000 }),
  ]);
  // The model is never called here: its credential only has to exist for the panel.
  const openAi = { id: 'openaicred000003', name: 'OpenAI' };
  await importOpenAiCredential(n8n, openAi, 'http://127.0.0.1:9/v1');
  agentExample = await exampleWorkflow('n8n-agent.json', AGENT_WORKFLOW, {
    templateId: await createInvoiceTemplate(n8n.emulator, 'editor e2e'),
    credentials: { openAiApi: openAi },
  });
  await n8n.importWorkflow(agentExample);
  base = n8n.url;
  // How long the shared n8n took to be ready when it started (this file may not have waited for it).
  uiLimitMs = Math.max(UI_FLOOR_MS, Math.round(UI_MS_PER_READY_MS * n8n.readyMs));
  process.stderr.write(
    `editor e2e: n8n was ready after ${Math.round(n8n.readyMs)} ms; browser steps may take ${uiLimitMs} ms\n`,
  );

  page = await browser!.newPage();
  page.setDefaultTimeout(uiLimitMs);
  const loading = performance.now();
  await page.goto(`${base}/signin`);
  await page.locator('input[type="email"]').waitFor();
  process.stderr.write(
    `editor e2e: sign-in form rendered after ${Math.round(performance.now() - loading)} ms\n`,
  );
  await signInAsOwner(page);
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await browser?.close();
  await n8n?.cleanup();
});

/** POST /rest/credentials/test, as the credential dialog's "Retry" does, for the stored credential with `data`. */
async function credentialTest(data: { baseUrl: string; apiKey: string }) {
  return await n8n.rest.call<{ status: string; message: string }>('POST', '/credentials/test', {
    credentials: { ...n8n.credentials.docexApi, type: 'docexApi', data },
  });
}

describe('the credential test', () => {
  it("passes for a good key, shows the service's message on a 401, and a hint on a 403 or 404", async () => {
    const good = { baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0]! };
    expect(await credentialTest(good)).toEqual({ status: 'OK', message: 'Connection successful!' });
    // The emulator's own words for an unknown key: {"detail": "Invalid API key"}.
    expect(await credentialTest({ ...good, apiKey: 'not-a-key' })).toEqual({
      status: 'Error',
      message: 'check_api_key: HTTP 401 Unauthorized: Invalid API key (check the API key, without "Bearer")',
    });
    // A 401 with other words: they are the server's, not a text of ours.
    n8n.emulator.faults.set({ errorRate: 1, statuses: [401], operations: ['check_api_key'] });
    try {
      expect(await credentialTest(good)).toEqual({
        status: 'Error',
        message:
          'check_api_key: HTTP 401 Unauthorized: Injected fault (401) (check the API key, without "Bearer")',
      });
      // n8n 2.40.7 gives no way to show the body of another status (docs/n8n.md#credential).
      n8n.emulator.faults.set({ errorRate: 1, statuses: [403], operations: ['check_api_key'] });
      expect(await credentialTest(good)).toEqual({
        status: 'Error',
        message: 'check_api_key: HTTP 403: the key may be revoked or lack access',
      });
    } finally {
      n8n.emulator.faults.clear();
    }
    expect(await credentialTest({ ...good, baseUrl: `${good.baseUrl}/v1` })).toEqual({
      status: 'Error',
      message:
        'check_api_key: HTTP 404: no Document Extraction Service answers at this Base URL: give the address without /v1',
    });
  });
});

/** The node entries the panel lists now: each name with the description next to it. */
const listedNodes = () =>
  page.evaluate<Array<{ name: string; description: string }>>(
    `[...document.querySelectorAll('[data-test-id="node-creator-item-name"]')].map((name) => {
      let item = name.parentElement;
      while (item && !item.querySelector('[data-test-id="node-creator-item-description"]')) item = item.parentElement;
      const description = item?.querySelector('[data-test-id="node-creator-item-description"]');
      return { name: name.textContent.trim(), description: description ? description.textContent.trim() : '' };
    })`,
  );

/** A search no node matches. */
const NO_MATCH = 'zq-no-node-matches-this';

/**
 * Types `term` into the panel's search and waits until the list shown is that search's, with the
 * Document Extraction entry in it. The list re-renders a moment after the search changes, and the
 * list of the search before ("docex") holds the same entry, so waiting for the entry alone could
 * return at once and the entries read were the old list's (so the second term was never really
 * checked). A search that matches nothing empties the list first; the entry that appears after it
 * can only be the new search's.
 */
async function search(term: string) {
  const bar = page.locator('[data-test-id="node-creator-search-bar"]');
  const entry = page
    .locator('[data-test-id="node-creator-item-name"]:text-is("Document Extraction")')
    .first();
  await bar.fill(NO_MATCH);
  await entry.waitFor({ state: 'detached' });
  await bar.fill(term);
  await entry.waitFor();
  return await listedNodes();
}

/**
 * Opens the app entry and waits until its panel shows every one of `labels` (the list renders in
 * steps, and of its two groups one may be folded), then returns the page's text.
 *
 * Waits on the text the panel shows, which is what the tests read, not on one kind of item: waiting
 * for a visible action item timed out under load with the panel open and its triggers listed.
 */
async function openAppEntry(labels: string[]) {
  await page
    .locator('[data-test-id="node-creator-item-name"]:text-is("Document Extraction")')
    .first()
    .click();
  let shown = '';
  return await until(
    `the Document Extraction panel showing ${labels.length} labels`,
    async () => {
      shown = await page.locator('#app').innerText();
      return labels.every((label) => shown.includes(label)) ? shown : undefined;
    },
    uiLimitMs,
    // What the page showed says which step did not happen (the click, the panel, its groups).
    () => `wanted:\n${labels.join('\n')}\nthe page showed:\n${shown.slice(0, 3000)}`,
  );
}

describe('the node creator shows one Document Extraction app entry', () => {
  const action = new Docex().description;
  const trigger = new DocexTrigger().description;
  const actionLabels = action.properties
    .filter((p) => p.name === 'operation')
    .flatMap((p) => (p.options as INodePropertyOptions[]).map((o) => o.action!));
  const triggerLabels = (
    trigger.properties.find((p) => p.name === 'event')!.options as INodePropertyOptions[]
  ).map((o) => o.action!);

  it('in the trigger panel, searched as "docex" and as "invoice"', async () => {
    await page.goto(`${base}/workflow/new`);
    await page.locator('[data-test-id="canvas-add-button"]').click();
    for (const term of ['docex', 'invoice']) {
      const entries = (await search(term)).filter((e) => e.name.startsWith('Document Extraction'));
      expect(entries, term).toEqual([{ name: 'Document Extraction', description: trigger.description }]);
    }
    const text = await openAppEntry(triggerLabels);
    for (const label of triggerLabels) expect(text).toContain(label);
    expect(text).toContain(trigger.description);
    expect(text).toContain(`Triggers (${triggerLabels.length})`);
    expect(text).toContain(`Actions (${actionLabels.length})`);
  });

  it('in the panel for the next step, searched as "docex" and as "invoice"', async () => {
    await page.goto(`${base}/workflow/new`);
    await page.locator('[data-test-id="canvas-add-button"]').click();
    await page.locator('[data-test-id="node-creator-search-bar"]').fill('manual');
    await page.locator('[data-test-id="node-creator-item-name"]').first().click();
    await page.locator('[data-test-id="node-creator-plus-button"]').click();
    for (const term of ['docex', 'invoice']) {
      const entries = (await search(term)).filter((e) => e.name.startsWith('Document Extraction'));
      expect(entries, term).toEqual([{ name: 'Document Extraction', description: trigger.description }]);
    }
    expect(actionLabels).toHaveLength(29);
    const text = await openAppEntry(actionLabels);
    expect(text).toContain(trigger.description);
    expect(text).toContain(`Actions (${actionLabels.length})`);
    expect(text).toContain(`Triggers (${triggerLabels.length})`);
  });
});

describe("an AI Agent's Document Extraction tool in the editor", () => {
  it('its panel shows the hand-written description and the parameters the model fills, with no issue', async () => {
    const extract = agentExample.nodes.find((n) => n.name === 'Extract Document')!;
    await page.goto(`${base}/workflow/${AGENT_WORKFLOW}`);
    const onCanvas = page.locator('[data-test-id="canvas-node"][data-node-name="Extract Document"]');
    const panel = page.locator('[data-test-id="ndv"]');
    const shown = async () =>
      `${await page.locator('#app').innerText()}\n${await page.evaluate<string>(
        `[...document.querySelectorAll('textarea, input')].map((e) => e.value).join('\\n')`,
      )}`;
    try {
      await onCanvas.waitFor();
      // The canvas marks a node with issues (credential, required parameters) with a warning.
      expect(await onCanvas.locator('[data-test-id="canvas-node-status-warning"]').count()).toBe(0);
      await onCanvas.dblclick();
      await panel.waitFor();
      await until(
        'the tool description in the panel',
        async () => ((await shown()).includes(String(extract.parameters.toolDescription)) ? true : undefined),
        uiLimitMs,
      );
    } catch (error) {
      await page.screenshot({ path: join(n8n.filesDir, 'tool-panel.png') }).catch(() => undefined);
      throw new Error(`${(error as Error).message}\nthe page showed:\n${(await shown()).slice(0, 4000)}`);
    }
    const text = await panel.innerText();
    // n8n 2.40.7 shows a $fromAI parameter with a description of ours as its expression (its
    // "Defined automatically by the model" chip is for the bare form the editor writes itself).
    expect(text).toContain('File URL');
    expect(text).toContain(String(extract.parameters.fileUrl).replace(/^=/, ''));
    expect(text).toContain('Credential');
    // No issue banner on the panel (a missing credential or required parameter would show one).
    expect(await panel.locator('[data-test-id="node-issues"]').count()).toBe(0);
    expect(text).not.toMatch(/Parameter .* is required|Credentials? .* not set/i);
  });
});
