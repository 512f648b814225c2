/**
 * The packed package in a real, running n8n inside a company network: n8n reaches the
 * service only through tinyproxy (basic auth) and trusts the service's private CA through
 * NODE_EXTRA_CA_CERTS, the settings docs/n8n.md "Behind a proxy / private CA" tells a builder to set.
 *
 * The service's name resolves for the proxy only (tinyproxy runs with an /etc/hosts of its own): n8n
 * cannot resolve it, so every request that reached the emulator went through the proxy. One workflow
 * runs as a builder runs it in the editor (POST /rest/workflows/:id/run): the manual trigger into
 * Extract and Document > Get Many, then the Docex trigger's "Fetch Test Event".
 */
import { lookup } from 'node:dns/promises';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { manualStart, outputOf, templateById } from './workflows.ts';
import type { N8nRest } from './n8n-rest.ts';
import { SHARED_N8N_WAIT_MS } from './shared.ts';
import { CREDENTIAL, prepareN8n, type RealN8n, type RunData } from './real-n8n.ts';
import { freePort, n8nReady, startN8n, until, type Service } from './services.ts';
import {
  ensureHosts,
  makePki,
  SERVICE_HOST,
  startTinyproxy,
  type Pki,
  type Tinyproxy,
} from '../support/network.ts';
import { templateWithField } from '../support/templates.ts';

/** The service's name for n8n: in the certificate, resolvable by the proxy only. */
const PROXIED_HOST = 'docex-behind-proxy.test';
const PROXY_USER = 'n8nbuilder';
const PROXY_PASSWORD = 'n8n-pr0xy-s3cret';

let dir: string;
let pki: Pki;
let n8n: RealN8n;
let proxy: Tinyproxy;
let server: (Service & { url: string; startedAt: number }) | undefined;
let cookie = '';
let rest: N8nRest;
let templateId = 0;
let emulatorPort = 0;

beforeAll(async () => {
  ensureHosts(); // SERVICE_HOST: the test's own set-up requests, which must not count as n8n's
  dir = mkdtempSync(join(tmpdir(), 'docex-n8n-proxy-'));
  chmodSync(dir, 0o755); // tinyproxy runs as nobody
  pki = makePki(dir, { dns: [PROXIED_HOST, SERVICE_HOST] });
  emulatorPort = await freePort();
  n8n = await prepareN8n({ port: emulatorPort, tls: pki.server, urlHost: PROXIED_HOST, taskDelayMs: 20 });
  proxy = await startTinyproxy(join(dir, 'proxy'), {
    connectPorts: [emulatorPort],
    auth: { user: PROXY_USER, password: PROXY_PASSWORD },
    hostsForProxyOnly: { [PROXIED_HOST]: '127.0.0.1' },
  });

  const setup = createNodeClient({
    baseUrl: `https://${SERVICE_HOST}:${emulatorPort}`,
    apiKey: n8n.emulator.keys[0]!,
    caFile: pki.caFile,
    env: {},
  });
  const folder = await setup.createFolder({ name: 'proxy e2e' });
  templateId = (await templateWithField(setup, folder.id, 'Invoices')).id;
  await writeFile(join(n8n.home, 'files', 'proxy-a.txt'), 'Invoice number: PX-A\n');
  await writeFile(join(n8n.home, 'files', 'proxy-b.txt'), 'Invoice number: PX-B\n');

  // What docs/n8n.md tells a builder to set, and nothing else: no NO_PROXY, no N8N_ proxy setting.
  server = await startN8n(n8n, {
    HTTPS_PROXY: `http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:${proxy.port}`,
    NODE_EXTRA_CA_CERTS: pki.caFile,
    NO_PROXY: '',
    no_proxy: '',
    HTTP_PROXY: '',
    http_proxy: '',
    https_proxy: '',
    ALL_PROXY: '',
    all_proxy: '',
    // proxy-from-env (n8n's) reads npm's settings first; `npm test` would pass an npmrc's on.
    npm_config_https_proxy: '',
    npm_config_proxy: '',
    npm_config_no_proxy: '',
  });
  await n8nReady(server);
  // The credential and the workflow through the REST API the editor uses (no n8n boot each).
  rest = await n8n.signIn(server);
  cookie = rest.cookie;
  await rest.importWorkflow(WORKFLOW());
  n8n.emulator.resetStats();
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await server?.stop();
  await proxy?.stop();
  await n8n?.cleanup();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const WORKFLOW_ID = 'wfproxy00000001';
const TRIGGER = 'When a Document Is Extracted';
const templateLocator = () => templateById(templateId);
const docex = (name: string, position: number, parameters: Record<string, unknown>, extra = {}) => ({
  parameters,
  id: name.toLowerCase().replace(/\W/g, '-'),
  name,
  type: 'n8n-nodes-docex.docex',
  typeVersion: 1,
  position: [position * 200, 0],
  credentials: CREDENTIAL,
  ...extra,
});

/** Start → Read Files → Extract → Get Many (once), and the trigger beside them. */
const WORKFLOW = () => ({
  id: WORKFLOW_ID,
  name: WORKFLOW_ID,
  active: false,
  nodes: [
    manualStart,
    {
      parameters: { fileSelector: join(n8n.home, 'files', 'proxy-*.txt'), options: {} },
      id: 'read',
      name: 'Read Files',
      type: 'n8n-nodes-base.readWriteFile',
      typeVersion: 1,
      position: [200, 0],
    },
    docex('Extract', 2, {
      resource: 'document',
      operation: 'extract',
      binaryPropertyName: 'data',
      templateId: templateLocator(),
      options: { pollInterval: 0.2, waitTimeout: 60 },
    }),
    docex(
      'Get Many',
      3,
      {
        resource: 'document',
        operation: 'getAll',
        returnAll: true,
        filters: { templateId: templateLocator() },
      },
      { executeOnce: true },
    ),
    {
      parameters: {
        pollTimes: { item: [{ mode: 'everyMinute' }] },
        event: 'newDocument',
        templateId: templateLocator(),
      },
      id: 'trigger',
      name: TRIGGER,
      type: 'n8n-nodes-docex.docexTrigger',
      typeVersion: 1,
      position: [0, 300],
      credentials: CREDENTIAL,
    },
  ],
  connections: {
    Start: { main: [[{ node: 'Read Files', type: 'main', index: 0 }]] },
    'Read Files': { main: [[{ node: 'Extract', type: 'main', index: 0 }]] },
    Extract: { main: [[{ node: 'Get Many', type: 'main', index: 0 }]] },
  },
  settings: {},
});

interface Execution {
  status: string;
  runData: RunData;
  error?: string;
}

/** Runs the workflow as the editor does (its Run button, or a trigger's Fetch Test Event) and waits for the execution's end. */
async function runInEditor(body: Record<string, unknown>): Promise<Execution> {
  const started = await fetch(`${server!.url}/rest/workflows/${WORKFLOW_ID}/run`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie },
    body: JSON.stringify(body),
  });
  const text = await started.text();
  expect(started.status, text).toBe(200);
  const executionId = (JSON.parse(text) as { data: { executionId?: string } }).data.executionId;
  expect(executionId, text).toBeTruthy();
  // n8n keeps execution data in `flatted` form: its own copy of the library reads it.
  const flatted = createRequire(join(n8n.installDir, 'node_modules', 'n8n', 'package.json'))('flatted') as {
    parse(text: string): { resultData: { runData: RunData; error?: { message: string } } };
  };
  return await until(
    `execution ${executionId} to end`,
    async () => {
      const response = await fetch(`${server!.url}/rest/executions/${executionId}`, { headers: { cookie } });
      if (response.status !== 200) return undefined;
      const { data } = (await response.json()) as { data: { status: string; data: string } };
      if (['new', 'running', 'waiting'].includes(data.status)) return undefined;
      const parsed = flatted.parse(data.data);
      return {
        status: data.status,
        runData: parsed.resultData.runData,
        error: parsed.resultData.error?.message,
      };
    },
    300_000,
    () => `${server!.output().slice(-3000)}\n${proxy.log().slice(-2000)}`,
  );
}

const out = (execution: Execution, node: string) => outputOf(execution.runData, node).map((i) => i.json);

describe('n8n behind a proxy with basic auth, trusting a private CA', () => {
  it('cannot reach the service but through the proxy: its name resolves for the proxy only', async () => {
    await expect(lookup(PROXIED_HOST)).rejects.toMatchObject({
      code: expect.stringMatching(/ENOTFOUND|EAI_AGAIN/),
    });
  });

  it('Extract and Get Many through the proxy: the results are right, the proxy log shows the tunnels', async () => {
    const execution = await runInEditor({ triggerToStartFrom: { name: 'Start' } });
    expect(execution.error, 'workflow error').toBeUndefined();
    expect(execution.status).toBe('success');
    const extracted = out(execution, 'Extract');
    expect(extracted.map((d) => [d.document_name, d['Invoice number']]).sort()).toEqual([
      ['proxy-a.txt', 'PX-A'],
      ['proxy-b.txt', 'PX-B'],
    ]);
    const listed = out(execution, 'Get Many');
    expect(listed.map((d) => d.document_id).sort()).toEqual(extracted.map((d) => d.document_id).sort());
    expect(listed.map((d) => d['Invoice number']).sort()).toEqual(['PX-A', 'PX-B']);

    const stats = n8n.emulator.stats();
    // The execution's two items share one upload (the node's Extract batches them, issue #42).
    expect(stats.requestsByOperation.upload_file).toBe(1);
    expect(stats.requestsByOperation.fetch_documents).toBeGreaterThanOrEqual(1);
    // n8n 2.40.7 builds its agents per request, so each request is a tunnel of its own: the proxy's
    // log names every request the service received (the set-up's went direct, by another name).
    expect(tunnels()).toBe(stats.totalRequests);
  });

  it("the trigger's Fetch Test Event through the proxy: the template's most recent documents", async () => {
    const before = n8n.emulator.stats().requestsByOperation.fetch_documents ?? 0;
    const tunnelsBefore = tunnels();
    const requestsBefore = n8n.emulator.stats().totalRequests;
    const execution = await runInEditor({
      triggerToStartFrom: { name: TRIGGER },
      destinationNode: { nodeName: TRIGGER, mode: 'inclusive' },
    });
    expect(execution.error, 'workflow error').toBeUndefined();
    expect(execution.status).toBe('success');
    const emitted = out(execution, TRIGGER);
    expect(emitted.map((d) => d['Invoice number']).sort()).toEqual(['PX-A', 'PX-B']);
    expect(n8n.emulator.stats().requestsByOperation.fetch_documents).toBe(before + 1);
    expect(tunnels() - tunnelsBefore).toBe(n8n.emulator.stats().totalRequests - requestsBefore);
    // Neither the run data nor n8n's log (at its default level, info) holds the proxy password.
    expect(JSON.stringify(execution)).not.toContain(PROXY_PASSWORD);
    expect(server!.output()).not.toContain(PROXY_PASSWORD);
  });

  it("the credential's Test button through the proxy", async () => {
    const tunnelsBefore = tunnels();
    const response = await fetch(`${server!.url}/rest/credentials/test`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie },
      body: JSON.stringify({
        credentials: {
          ...rest.credential(CREDENTIAL.docexApi),
          type: 'docexApi',
          data: { baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0] },
        },
      }),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(JSON.parse(text)).toEqual({ data: { status: 'OK', message: 'Connection successful!' } });
    expect(tunnels()).toBe(tunnelsBefore + 1);
  });
});

const tunnels = () => proxy.log().split(`CONNECT ${PROXIED_HOST}:${emulatorPort}`).length - 1;
