/**
 * registry.npmjs.org as one n8n of a test sees it: an HTTP proxy of the test (HTTPS_PROXY /
 * HTTP_PROXY for that n8n only) that answers a CONNECT to registry.npmjs.org:443 itself, ends the TLS
 * with a certificate for that name signed by a throw-away CA (openssl, test/support/network.ts; the
 * n8n gets it through NODE_EXTRA_CA_CERTS), and serves the requests from the test's verdaccio
 * (registry.ts), which holds only what the test published. Every other host is refused (403) and
 * named in `refused`: nothing reaches the real registry or any other server.
 *
 * So n8n's UI installer meets the package where a user meets it once it is published: on n8n's
 * default registry, which n8n Community accepts without a licence (a private registry is the
 * licensed feature feat:communityNodes:customRegistry, docs/n8n.md).
 */
import {
  createServer as createHttpServer,
  request,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makePki } from '../support/network.ts';

export const PUBLIC_REGISTRY_HOST = 'registry.npmjs.org';

export interface PublicRegistryProxy {
  /** The proxy's URL, `http://127.0.0.1:<port>` (HTTPS_PROXY / HTTP_PROXY). */
  url: string;
  /** The throw-away CA's certificate (PEM file): NODE_EXTRA_CA_CERTS. */
  caFile: string;
  /** What reached registry.npmjs.org: `GET /n8n-nodes-docex -> 200`, in order. */
  served: string[];
  /** The hosts (CONNECT targets, or URLs of plain HTTP requests) refused, in order. */
  refused: string[];
  stop(): Promise<void>;
}

/** Starts the proxy in front of the registry at `registryUrl` (http://127.0.0.1:<port>). */
export async function startPublicRegistryProxy(registryUrl: string): Promise<PublicRegistryProxy> {
  const dir = await mkdtemp(join(tmpdir(), 'docex-public-registry-'));
  const pki = makePki(dir, { dns: [PUBLIC_REGISTRY_HOST] });
  const served: string[] = [];
  const refused: string[] = [];
  const target = new URL(registryUrl);

  // The registry's side: each request passed on to verdaccio as it came, named as the public
  // registry over HTTPS (Host, X-Forwarded-Proto), so that the tarball URLs verdaccio writes into
  // its answers point at https://registry.npmjs.org/... and come back through this proxy too.
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: PUBLIC_REGISTRY_HOST, 'x-forwarded-proto': 'https' },
      },
      (answer) => {
        served.push(`${req.method} ${req.url} -> ${answer.statusCode}`);
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (error) => {
      served.push(`${req.method} ${req.url} -> failed: ${error.message}`);
      res.writeHead(502).end();
    });
    req.pipe(upstream);
  };
  const tlsEnd = createHttpsServer({ cert: pki.server.cert, key: pki.server.key }, forward);

  const proxy = createHttpServer((req, res) => {
    // A plain HTTP request through the proxy: nothing the install needs.
    refused.push(req.url ?? '');
    res.writeHead(403).end();
  });
  const sockets = new Set<Socket>();
  proxy.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  proxy.on('connect', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (req.url !== `${PUBLIC_REGISTRY_HOST}:443`) {
      refused.push(req.url ?? '');
      socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) socket.unshift(head);
    // The tunnel's bytes are the client's TLS: this process is registry.npmjs.org's end of it.
    tlsEnd.emit('connection', socket);
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = proxy.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    caFile: pki.caFile,
    served,
    refused,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      tlsEnd.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
