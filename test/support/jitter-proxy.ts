/** A TCP proxy that adds latency jitter: used by the rate-limit test and bench/rate.bench.ts. */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy that delays every chunk from the client by a random 0..jitterMs (order kept within a
 * connection), so arrivals at the server no longer keep the client's spacing.
 */
export async function jitterProxy(
  target: URL,
  jitterMs: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    // One queue per connection, drained in order by one timer: separate timers could reorder chunks.
    const queue: Array<{ at: number; chunk: Buffer }> = [];
    let last = 0;
    let ended = false;
    let timer: NodeJS.Timeout | undefined;
    const pump = () => {
      timer = undefined;
      while (queue.length > 0 && queue[0]!.at <= performance.now()) upstream.write(queue.shift()!.chunk);
      if (queue.length > 0) timer = setTimeout(pump, queue[0]!.at - performance.now());
      else if (ended) upstream.end();
    };
    client.on('data', (chunk: Buffer) => {
      last = Math.max(last, performance.now() + Math.random() * jitterMs);
      queue.push({ at: last, chunk });
      timer ??= setTimeout(pump, last - performance.now());
    });
    client.on('end', () => {
      ended = true;
      if (!timer) upstream.end();
    });
    upstream.pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
