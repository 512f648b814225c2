/**
 * Real network parts for the proxy and TLS tests, made by the test and thrown away after: a private
 * CA with server certificates (openssl), `*.test` host names mapped to 127.0.0.1 in /etc/hosts, and
 * tinyproxy from Debian's package on a free loopback port (see docs/real-parts-offline.md).
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ensureDebianPackage, freePort, onPath, startProcess, until, type Service } from '../e2e/services.ts';

/** The service's name in certificates and URLs (a name, not 127.0.0.1: see ensureHosts). */
export const SERVICE_HOST = 'docex-api.test';
/** Mapped to the same address, absent from the certificate: a name mismatch. */
export const OTHER_HOST = 'docex-other.test';

/**
 * Maps the names to 127.0.0.1 in /etc/hosts when missing. Names rather than loopback addresses:
 * proxies and NO_PROXY defaults treat localhost specially, which would hide a bypass.
 */
export function ensureHosts(names: string[] = [SERVICE_HOST, OTHER_HOST]): void {
  const hosts = readFileSync('/etc/hosts', 'utf8');
  const missing = names.filter(
    (name) => !new RegExp(`^127\\.0\\.0\\.1\\s.*\\b${name.replace(/\./g, '\\.')}\\b`, 'm').test(hosts),
  );
  if (missing.length === 0) return;
  try {
    appendFileSync('/etc/hosts', `\n127.0.0.1 ${missing.join(' ')}\n`);
  } catch (error) {
    throw new Error(
      `the tests need ${missing.join(', ')} mapped to 127.0.0.1: add "127.0.0.1 ${missing.join(' ')}" to /etc/hosts (${(error as Error).message})`,
    );
  }
}

export interface Pki {
  /** The CA certificate (PEM file). */
  caFile: string;
  caPem: string;
  /** A certificate for the names asked for (SERVICE_HOST by default) signed by the CA, valid two days. */
  server: { cert: string; key: string };
  /** The same certificate and key as files (for a server that reads them itself). */
  serverFiles: { cert: string; key: string };
  /** The same name, expired yesterday. */
  expired: { cert: string; key: string };
}

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: 'pipe' });

/** A private CA and server certificates for `names` (DNS names, then IP addresses), made in `dir` with openssl. */
export function makePki(
  dir: string,
  names: { dns: string[]; ips?: string[] } = { dns: [SERVICE_HOST] },
): Pki {
  ensureOpensslPackage();
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=Docex Test Root CA',
    ],
    dir,
  );
  openssl(
    [
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'srv.key',
      '-out',
      'srv.csr',
      '-subj',
      `/CN=${names.dns[0]}`,
    ],
    dir,
  );
  const altNames = [...names.dns.map((n) => `DNS:${n}`), ...(names.ips ?? []).map((ip) => `IP:${ip}`)];
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=${altNames.join(',')}\nbasicConstraints=CA:FALSE\n`);
  const sign = (out: string, days: string, serial: string) =>
    openssl(
      [
        'x509',
        '-req',
        '-in',
        'srv.csr',
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-set_serial',
        serial,
        '-out',
        out,
        '-days',
        days,
        '-extfile',
        'ext.cnf',
      ],
      dir,
    );
  sign('srv.pem', '2', '1');
  sign('old.pem', '-1', '2'); // not after = yesterday
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  return {
    caFile: join(dir, 'ca.pem'),
    caPem: read('ca.pem'),
    server: { cert: read('srv.pem'), key: read('srv.key') },
    serverFiles: { cert: join(dir, 'srv.pem'), key: join(dir, 'srv.key') },
    expired: { cert: read('old.pem'), key: read('srv.key') },
  };
}

export interface Tinyproxy extends Service {
  url: string;
  port: number;
  /** The access log as written so far (LogLevel Connect names each tunnel). */
  log(): string;
}

/**
 * tinyproxy in the foreground on a free loopback port; CONNECT allowed to `connectPorts` only
 * (it refuses others, like most company proxies), with basic auth when `auth` is given.
 */
export async function startTinyproxy(
  dir: string,
  options: {
    connectPorts: number[];
    auth?: { user: string; password: string };
    /**
     * Names only the proxy resolves (name → address): tinyproxy runs in a mount namespace of its
     * own (unshare, as root) where /etc/hosts is a copy with these lines added. A client that can
     * reach them has gone through the proxy; a direct attempt fails with ENOTFOUND.
     */
    hostsForProxyOnly?: Record<string, string>;
  },
): Promise<Tinyproxy> {
  ensureTinyproxyPackage();
  const port = await freePort();
  mkdirSync(dir, { recursive: true });
  const logFile = join(dir, 'tinyproxy.log');
  writeFileSync(logFile, '');
  chmodSync(dir, 0o777); // tinyproxy drops to nobody and writes its log here (parents: at least 0755)
  chmodSync(logFile, 0o666);
  const conf = join(dir, 'tinyproxy.conf');
  writeFileSync(
    conf,
    [
      'User nobody',
      'Group nogroup',
      `Port ${port}`,
      'Listen 127.0.0.1',
      `LogFile "${logFile}"`,
      'LogLevel Connect',
      'Allow 127.0.0.1',
      'MaxClients 100',
      ...options.connectPorts.map((p) => `ConnectPort ${p}`),
      ...(options.auth ? [`BasicAuth ${options.auth.user} ${options.auth.password}`] : []),
      '',
    ].join('\n'),
  );
  const proxy = options.hostsForProxyOnly
    ? startWithOwnHosts(dir, options.hostsForProxyOnly, ['tinyproxy', '-d', '-c', conf])
    : startProcess('tinyproxy', ['-d', '-c', conf]);
  const log = () => readFileSync(logFile, 'utf8');
  // It logs nothing when it starts listening at LogLevel Connect: ready once a connection is taken.
  const accepts = () =>
    new Promise<true | undefined>((resolve) => {
      const probe = connect(port, '127.0.0.1');
      probe.once('connect', () => (probe.destroy(), resolve(true)));
      probe.once('error', () => resolve(undefined));
    });
  await until('tinyproxy to listen', accepts, 30_000, () => `${proxy.output()}\n${log()}`);
  return { ...proxy, url: `http://127.0.0.1:${port}`, port, log };
}

/**
 * `command` with an /etc/hosts of its own: a private mount namespace (unshare --mount, which execs,
 * so the PID is the command's) in which a copy of /etc/hosts plus `hosts` is bound over the file.
 */
function startWithOwnHosts(dir: string, hosts: Record<string, string>, command: string[]) {
  ensureUnsharePackage();
  const hostsFile = join(dir, 'hosts');
  const lines = Object.entries(hosts).map(([name, address]) => `${address} ${name}`);
  writeFileSync(hostsFile, `${readFileSync('/etc/hosts', 'utf8')}\n${lines.join('\n')}\n`);
  chmodSync(hostsFile, 0o644);
  return startProcess('unshare', [
    '--mount',
    '--',
    'sh',
    '-c',
    'mount --bind "$0" /etc/hosts && exec "$@"',
    hostsFile,
    ...command,
  ]);
}

const ensureOpensslPackage = () => ensureDebianPackage('openssl', () => onPath('openssl'));
const ensureTinyproxyPackage = () => ensureDebianPackage('tinyproxy', () => onPath('tinyproxy'));
const ensureUnsharePackage = () => ensureDebianPackage('util-linux', () => onPath('unshare'));

/** Installs every Debian package these helpers start from, when missing (the system project's global set-up). */
export function ensureNetworkPackages() {
  ensureOpensslPackage();
  ensureTinyproxyPackage();
  ensureUnsharePackage();
}
