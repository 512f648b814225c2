/**
 * The benchmarks' server, run as a child process (its buffers must not count in the client's memory).
 * Sends its port over IPC. POST …/upload_file/ discards the body and answers the byte count;
 * GET …/fetch_folder/ answers a small folder; GET …/fetch_file/?document_id=N sends N MiB.
 * Arrival times (ms since the epoch, high resolution) of requests carrying a folder_id are kept,
 * keyed by it, and GET /arrivals answers and forgets them (bench/rate.bench.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const MB = 1024 * 1024;
const block = Buffer.alloc(MB, 0x61);
const folder = JSON.stringify({ id: 1, name: 'Invoices', desc: null, template_ids: [2, 3], templates: [] });

let arrivals: Array<[string, number]> = [];

const server = createServer((req, res) => {
  const url = new URL(req.url!, 'http://x');
  const id = url.searchParams.get('folder_id');
  if (id !== null) arrivals.push([id, performance.timeOrigin + performance.now()]);
  if (url.pathname === '/arrivals') {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(arrivals));
    arrivals = [];
    return;
  }
  if (url.pathname.endsWith('/upload_file/')) {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ task_id: 'bench', bytes }));
    });
    return;
  }
  req.resume();
  if (url.pathname.endsWith('/fetch_folder/')) {
    res.setHeader('content-type', 'application/json');
    res.end(folder);
    return;
  }
  if (url.pathname.endsWith('/fetch_file/')) {
    const size = Number(url.searchParams.get('document_id')) * MB;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
    let sent = 0;
    const pump = () => {
      while (sent < size) {
        sent += MB;
        if (!res.write(block)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
    return;
  }
  res.statusCode = 404;
  res.end();
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
process.on('disconnect', () => process.exit(0));
