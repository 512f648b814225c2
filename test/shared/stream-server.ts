/**
 * A local server for the streaming tests, run in a child process so that its own buffers do not
 * count in the memory the test measures. Sends its port over IPC.
 *
 * - POST …/upload_file/: discards the body, answering what it saw: total bytes, the first and last
 *   KB (to locate the file part), the bytes at the marker offsets of the file part, the framing headers.
 * - GET …/fetch_file/ and POST …/fetch_files_batch/: send `size` bytes of a repeating pattern
 *   (byte i is (i mod 1 MiB) mod 251), honouring back-pressure.
 *
 * argv[2]: JSON { markers: number[], sizes: { fetch_file: number, fetch_files_batch: number } }
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const MB = 1024 * 1024;
const config = JSON.parse(process.argv[2] ?? '{}') as {
  markers?: number[];
  sizes?: Record<string, number>;
};
const block = Buffer.alloc(MB);
for (let i = 0; i < MB; i++) block[i] = i % 251;

function upload(req: IncomingMessage, res: ServerResponse) {
  let total = 0;
  let headBuf = Buffer.alloc(0);
  let head = '';
  let fileStart = -1;
  let tail = Buffer.alloc(0);
  const markers: Array<[number, number]> = [];
  req.on('data', (chunk: Buffer) => {
    const at = total;
    total += chunk.length;
    if (fileStart < 0) {
      headBuf = Buffer.concat([headBuf, chunk.subarray(0, 4096)]);
      const end = headBuf.indexOf('\r\n\r\n');
      if (end >= 0) {
        fileStart = end + 4;
        head = headBuf.subarray(0, fileStart).toString();
      }
    }
    if (fileStart >= 0) {
      for (const offset of config.markers ?? []) {
        const i = fileStart + offset - at;
        if (i >= 0 && i < chunk.length) markers.push([offset, chunk[i]!]);
      }
    }
    tail =
      chunk.length >= 1024
        ? Buffer.from(chunk.subarray(-1024))
        : Buffer.concat([tail, chunk]).subarray(-1024);
  });
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({
        task_id: 'big',
        received: {
          total,
          head,
          tail: tail.toString('latin1'),
          markers,
          contentLength: req.headers['content-length'] ?? null,
          transferEncoding: req.headers['transfer-encoding'] ?? null,
        },
      }),
    );
  });
}

function download(req: IncomingMessage, res: ServerResponse, size: number, type: string, name: string) {
  req.resume();
  res.writeHead(200, {
    'content-type': type,
    'content-length': String(size),
    'content-disposition': `attachment; filename="${name}"`,
  });
  let sent = 0;
  const pump = () => {
    while (sent < size) {
      const n = Math.min(MB, size - sent);
      sent += n;
      if (!res.write(n === MB ? block : block.subarray(0, n))) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

const server = createServer((req, res) => {
  const path = req.url!.split('?')[0]!;
  if (path.endsWith('/upload_file/')) return upload(req, res);
  if (path.endsWith('/fetch_file/'))
    return download(req, res, config.sizes?.fetch_file ?? MB, 'application/pdf', 'scan.pdf');
  if (path.endsWith('/fetch_files_batch/'))
    return download(req, res, config.sizes?.fetch_files_batch ?? MB, 'application/zip', 'files.zip');
  res.statusCode = 404;
  res.end();
});
server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
process.on('disconnect', () => process.exit(0));
