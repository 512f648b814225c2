/**
 * docex inside a company network, with real parts (emulator over HTTPS with a private CA, tinyproxy
 * with basic auth): each failure its message and exit code, api.proxy / api.ca_file in a profile,
 * and the --debug / DOCEX_DEBUG=http trace with no key and no proxy password in it.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import {
  ensureHosts,
  makePki,
  OTHER_HOST,
  SERVICE_HOST,
  startTinyproxy,
  type Pki,
  type Tinyproxy,
} from '../support/network.ts';
import { inProcess } from './helpers.ts';
import { EXIT } from '../../cli-kit/src/exit-codes.ts';

const KEY = 'sk-net-secret-4711';
const PASSWORD = 'pr0xy-pw-cli';
let dir: string;
let pki: Pki;
let emu: Emulator;
let expired: Emulator;
let proxy: Tinyproxy;

beforeAll(async () => {
  ensureHosts();
  dir = mkdtempSync(join(tmpdir(), 'docex-cli-net-'));
  chmodSync(dir, 0o755);
  pki = makePki(dir);
  const companies = [{ name: 'Acme', apiKey: KEY }];
  emu = await startEmulator({ tls: pki.server, urlHost: SERVICE_HOST, companies });
  expired = await startEmulator({ tls: pki.expired, urlHost: SERVICE_HOST, companies });
  proxy = await startTinyproxy(join(dir, 'proxy'), {
    connectPorts: [Number(new URL(emu.url).port)],
    auth: { user: 'alice', password: PASSWORD },
  });
});

afterAll(async () => {
  await Promise.all([emu?.stop(), expired?.stop(), proxy?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

/** `docex folder list` with a profile holding `api` (base_url, proxy, ca_file...). */
async function docex(api: Record<string, string>, args: string[] = [], env: Record<string, string> = {}) {
  const config = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(
    config,
    `profiles:\n  default:\n${Object.entries(api)
      .map(([k, v]) => `    ${k}: ${/^\d+$/.test(v) ? v : `"${v}"`}\n`)
      .join('')}`,
  );
  return inProcess(['folders', 'list', '--config', config, ...args], { env: { DOCEX_API_KEY: KEY, ...env } });
}

const withAuth = () => proxy.url.replace('//', `//alice:${PASSWORD}@`);

describe('docex: each failure its message and exit code', () => {
  test('trusted with api.ca_file through api.proxy (credentials); --debug traces each request', async () => {
    const run = await docex({ base_url: emu.url, ca_file: pki.caFile, proxy: withAuth() }, ['--debug']);
    expect(run.stderr).toMatch(
      new RegExp(
        `^docex http: GET /v1/fetch_all_folders/ 200 \\d+ ms sent 0 B received \\d+ B via proxy http://\\[REDACTED\\]@127\\.0\\.0\\.1:${proxy.port}$`,
        'm',
      ),
    );
    expect(run.code).toBe(0);
    expect(run.stderr + run.stdout).not.toContain(PASSWORD);
    expect(run.stderr + run.stdout).not.toContain(KEY);
    expect(proxy.log()).toContain(`CONNECT ${SERVICE_HOST}:`);
  });

  test('DOCEX_DEBUG=http traces too; direct without a proxy', async () => {
    const run = await docex({ base_url: emu.url, ca_file: pki.caFile }, [], { DOCEX_DEBUG: 'http' });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/^docex http: GET \/v1\/fetch_all_folders\/ 200 \d+ ms .* direct$/m);
  });

  test.each([
    [
      'unknown issuer',
      () => ({ base_url: emu.url }),
      EXIT.tlsUnknownIssuer,
      /TLS: the certificate of docex-api\.test .* issued by "CN=Docex Test Root CA".*set profiles\.default\.ca_file in \S+\.yaml or NODE_EXTRA_CA_CERTS/,
    ],
    [
      'name mismatch',
      () => ({ base_url: emu.url.replace(SERVICE_HOST, OTHER_HOST), ca_file: pki.caFile }),
      EXIT.tlsNameMismatch,
      /is not valid for that name; it names DNS:docex-api\.test/,
    ],
    [
      'expired',
      () => ({ base_url: expired.url, ca_file: pki.caFile }),
      EXIT.tlsExpired,
      /TLS: the certificate of docex-api\.test .* expired on /,
    ],
    [
      'proxy authentication required',
      () => ({ base_url: emu.url, ca_file: pki.caFile, proxy: proxy.url }),
      EXIT.proxyAuth,
      /the proxy http:\/\/127\.0\.0\.1:\d+ requires authentication \(407/,
    ],
    [
      'proxy unreachable',
      () => ({ base_url: emu.url, proxy: 'http://127.0.0.1:1' }),
      EXIT.proxy,
      /the proxy http:\/\/127\.0\.0\.1:1 cannot be reached: connection refused/,
    ],
    [
      'DNS failure',
      () => ({ base_url: 'https://docex-nowhere.invalid' }),
      EXIT.dns,
      /cannot resolve the host name docex-nowhere\.invalid/,
    ],
    [
      'connection refused',
      () => ({ base_url: 'https://127.0.0.1:1' }),
      EXIT.refused,
      /connection refused by 127\.0\.0\.1:1 \(ECONNREFUSED\): nothing listens there; check the service URL \(profiles\.default\.base_url in \S+\.yaml\)/,
    ],
  ])('%s: exit %s', async (_name, api, code, message) => {
    const run = await docex({ max_retries: '0', ...api() } as Record<string, string>);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/^docex: fetch_all_folders: /);
    expect(run.code).toBe(code);
  });

  test('an api.proxy that is not usable and a missing api.ca_file are config errors (exit 2), no password shown', async () => {
    const socks = await docex({ base_url: emu.url, proxy: `socks5://alice:${PASSWORD}@127.0.0.1:1080` });
    expect(socks.code).toBe(2);
    expect(socks.stderr).toMatch(/profiles\.default\.proxy: socks5:\/\/ proxies are not supported/);
    expect(socks.stderr).not.toContain(PASSWORD);
    const missing = await docex({ base_url: emu.url, ca_file: join(dir, 'nope.pem') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/profiles\.default\.ca_file: cannot read .*nope\.pem \(ENOENT\)/);
  });
});
