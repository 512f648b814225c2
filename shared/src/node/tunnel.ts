/**
 * Going out through an HTTP forward proxy: each connection is a CONNECT tunnel opened by the agent,
 * then (for https://) a TLS session with the service inside it, verified as a direct one would be.
 * Own agents rather than Node's built-in proxy support (Node >= 22.21 / 24.5 only): this bounds the
 * tunnel's set-up, tells a 407 from an unreachable proxy, and works on every Node the package
 * supports. A pooled agent pools tunnels (reads); a fresh agent opens one per request (writes), so
 * an upload never rides a tunnel the proxy may have dropped while it sat idle.
 */
import { Agent as HttpAgent, type AgentOptions } from 'node:http';
import { Agent as HttpsAgent, type AgentOptions as HttpsAgentOptions } from 'node:https';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type PeerCertificate } from 'node:tls';
import type { Duplex } from 'node:stream';
import { proxyCredentials, redactProxyUrl } from '../core/proxy.ts';
import type { NetworkFailure, TlsFailureReason } from '../core/transport.ts';

export interface ProxyRoute {
  /** The proxy's URL as configured (with its credentials: never shown, see `shown`). */
  url: URL;
  /** The URL as any message may show it (credentials replaced). */
  shown: string;
  /** Basic credentials for Proxy-Authorization, when the URL has a user or password. */
  authorization: string | undefined;
  /** Bound on connecting to the proxy and its answer to CONNECT, in ms. */
  setupTimeoutMs: number;
}

export function proxyRoute(url: URL, setupTimeoutMs: number): ProxyRoute {
  const credentials = proxyCredentials(url.href);
  return {
    url,
    shown: redactProxyUrl(url.href),
    authorization: credentials
      ? `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`
      : undefined,
    setupTimeoutMs,
  };
}

/** A failure of the tunnel itself: never reached the service, classified for the message. */
export class ProxyTunnelError extends Error {
  readonly code: string;
  readonly failure: NetworkFailure;
  constructor(message: string, code: string, failure: NetworkFailure) {
    super(message);
    this.name = 'ProxyTunnelError';
    this.code = code;
    this.failure = failure;
  }
}

type ConnectOptions = { host?: string | null; hostname?: string | null; port?: number | string | null };
type Callback = (error: Error | null, socket?: Duplex) => void;

/** Opens a CONNECT tunnel to host:port through the proxy; the socket comes back once the proxy said 200. */
export function openTunnel(
  route: ProxyRoute,
  host: string,
  port: number,
  done: (error: Error | null, socket?: Socket) => void,
) {
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const proxyPort = Number(route.url.port || 80);
  const socket = netConnect({ host: route.url.hostname.replace(/^\[|\]$/g, ''), port: proxyPort });
  let settled = false;
  const finish = (error: Error | null) => {
    if (settled) return;
    settled = true;
    // setTimeout(0) stops the timer but keeps its listener, which would fire on the next timeout of
    // whoever uses the socket next (got's socket timeout, the pool's idle timeout).
    socket.setTimeout(0);
    socket.removeListener('timeout', onTimeout);
    socket.removeListener('readable', onReadable);
    socket.removeListener('error', onError);
    socket.removeListener('end', onEnd);
    if (error) {
      socket.destroy();
      done(error);
    } else done(null, socket);
  };
  const unreachable = (detail: string, code: string) =>
    new ProxyTunnelError(`proxy ${route.shown}: ${detail}`, code, {
      type: 'proxy-unreachable',
      proxy: route.shown,
      detail,
    });
  const onError = (error: NodeJS.ErrnoException) =>
    finish(
      unreachable(
        error.code === 'ECONNREFUSED' ? 'connection refused' : error.message,
        error.code ?? 'EPROXY',
      ),
    );
  const onEnd = () =>
    finish(unreachable('it closed the connection before answering CONNECT', 'EPROXYCLOSED'));
  const onTimeout = () => finish(unreachable(`no answer within ${route.setupTimeoutMs} ms`, 'ETIMEDOUT'));
  socket.setTimeout(route.setupTimeoutMs, onTimeout);
  socket.once('error', onError);
  socket.once('end', onEnd);
  socket.once('connect', () => {
    socket.write(
      `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n` +
        (route.authorization ? `Proxy-Authorization: ${route.authorization}\r\n` : '') +
        '\r\n',
    );
  });
  let head = Buffer.alloc(0);
  // 'readable' rather than 'data': once it is removed the socket is left neither paused nor flowing,
  // so the HTTP client that takes it over starts reading as on any fresh socket.
  const onReadable = () => {
    for (let chunk: Buffer | null; (chunk = socket.read() as Buffer | null) !== null;) {
      if (settled) return;
      onData(chunk);
    }
  };
  socket.on('readable', onReadable);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) {
      if (head.length > 64 * 1024) finish(unreachable('its answer to CONNECT has no end', 'EPROXYANSWER'));
      return;
    }
    const statusLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
    const match = /^HTTP\/1\.[01] (\d{3}) ?(.*)$/.exec(statusLine);
    if (!match)
      return finish(unreachable(`it answered CONNECT with "${statusLine.slice(0, 80)}"`, 'EPROXYANSWER'));
    const status = Number(match[1]);
    if (status === 200) {
      // A proxy sends nothing after its 200 before the service speaks; anything else would be lost.
      if (head.length > end + 4) socket.unshift(head.subarray(end + 4));
      return finish(null);
    }
    // 401 too: tinyproxy answers a wrong password so (its 407 is for missing credentials).
    if (status === 407 || (status === 401 && route.authorization !== undefined))
      return finish(
        new ProxyTunnelError(`proxy ${route.shown}: ${status} ${match[2]}`, 'EPROXYAUTH', {
          type: 'proxy-auth',
          proxy: route.shown,
          credentialsSent: route.authorization !== undefined,
          status,
          statusText: match[2] ?? '',
        }),
      );
    return finish(
      new ProxyTunnelError(
        `proxy ${route.shown}: CONNECT ${target}: ${status} ${match[2]}`,
        'EPROXYREFUSED',
        {
          type: 'proxy-refused',
          proxy: route.shown,
          target,
          status,
          statusText: match[2] ?? '',
        },
      ),
    );
  };
}

const hostOf = (options: ConnectOptions) => String(options.host ?? options.hostname ?? 'localhost');

/** http:// services through the proxy: the tunnel is the connection. */
export class HttpTunnelAgent extends HttpAgent {
  private readonly route: ProxyRoute;
  constructor(route: ProxyRoute, options: AgentOptions) {
    super(options);
    this.route = route;
  }
  override createConnection(options: ConnectOptions, callback: Callback): undefined {
    openTunnel(this.route, hostOf(options), Number(options.port ?? 80), callback);
    return undefined;
  }
}

/** https:// services through the proxy: TLS with the service inside the tunnel, verified as usual. */
export class HttpsTunnelAgent extends HttpsAgent {
  private readonly route: ProxyRoute;
  constructor(route: ProxyRoute, options: HttpsAgentOptions) {
    super(options);
    this.route = route;
  }
  override createConnection(options: ConnectOptions & ConnectionOptions, callback: Callback): undefined {
    const host = hostOf(options);
    openTunnel(this.route, host, Number(options.port ?? 443), (error, raw) => {
      if (error || !raw) return callback(error ?? new Error('no tunnel'));
      const servername = options.servername ?? (/^[\d.]+$|:/.test(host) ? undefined : host);
      // Verified as a direct connection is (rejectUnauthorized stays true). Handed over only once the
      // handshake is done: the request's rate-limit ticket counts from there, as for a direct TLS
      // socket, and a refused certificate leaves the request provably unsent.
      const tls = tlsConnect({ ...options, socket: raw, servername });
      let settled = false;
      const settle = (error: Error | null) => {
        if (settled) return;
        settled = true;
        tls.setTimeout(0);
        tls.removeListener('timeout', onTimeout); // see openTunnel
        tls.removeListener('error', settle);
        if (error) tls.destroy();
        callback(error, error ? undefined : tls);
      };
      const onTimeout = () =>
        settle(
          Object.assign(
            new Error(
              `TLS handshake with ${host} through the proxy took over ${this.route.setupTimeoutMs} ms`,
            ),
            { code: 'ETIMEDOUT' },
          ),
        );
      tls.setTimeout(this.route.setupTimeoutMs, onTimeout);
      tls.once('error', settle);
      tls.once('secureConnect', () => settle(null));
    });
    return undefined;
  }
}

const UNKNOWN_ISSUER = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);

/** OpenSSL's (and Node's) codes of a refused certificate, by what they mean for the user. */
export function tlsReason(code: string | undefined): TlsFailureReason | undefined {
  if (!code) return undefined;
  if (UNKNOWN_ISSUER.has(code)) return 'unknown-issuer';
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' || code === 'HOSTNAME_MISMATCH') return 'name-mismatch';
  if (code === 'CERT_HAS_EXPIRED') return 'expired';
  if (code === 'CERT_NOT_YET_VALID') return 'not-yet-valid';
  if (/^(CERT_|ERR_TLS_CERT|UNABLE_TO_|SELF_SIGNED|INVALID_CA|X509_)/.test(code)) return 'other';
  return undefined;
}

const dn = (name: PeerCertificate['subject'] | undefined): string | undefined => {
  if (!name) return undefined;
  const parts = Object.entries(name).map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('+') : String(v)}`);
  return parts.length > 0 ? parts.join(', ') : undefined;
};

/**
 * The certificate the service presents, read by a second handshake that sends nothing (used only to
 * explain a refused certificate: the issuer and subject are not on the error Node raises). Through
 * the same proxy when there is one. Resolves undefined on any failure or after `timeoutMs`.
 */
export function peekCertificate(
  host: string,
  port: number,
  route: ProxyRoute | undefined,
  timeoutMs: number,
): Promise<PeerCertificate | undefined> {
  return new Promise((resolve) => {
    let tls: ReturnType<typeof tlsConnect> | undefined;
    const timer = setTimeout(() => {
      tls?.destroy();
      resolve(undefined);
    }, timeoutMs);
    const servername = /^[\d.]+$|:/.test(host) ? undefined : host;
    const handshake = (socket?: Socket) => {
      // Verification off on purpose: this connection only reads the certificate and is closed
      // before a byte of any request could be written to it.
      tls = tlsConnect({ host, port, servername, socket, rejectUnauthorized: false }, () => {
        const cert = tls!.getPeerCertificate();
        clearTimeout(timer);
        tls!.destroy();
        resolve(cert && Object.keys(cert).length > 0 ? cert : undefined);
      });
      tls.once('error', () => {
        clearTimeout(timer);
        resolve(undefined);
      });
    };
    if (!route) handshake();
    else
      openTunnel(route, host, port, (error, socket) => {
        if (error || !socket) {
          clearTimeout(timer);
          resolve(undefined);
        } else handshake(socket);
      });
  });
}

/** The failure for a refused certificate, with what the certificate says. */
export function tlsFailure(
  reason: TlsFailureReason,
  code: string,
  host: string,
  cert: PeerCertificate | undefined,
): NetworkFailure {
  return {
    type: 'tls',
    reason,
    code,
    host,
    subject: dn(cert?.subject),
    issuer: dn(cert?.issuer),
    names: cert?.subjectaltname,
    validFrom: cert?.valid_from,
    validTo: cert?.valid_to,
  };
}
