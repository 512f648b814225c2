/**
 * What the real-n8n extraction tests share: a file server on a free loopback port that serves
 * invoices by link (for Extract's URL source) and records what was asked, and an invoice template
 * in the test's emulator.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeClient } from '@docex/shared/node';
import type { Emulator } from '../../emulator/index.ts';
import { invoiceTemplate } from '../support/templates.ts';

export interface FileServer {
  /** The server's origin, `http://127.0.0.1:<port>`. */
  url: string;
  /** Each request's path and query, in order. */
  requests: string[];
  stop(): Promise<void>;
}

/** Serves `files` (path → text) as text/plain; any other path answers 404. */
export async function startFileServer(files: Record<string, string>): Promise<FileServer> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const body = files[new URL(req.url ?? '/', 'http://x').pathname];
    if (body === undefined) res.writeHead(404).end('no such file');
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A folder and an invoice template (test/support/templates.ts: Invoice number, Total; lines Description, Amount) named `name`; its ID. */
export async function createInvoiceTemplate(emulator: Emulator, name: string): Promise<number> {
  const client = createNodeClient({ baseUrl: emulator.url, apiKey: emulator.keys[0]! });
  const folder = await client.createFolder({ name });
  return (await invoiceTemplate(client, folder.id, name)).id;
}
