/**
 * A hostile service for the daemon's tests: an HTTP server on 127.0.0.1 (a free port) in front of
 * the emulator that forwards everything, except for the tasks of files whose names start with a
 * behaviour:
 *
 * - `huge-*`: the document's data is 100 MB of JSON line items, chunked (no length announced);
 *   `huge-gzip-*` the same compressed (gzip, a few hundred KB on the wire);
 * - `large-*`: the task result and the document's data each carry `largeBytes` of line items (by
 *   default 15 MiB, just under the 16 MiB the daemon reads at most): ~200,000 lines, each with a
 *   description and an amount, as the API document shapes them (arrays of values with confidence);
 * - `stuck-*`: the task never finishes (IN PROGRESS at every poll);
 * - `silent-*`: a poll of the task is never answered (the connection stays open, silent).
 *
 * The upload's answer tells which tasks belong to which file; the uploads themselves reach the
 * emulator unchanged.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { constants, gzipSync } from 'node:zlib';

const BEHAVIOURS = ['huge-gzip', 'huge', 'large', 'stuck', 'silent'] as const;
type Behaviour = (typeof BEHAVIOURS)[number];

export interface HostileService {
  url: string;
  /** Answers given with each behaviour so far (a silent poll counts when it arrives). */
  served: Record<Behaviour, number>;
  close(): Promise<void>;
}

const MiB = 1024 * 1024;
const HUGE_BYTES = 100 * MiB;

/** Line items as the API document shapes them: one array per line field, `{value, confidence}` each. */
function lineFields(bytes: number): Buffer {
  const descriptions: string[] = [];
  const amounts: string[] = [];
  let size = 40;
  for (let i = 0; size < bytes; i++) {
    const description = `{"value":"Widget ${i}, blue","confidence":0.93}`;
    const amount = `{"value":${(i % 997) + 0.5},"confidence":0.97}`;
    descriptions.push(description);
    amounts.push(amount);
    size += description.length + amount.length + 2;
  }
  return Buffer.from(`{"Description":[${descriptions.join(',')}],"Amount":[${amounts.join(',')}]}`);
}

/** A document's data of 100 MB: its line items, sent in ~1 MiB pieces. */
function* hugeAnswer(): Generator<Buffer> {
  const items = lineFields(MiB);
  const item = items.subarray(items.indexOf('[') + 1, items.indexOf(']'));
  yield Buffer.from('{"document_id": 1, "template_id": 1, "Line_fields": {"Description": [');
  for (let sent = 0; sent < HUGE_BYTES; sent += item.byteLength + 1) {
    if (sent > 0) yield Buffer.from(',');
    yield item;
  }
  yield Buffer.from(']}}');
}

/** `json` (an object's text) with Line_fields replaced by `lines`. */
function withLineFields(json: Buffer, lines: Buffer): Buffer {
  const { Line_fields: _dropped, ...rest } = JSON.parse(json.toString()) as Record<string, unknown>;
  const head = JSON.stringify(rest);
  return Buffer.concat([Buffer.from(`${head.slice(0, -1)},"Line_fields":`), lines, Buffer.from('}')]);
}

/** Writes the pieces with back-pressure, then ends the answer. */
function writeAll(res: ServerResponse, pieces: Iterable<Buffer>) {
  const iterator = pieces[Symbol.iterator]();
  const more = () => {
    for (;;) {
      const next = iterator.next();
      if (next.done) return void res.end();
      if (!res.write(next.value)) return void res.once('drain', more);
    }
  };
  res.on('error', () => {}); // the client refuses the answer and drops the connection
  more();
}

const readAll = async (stream: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

const behaviourOf = (fileName: string): Behaviour | undefined =>
  BEHAVIOURS.find((b) => fileName.startsWith(`${b}-`));

export async function startHostileService(
  emulatorUrl: string,
  { largeBytes = 15 * MiB } = {},
): Promise<HostileService> {
  const upstream = new URL(emulatorUrl);
  const served: Record<Behaviour, number> = { 'huge-gzip': 0, huge: 0, large: 0, stuck: 0, silent: 0 };
  const tasks = new Map<string, Behaviour>();
  const documents = new Map<string, Behaviour>();
  const sockets = new Set<Socket>();
  // Made before any answer is asked for: building them takes this process a few seconds.
  const gzipped = gzipSync(Buffer.concat([...hugeAnswer()]), { level: constants.Z_BEST_SPEED });
  const large = lineFields(largeBytes);

  /** The emulator's answer to the same request (its body, all read). */
  const forward = (req: IncomingMessage, body: Buffer) =>
    new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const out = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        },
        (answer) =>
          void readAll(answer).then((all) => resolve({ status: answer.statusCode!, body: all }), reject),
      );
      out.on('error', reject);
      out.end(body);
    });
  const json = (res: ServerResponse, status: number, body: Buffer | string) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(body);

  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const body = await readAll(req);
    if (url.pathname === '/v1/upload_file/') {
      const behaviour = behaviourOf(/filename="([^"]*)"/.exec(body.toString('latin1'))?.[1] ?? '');
      const upstreamAnswer = await forward(req, body);
      if (behaviour && upstreamAnswer.status === 200) {
        const ids = JSON.parse(upstreamAnswer.body.toString()) as {
          task_id?: string;
          child_task_ids?: string[];
        };
        for (const id of [ids.task_id, ...(ids.child_task_ids ?? [])])
          if (id) tasks.set(String(id), behaviour);
      }
      return json(res, upstreamAnswer.status, upstreamAnswer.body);
    }
    if (url.pathname === '/v1/fetch_tasks_results/') {
      const taskId = url.searchParams.get('task_id') ?? '';
      const behaviour = tasks.get(taskId);
      if (behaviour === 'silent') return void served.silent++; // never answered
      if (behaviour === 'stuck') {
        served.stuck++;
        return json(res, 200, JSON.stringify({ status: 'IN PROGRESS', status_message: '', task_id: taskId }));
      }
      const result = await forward(req, body);
      const task = JSON.parse(result.body.toString()) as { status?: string; document_id?: number | null };
      if (behaviour && task.document_id != null) documents.set(String(task.document_id), behaviour);
      if (behaviour === 'large' && task.status === 'DONE') {
        served.large++;
        return writeAll(res.writeHead(200, { 'content-type': 'application/json' }), [
          withLineFields(result.body, large),
        ]);
      }
      return json(res, result.status, result.body);
    }
    const behaviour =
      url.pathname === '/v1/fetch_document_data/'
        ? documents.get(url.searchParams.get('document_id') ?? '')
        : undefined;
    if (behaviour === 'huge') {
      served.huge++;
      return writeAll(res.writeHead(200, { 'content-type': 'application/json' }), hugeAnswer());
    }
    if (behaviour === 'huge-gzip') {
      served['huge-gzip']++;
      const headers = { 'content-type': 'application/json', 'content-encoding': 'gzip' };
      return writeAll(res.writeHead(200, headers), [gzipped]);
    }
    const result = await forward(req, body);
    if (behaviour === 'large' && result.status === 200) {
      served.large++;
      return writeAll(res.writeHead(200, { 'content-type': 'application/json' }), [
        withLineFields(result.body, large),
      ]);
    }
    json(res, result.status, result.body);
  };

  const server: Server = createServer((req, res) => {
    answer(req, res).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
