/** The optional loopback listener: /healthz and /metrics. */
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.ts';
import type { StateDb } from './state.ts';

export async function startHttp(host: string, port: number, db: StateDb, metrics: Metrics): Promise<Server> {
  const server = createServer((req, res) => {
    void (async () => {
      if (req.url === '/healthz') {
        let ok = true;
        try {
          db.counts();
        } catch {
          ok = false;
        }
        res
          .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
          .end(JSON.stringify({ status: ok ? 'ok' : 'db unavailable', files: ok ? db.counts() : undefined }));
      } else if (req.url === '/metrics') {
        res
          .writeHead(200, { 'content-type': metrics.registry.contentType })
          .end(await metrics.registry.metrics());
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      }
    })();
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(port, host, () => resolve()),
  );
  return server;
}
