/**
 * docex-sync as a process inside a company network, with real parts: the emulator over HTTPS with a
 * private CA (makePki) trusted through api.ca_file, tinyproxy with basic auth given in api.proxy. The
 * service's name resolves for the proxy only, so a file that ends archived went through the proxy.
 * Then the secrets scan: the proxy password appears in no log line (debug level and the --debug
 * trace), not in the state DB's bytes (the file and its -wal), results, status, /api/status,
 * /metrics, nor in the errors of a wrong or unreachable proxy.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../../cli-kit/src/exit-codes.ts';
import { freePort } from '../../e2e/services.ts';
import {
  ensureHosts,
  makePki,
  SERVICE_HOST,
  startTinyproxy,
  type Pki,
  type Tinyproxy,
} from '../../support/network.ts';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  SECRET,
  stateOf,
  stopCliChildren,
  until,
  type World,
} from '../helpers.ts';

/** The service's name for the daemon: in the certificate, resolvable by the proxy only. */
const PROXIED_HOST = 'docex-sync-behind-proxy.test';
const PROXY_USER = 'syncuser';
const PROXY_PASSWORD = 'SECRETPASS-pr0xy-4711';
/** No proxy settings from the environment the tests run in: only api.proxy counts. */
const NO_PROXY_ENV = {
  HTTPS_PROXY: '',
  https_proxy: '',
  HTTP_PROXY: '',
  http_proxy: '',
  NO_PROXY: '',
  no_proxy: '',
};

let dir: string;
let pki: Pki;
let proxy: Tinyproxy;
let world: World | undefined;
let emulatorPort = 0;

await calibrate();

beforeAll(async () => {
  ensureHosts(); // SERVICE_HOST: the test's own set-up client
  dir = mkdtempSync(join(tmpdir(), 'docex-sync-net-'));
  chmodSync(dir, 0o755); // tinyproxy runs as nobody
  pki = makePki(dir, { dns: [PROXIED_HOST, SERVICE_HOST] });
  emulatorPort = await freePort();
  proxy = await startTinyproxy(join(dir, 'proxy'), {
    connectPorts: [emulatorPort],
    auth: { user: PROXY_USER, password: PROXY_PASSWORD },
    hostsForProxyOnly: { [PROXIED_HOST]: '127.0.0.1' },
  });
});

afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

afterAll(async () => {
  await proxy?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const proxyUrl = (password = PROXY_PASSWORD, port = proxy.port) =>
  `http://${PROXY_USER}:${password}@127.0.0.1:${port}`;

/** A world whose daemon reaches https://PROXIED_HOST:PORT through api.proxy, trusting the CA by api.ca_file. */
async function proxiedWorld(proxy: string, extraYaml = '') {
  return await makeWorld({
    emulator: { port: emulatorPort, tls: pki.server, urlHost: SERVICE_HOST },
    caFile: pki.caFile,
    apiYaml: `base_url: "https://${PROXIED_HOST}:${emulatorPort}", proxy: "${proxy}", ca_file: "${pki.caFile}"`,
    extraYaml,
  });
}

/** Every file under `root`, as bytes decoded leniently (a secret in a binary file still shows). */
function filesUnder(root: string): Array<{ path: string; text: string }> {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .map((name) => join(root, name))
    .filter((path) => statSync(path).isFile())
    .map((path) => ({ path, text: readFileSync(path).toString('latin1') }));
}

const get = async (port: number, path: string) => {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, text: await response.text() };
};

describe('docex-sync through a proxy with basic auth, over TLS with a private CA', () => {
  it('a watched folder end to end: files dropped → results, originals archived; the proxy log shows the traffic; the password is nowhere', async () => {
    const httpPort = await freePort();
    world = await proxiedWorld(proxyUrl(), `http: { port: ${httpPort} }\nlog_level: debug`);
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('PX-1'));
    await writeFile(join(world.dir, 'inbox', 'b.txt'), invoice('PX-2', '12,00'));
    const tunnelsBefore = tunnels();

    const run = runCli(['run', '--config', world.configFile, '--debug'], NO_PROXY_ENV);
    await until(
      'both files archived',
      () => stateOf(world!, 'a.txt') === 'archived' && stateOf(world!, 'b.txt') === 'archived',
      60_000,
    );
    // Each file's bytes sent once (in one request or two: files due together share an upload).
    expect(Object.values(world.emulator.stats().uploadsByHash)).toEqual([1, 1]);
    expect(tunnels()).toBeGreaterThan(tunnelsBefore);
    // The --debug trace names the proxy, its credentials redacted.
    expect(run.output()).toMatch(
      new RegExp(
        `docex-sync http: POST /v1/upload_file/\\S* 200 .* via proxy http://\\[REDACTED\\]@127\\.0\\.0\\.1:${proxy.port}`,
      ),
    );
    const results = filesUnder(join(world.dir, 'results'));
    expect(results.map((r) => r.text).join('\n')).toMatch(/PX-1[\s\S]*PX-2|PX-2[\s\S]*PX-1/);
    expect(readdirSync(join(world.dir, 'processed'), { recursive: true })).toEqual(
      expect.arrayContaining([expect.stringMatching(/a\.txt$/), expect.stringMatching(/b\.txt$/)]),
    );

    // Read while the daemon runs: the -wal exists only then.
    const apiStatus = await get(httpPort, '/api/status');
    const metrics = await get(httpPort, '/metrics');
    expect(apiStatus.status).toBe(200);
    expect(metrics.status).toBe(200);
    const stateFiles = filesUnder(join(world.dir, 'state'));
    expect(stateFiles.map((f) => f.path)).toEqual(
      expect.arrayContaining([expect.stringMatching(/sync\.db-wal$/)]),
    );
    const status = runCli(['status', '--config', world.configFile, '--json'], NO_PROXY_ENV);
    expect(await status.exited).toBe(0);
    const check = runCli(['check', '--config', world.configFile, '--debug'], NO_PROXY_ENV);
    expect(await check.exited).toBe(0);

    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const places = [
      { path: 'run output (log_level debug, --debug)', text: run.output() },
      { path: 'status --json', text: status.output() },
      { path: 'check --debug', text: check.output() },
      { path: '/api/status', text: apiStatus.text },
      { path: '/metrics', text: metrics.text },
      ...stateFiles,
      ...filesUnder(join(world.dir, 'state')), // after the stop: the checkpointed DB file
      ...results,
    ];
    expect(run.output()).toContain('"level":20'); // debug lines were written, and scanned
    for (const place of places) {
      expect(place.text, place.path).not.toContain(PROXY_PASSWORD);
      expect(place.text, place.path).not.toContain(SECRET);
    }
  });

  it('without api.proxy the service cannot be reached: its name resolves for the proxy only (so the test above proves the proxy was used)', async () => {
    world = await makeWorld({
      emulator: { port: emulatorPort, tls: pki.server, urlHost: SERVICE_HOST },
      caFile: pki.caFile,
      apiYaml: `base_url: "https://${PROXIED_HOST}:${emulatorPort}", ca_file: "${pki.caFile}"`,
    });
    const check = runCli(['check', '--config', world.configFile], NO_PROXY_ENV);
    expect(await check.exited).toBe(EXIT.dns);
    expect(check.output()).toMatch(
      new RegExp(`cannot resolve the host name ${PROXIED_HOST.replace(/\./g, '\\.')}`),
    );
  });

  it.each([
    [
      'a wrong proxy password (tinyproxy answers 401 to a CONNECT, others 407)',
      () => proxyUrl('WRONG-SECRETPASS-0815'),
      EXIT.proxyAuth,
      /refused its user name and password \(40[17] /,
    ],
    [
      'an unreachable proxy',
      () => proxyUrl(PROXY_PASSWORD, 1),
      EXIT.proxy,
      /cannot be reached: connection refused/,
    ],
  ])(
    '%s: check says so, with the credentials redacted, at debug level too',
    async (_name, url, code, message) => {
      world = await proxiedWorld(url(), 'log_level: debug');
      const check = runCli(['check', '--config', world.configFile, '--debug'], NO_PROXY_ENV);
      expect(await check.exited).toBe(code);
      expect(check.output()).toMatch(message);
      expect(check.output()).toMatch(/http:\/\/\[REDACTED\]@127\.0\.0\.1:\d+/);
      expect(check.output()).not.toContain('SECRETPASS');
    },
  );
});

const tunnels = () => proxy.log().split(`CONNECT ${PROXIED_HOST}:${emulatorPort}`).length - 1;
