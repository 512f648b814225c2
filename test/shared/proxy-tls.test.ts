/**
 * The Node transport inside a company network, with real parts: the emulator over HTTPS with a
 * private CA made by openssl, tinyproxy (Debian's) with and without basic auth, and a CONNECT proxy
 * of our own that drops tunnels (a fault tinyproxy cannot be told to make).
 */
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  DocexConnectionError,
  DocexDnsError,
  DocexProxyAuthError,
  DocexProxyError,
  DocexTimeoutError,
  DocexTlsError,
} from '@docex/shared';
import { createNodeClient, type NodeClientOptions } from '@docex/shared/node';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { freePort } from '../e2e/services.ts';
import {
  ensureHosts,
  makePki,
  OTHER_HOST,
  SERVICE_HOST,
  startTinyproxy,
  type Pki,
  type Tinyproxy,
} from '../support/network.ts';
import { caught, everythingOf } from '../support/client.ts';

const PASSWORD = 'pr0xy-s3cret-pw';
let dir: string;
let pki: Pki;
let tlsEmu: Emulator; // https://docex-api.test:PORT, the CA's certificate
let expiredEmu: Emulator; // the same name, an expired certificate
let plainEmu: Emulator; // http://docex-api.test:PORT
let proxy: Tinyproxy; // no auth
let authProxy: Tinyproxy; // basic auth
const port = (url: string) => Number(new URL(url).port);

beforeAll(async () => {
  ensureHosts();
  dir = mkdtempSync(join(tmpdir(), 'docex-net-'));
  chmodSync(dir, 0o755); // tinyproxy runs as nobody
  pki = makePki(dir);
  const urlHost = SERVICE_HOST;
  tlsEmu = await startEmulator({ tls: pki.server, urlHost, taskDelayMs: 20 });
  expiredEmu = await startEmulator({ tls: pki.expired, urlHost });
  plainEmu = await startEmulator({ urlHost });
  const connectPorts = [port(tlsEmu.url), port(plainEmu.url)];
  proxy = await startTinyproxy(join(dir, 'open'), { connectPorts });
  authProxy = await startTinyproxy(join(dir, 'auth'), {
    connectPorts,
    auth: { user: 'alice', password: PASSWORD },
  });
});

afterAll(async () => {
  await Promise.all([tlsEmu?.stop(), expiredEmu?.stop(), plainEmu?.stop(), proxy?.stop(), authProxy?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

const client = (emu: Emulator, options: Partial<NodeClientOptions> = {}) =>
  createNodeClient({ baseUrl: emu.url, apiKey: emu.keys[0]!, env: {}, retry: { maxRetries: 0 }, ...options });
const pdf = () => ({ data: new TextEncoder().encode('%PDF-1.4 test'), fileName: 'a.pdf' });
const connects = (p: Tinyproxy, target: string) => p.log().split(`CONNECT ${target}`).length - 1;

describe('TLS with a private CA', () => {
  test('trusted through caFile (the CA added to the store, not replacing it)', async () => {
    const c = client(tlsEmu, { caFile: pki.caFile });
    expect((await c.checkApiKey()).valid).toBe(true);
    const upload = await c.uploadFile({ files: [pdf()] });
    expect(upload.task_id).toBeTruthy();
  });

  test('trusted through NODE_EXTRA_CA_CERTS (a child process: Node reads it at start)', async () => {
    const script = join(dir, 'extra-ca.ts');
    writeFileSync(
      script,
      `import { createNodeClient } from ${JSON.stringify(join(import.meta.dirname, '../../shared/src/node/index.ts'))};
       const c = createNodeClient({ baseUrl: process.argv[2], apiKey: process.argv[3], env: {}, retry: { maxRetries: 0 } });
       c.checkApiKey().then((r) => console.log('valid', r.valid), (e) => { console.log('error', e.message); process.exitCode = 1; });`,
    );
    // Not spawnSync: the emulator answers from this process's event loop.
    const run = (env: NodeJS.ProcessEnv) =>
      new Promise<{ stdout: string }>((resolve) =>
        execFile(process.execPath, [script, tlsEmu.url, tlsEmu.keys[0]!], { env }, (_error, stdout) =>
          resolve({ stdout }),
        ),
      );
    const trusted = await run({ ...process.env, NODE_EXTRA_CA_CERTS: pki.caFile });
    expect(trusted.stdout.trim()).toBe('valid true');
    const without = await run({ ...process.env, NODE_EXTRA_CA_CERTS: '' });
    expect(without.stdout).toMatch(
      /^error check_api_key: TLS: .*set the caFile option or NODE_EXTRA_CA_CERTS/,
    );
  });

  test('refused without the CA: the issuer and subject named, and what to set', async () => {
    const error = (await caught(client(tlsEmu).checkApiKey())) as DocexTlsError;
    expect(error).toBeInstanceOf(DocexTlsError);
    expect(error.reason).toBe('unknown-issuer');
    expect(error.message).toBe(
      `check_api_key: TLS: the certificate of ${SERVICE_HOST} (subject CN=${SERVICE_HOST}) is issued by "CN=Docex Test Root CA", which this machine does not trust (UNABLE_TO_VERIFY_LEAF_SIGNATURE): set the caFile option or NODE_EXTRA_CA_CERTS to the PEM file of the CA that issued it (a proxy that inspects TLS signs with the company's CA)`,
    );
    expect(error.retryable).toBe(true); // the daemon holds files and tries later...
  });

  test('...but the client does not repeat a refused certificate', async () => {
    const retries: object[] = [];
    const logger = { debug() {}, info() {}, warn: (o: object) => retries.push(o), error() {} };
    const c = client(tlsEmu, { retry: { maxRetries: 3, initialDelayMs: 1 }, logger });
    expect(await caught(c.checkApiKey())).toBeInstanceOf(DocexTlsError);
    expect(retries).toEqual([]);
  });

  test('refused on a name mismatch, naming the names the certificate holds', async () => {
    const other = tlsEmu.url.replace(SERVICE_HOST, OTHER_HOST);
    const error = (await caught(
      createNodeClient({
        baseUrl: other,
        apiKey: 'k',
        env: {},
        caFile: pki.caFile,
        retry: { maxRetries: 0 },
      }).checkApiKey(),
    )) as DocexTlsError;
    expect(error).toBeInstanceOf(DocexTlsError);
    expect(error.reason).toBe('name-mismatch');
    expect(error.message).toBe(
      `check_api_key: TLS: the certificate presented for ${OTHER_HOST} (subject CN=${SERVICE_HOST}) is not valid for that name; it names DNS:${SERVICE_HOST} (ERR_TLS_CERT_ALTNAME_INVALID): use a host name of the certificate in the service URL (the baseUrl option), or have the certificate reissued`,
    );
  });

  test('refused on an expired certificate, with its date', async () => {
    const error = (await caught(client(expiredEmu, { caFile: pki.caFile }).checkApiKey())) as DocexTlsError;
    expect(error).toBeInstanceOf(DocexTlsError);
    expect(error.reason).toBe('expired');
    expect(error.message).toMatch(
      new RegExp(
        `^check_api_key: TLS: the certificate of ${SERVICE_HOST} \\(subject CN=${SERVICE_HOST}\\) expired on \\w{3} +\\d+ [\\d:]+ \\d{4} GMT \\(CERT_HAS_EXPIRED\\): the service must renew it`,
      ),
    );
  });

  test('a CA file that cannot be read or holds no certificate is refused at once, naming it', () => {
    expect(() => client(tlsEmu, { caFile: join(dir, 'missing.pem') })).toThrow(
      `CA file ${join(dir, 'missing.pem')} cannot be read (ENOENT): give the path of a PEM file holding the CA certificate(s)`,
    );
    writeFileSync(join(dir, 'empty.pem'), 'nothing here');
    expect(() => client(tlsEmu, { caFile: join(dir, 'empty.pem') })).toThrow(/holds no PEM certificate/);
  });

  test('a host name that does not resolve is a DNS error of its own', async () => {
    const error = await caught(
      createNodeClient({
        baseUrl: 'https://docex-nowhere.invalid',
        apiKey: 'k',
        env: {},
        retry: { maxRetries: 0 },
      }).checkApiKey(),
    );
    expect(error).toBeInstanceOf(DocexDnsError);
    expect((error as Error).message).toMatch(
      /^check_api_key: cannot resolve the host name docex-nowhere\.invalid \((ENOTFOUND|EAI_AGAIN)\): check the service URL/,
    );
  });
});

describe('through tinyproxy', () => {
  test('HTTPS_PROXY: every request goes through a CONNECT tunnel (its log), reads and uploads', async () => {
    const target = `${SERVICE_HOST}:${port(tlsEmu.url)}`;
    const before = connects(proxy, target);
    const c = client(tlsEmu, { caFile: pki.caFile, env: { HTTPS_PROXY: proxy.url } });
    expect(c.transport.proxy).toBe(proxy.url);
    expect((await c.checkApiKey()).valid).toBe(true);
    await c.uploadFile({ files: [pdf()] });
    await c.uploadFile({ files: [pdf()] });
    // The read may share a pooled tunnel; each upload has one of its own.
    expect(connects(proxy, target) - before).toBeGreaterThanOrEqual(3);
  });

  test('lower-case https_proxy, and http_proxy for an http:// service', async () => {
    const target = `${SERVICE_HOST}:${port(plainEmu.url)}`;
    const before = connects(proxy, target);
    const c = client(plainEmu, { env: { http_proxy: proxy.url } });
    expect((await c.checkApiKey()).valid).toBe(true);
    expect(connects(proxy, target) - before).toBe(1);
    const viaHttps = client(tlsEmu, { caFile: pki.caFile, env: { https_proxy: proxy.url } });
    expect((await viaHttps.checkApiKey()).valid).toBe(true);
  });

  test.each([SERVICE_HOST, '.test', `${SERVICE_HOST}:${0}`, '*'])(
    'NO_PROXY=%s bypasses it',
    async (noProxy) => {
      const entry = noProxy.endsWith(':0') ? `${SERVICE_HOST}:${port(tlsEmu.url)}` : noProxy;
      const target = `${SERVICE_HOST}:${port(tlsEmu.url)}`;
      const before = connects(proxy, target);
      const c = client(tlsEmu, { caFile: pki.caFile, env: { HTTPS_PROXY: proxy.url, NO_PROXY: entry } });
      expect(c.transport.proxy).toBeUndefined();
      expect((await c.checkApiKey()).valid).toBe(true);
      expect(connects(proxy, target)).toBe(before);
    },
  );

  test('proxy: false ignores the environment; an explicit proxy wins over it', async () => {
    expect(client(tlsEmu, { env: { HTTPS_PROXY: proxy.url }, proxy: false }).transport.proxy).toBeUndefined();
    const c = client(tlsEmu, {
      caFile: pki.caFile,
      env: { HTTPS_PROXY: 'http://127.0.0.1:1' },
      proxy: proxy.url,
    });
    expect((await c.checkApiKey()).valid).toBe(true);
  });

  test('407 without credentials: an error of its own naming the proxy', async () => {
    const error = (await caught(
      client(tlsEmu, { caFile: pki.caFile, proxy: authProxy.url }).checkApiKey(),
    )) as DocexProxyAuthError;
    expect(error).toBeInstanceOf(DocexProxyAuthError);
    expect(error.retryable).toBe(true);
    expect(error.message).toBe(
      `check_api_key: the proxy ${authProxy.url} requires authentication (407 Proxy Authentication Required): give http://USER:PASSWORD@host:port in the proxy option or HTTPS_PROXY`,
    );
  });

  test('407 with a wrong password: says so, shows no credentials', async () => {
    const wrong = authProxy.url.replace('//', '//alice:not-the-password@');
    const error = (await caught(
      client(tlsEmu, { caFile: pki.caFile, proxy: wrong }).checkApiKey(),
    )) as DocexProxyAuthError;
    expect(error).toBeInstanceOf(DocexProxyAuthError);
    expect(error.message).toBe(
      `check_api_key: the proxy http://[REDACTED]@127.0.0.1:${authProxy.port} refused its user name and password (401 Unauthorized): correct them in the proxy option or HTTPS_PROXY`,
    );
    expect(everythingOf(error)).not.toContain('not-the-password');
    expect(everythingOf(error)).not.toContain('alice');
  });

  test('with the right credentials: through, and the password in no error', async () => {
    const withAuth = authProxy.url.replace('//', `//alice:${PASSWORD}@`);
    const c = client(tlsEmu, { caFile: pki.caFile, env: { HTTPS_PROXY: withAuth } });
    expect(c.transport.proxy).toBe(`http://[REDACTED]@127.0.0.1:${authProxy.port}`);
    expect((await c.checkApiKey()).valid).toBe(true);
    const error = await caught(c.fetchTasksResults({ task_id: 'nope' }));
    expect(everythingOf(error)).not.toContain(PASSWORD);
    expect(authProxy.log()).toContain(`CONNECT ${SERVICE_HOST}:${port(tlsEmu.url)}`);
  });

  test('a proxy that is not there: "cannot be reached", not "service unreachable"', async () => {
    const closed = await freePort();
    const error = (await caught(
      client(tlsEmu, { proxy: `http://127.0.0.1:${closed}` }).checkApiKey(),
    )) as DocexProxyError;
    expect(error).toBeInstanceOf(DocexProxyError);
    expect(error.message).toBe(
      `check_api_key: the proxy http://127.0.0.1:${closed} cannot be reached: connection refused (ECONNREFUSED); check HTTPS_PROXY / HTTP_PROXY or the proxy option, or exempt the service with NO_PROXY`,
    );
  });

  test('a tunnel the proxy refuses (a port not in its ConnectPort list)', async () => {
    const c = client(expiredEmu, { proxy: proxy.url });
    const error = (await caught(c.checkApiKey())) as DocexProxyError;
    expect(error).toBeInstanceOf(DocexProxyError);
    expect(error.message).toMatch(
      new RegExp(
        `^check_api_key: the proxy ${proxy.url} refused the tunnel to ${SERVICE_HOST}:${port(expiredEmu.url)} \\(403 .*\\): its rules forbid this destination`,
      ),
    );
  });

  test('a certificate refused behind the proxy is still explained (read through the tunnel)', async () => {
    const error = (await caught(client(tlsEmu, { proxy: proxy.url }).checkApiKey())) as DocexTlsError;
    expect(error).toBeInstanceOf(DocexTlsError);
    expect(error.message).toContain('issued by "CN=Docex Test Root CA"');
  });
});

describe("the client's promises hold through the proxy", () => {
  test('the rate limit, measured at the service: reads and streamed uploads over TLS, no 429', async () => {
    const rate = 12;
    tlsEmu.resetStats();
    tlsEmu.faults.set({ rateLimit: { perSecond: rate, retryAfterSeconds: 1 }, latencyMs: [0, 40] });
    const file = join(dir, 'scan.pdf');
    writeFileSync(file, Buffer.alloc(300_000, 7));
    const c = client(tlsEmu, {
      caFile: pki.caFile,
      proxy: proxy.url,
      concurrency: 8,
      intervalCap: rate,
      intervalMs: 1000,
      rateMarginMs: 100, // the proxy's hop in the same busy process (see rate-limit.test.ts)
    });
    try {
      const calls = Array.from({ length: 40 }, (_, i) =>
        i % 8 === 3 ? c.uploadFile({ files: [{ path: file }] }) : c.checkApiKey(),
      );
      const results = await Promise.allSettled(calls);
      expect(
        results
          .filter((r) => r.status === 'rejected')
          .map((r) => String((r as PromiseRejectedResult).reason)),
      ).toEqual([]);
    } finally {
      tlsEmu.faults.clear();
    }
    const stats = tlsEmu.stats();
    expect(stats.totalRequests).toBe(40);
    expect(stats.maxRequestsInOneSecond).toBeLessThanOrEqual(rate);
  }, 30_000);

  test('an upload streams through the proxy and TLS: a 256 MiB file never sits in memory whole', async () => {
    // A client process of its own (the emulator here keeps what it receives): its peak RSS stays far
    // below the file's size, which a buffered body would add to it.
    const size = 256 * 1024 * 1024;
    const file = join(dir, 'big.pdf');
    writeFileSync(file, Buffer.alloc(size, 7));
    tlsEmu.resetStats();
    const script = [
      "import { createNodeClient } from '@docex/shared/node';",
      'const c = createNodeClient({ baseUrl: process.env.URL, apiKey: process.env.KEY, caFile: process.env.CA,',
      '  proxy: process.env.PROXY, env: {}, retry: { maxRetries: 0 }, timeoutMs: 600_000 });',
      'const baseline = process.resourceUsage().maxRSS;',
      'await c.uploadFile({ files: [{ path: process.env.FILE }] });',
      'console.log(JSON.stringify({ baseline, peak: process.resourceUsage().maxRSS }));',
    ].join('\n');
    const proxyUrl = new URL(authProxy.url);
    proxyUrl.username = 'alice';
    proxyUrl.password = PASSWORD;
    const out = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        ['--input-type=module', '-e', script],
        {
          cwd: process.cwd(),
          env: {
            ...process.env,
            URL: tlsEmu.url,
            KEY: tlsEmu.keys[0]!,
            CA: pki.caFile,
            PROXY: proxyUrl.href,
            FILE: file,
          },
          maxBuffer: 1024 * 1024,
        },
        (error, stdout, stderr) =>
          error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout),
      ),
    );
    const { baseline, peak } = JSON.parse(out.trim().split('\n').at(-1)!) as {
      baseline: number;
      peak: number;
    };
    expect(tlsEmu.stats().requestsByOperation.upload_file).toBe(1);
    expect(authProxy.log()).toContain(`CONNECT ${SERVICE_HOST}:${port(tlsEmu.url)}`);
    // maxRSS is in KiB. Growth under a quarter of the file: streamed, not held.
    expect((peak - baseline) * 1024).toBeLessThan(size / 4);
  }, 600_000);

  test('timeouts: a proxy that never answers CONNECT, a service that never answers inside the tunnel', async () => {
    const held = new Set<Socket>();
    const silent = createServer((socket) => held.add(socket)); // takes connections, says nothing
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      const error = await caught(
        client(tlsEmu, { proxy: silentUrl, proxySetupTimeoutMs: 300 }).checkApiKey(),
      );
      expect(error).toBeInstanceOf(DocexProxyError);
      expect((error as Error).message).toBe(
        `check_api_key: the proxy ${silentUrl} cannot be reached: no answer within 300 ms (ETIMEDOUT); check HTTPS_PROXY / HTTP_PROXY or the proxy option, or exempt the service with NO_PROXY`,
      );
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
    tlsEmu.faults.set({ latencyMs: [3000, 3000] });
    try {
      const c = client(tlsEmu, { caFile: pki.caFile, proxy: proxy.url, timeoutMs: 300 });
      const slow = await caught(c.checkApiKey());
      expect(slow).toBeInstanceOf(DocexTimeoutError);
    } finally {
      tlsEmu.faults.clear();
    }
  });
});

/**
 * A CONNECT proxy of our own whose tunnels go stale after `answersPerTunnel` answers from the
 * service (counted as HTTP status lines): it keeps such a tunnel open without a word, and resets it
 * when the client sends anything more, which is lost (a corporate proxy with a short tunnel
 * lifetime whose close crosses the next request). With 0, the first answer is lost with its tunnel
 * (after the service acted on the request).
 */
async function droppingProxy(
  answersPerTunnel: number,
): Promise<{ url: string; tunnels: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const state = { tunnels: 0 };
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.once('data', (head: Buffer) => {
      const [, target] = /^CONNECT (\S+) /.exec(head.toString('latin1')) ?? [];
      const [host, p] = target!.split(':');
      const upstream = connect(Number(p), host === SERVICE_HOST ? '127.0.0.1' : host!);
      sockets.add(upstream);
      state.tunnels++;
      let answers = 0;
      const drop = () => (client.destroy(), upstream.destroy());
      upstream.once('connect', () => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        client.on('data', (chunk: Buffer) => {
          if (answersPerTunnel > 0 && answers >= answersPerTunnel) return drop();
          upstream.write(chunk);
        });
      });
      upstream.on('data', (chunk: Buffer) => {
        if (answersPerTunnel === 0) return drop();
        client.write(chunk);
        answers += chunk.toString('latin1').split('HTTP/1.1 ').length - 1;
      });
      upstream.on('error', drop).on('close', drop);
      client.on('error', drop).on('close', drop);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    get tunnels() {
      return state.tunnels;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('a proxy that drops tunnels', () => {
  test('stale after one answer: reads are repeated on a new tunnel, every upload arrives exactly once', async () => {
    // Over plain HTTP so that the proxy can count answers in the bytes it carries.
    const p = await droppingProxy(1);
    try {
      plainEmu.resetStats();
      const c = client(plainEmu, {
        proxy: p.url,
        retry: { maxRetries: 3, initialDelayMs: 1 },
        keepAliveIdleMs: 60_000,
      });
      const uploads = 6;
      for (let i = 0; i < uploads; i++) {
        await c.checkApiKey(); // leaves a pooled tunnel that is stale
        await c.checkApiKey(); // on it: reset, repeated on a new one (stale in turn)
        await c.uploadFile({ files: [pdf()] }); // on a tunnel of its own, never a pooled one
      }
      expect(plainEmu.stats().requestsByOperation.upload_file).toBe(uploads);
      expect(plainEmu.stats().requestsByOperation.check_api_key).toBe(uploads * 2);
      expect(p.tunnels).toBeGreaterThanOrEqual(uploads * 3);
    } finally {
      await p.close();
    }
  });

  test('an upload whose tunnel dies after it was sent is not sent again', async () => {
    const p = await droppingProxy(0); // the tunnel dies as soon as the service answers anything
    try {
      plainEmu.resetStats();
      const c = client(plainEmu, { proxy: p.url, retry: { maxRetries: 3, initialDelayMs: 1 } });
      const error = await caught(c.uploadFile({ files: [pdf()] }));
      expect(error).toBeInstanceOf(DocexConnectionError);
      expect(plainEmu.stats().requestsByOperation.upload_file).toBe(1);
    } finally {
      await p.close();
    }
  });
});
