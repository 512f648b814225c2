/**
 * One exchange on the wire, followed for what a caller must know after it: whether any byte of a
 * failed request can have reached the server (an upload that provably did not may go again), the
 * trace line of a request, and the transport's error for whatever a request failed with.
 */
import type { Socket } from 'node:net';
import { isConnectTimeout, type ExchangeCounts, type GotRequest } from './exchange.ts';
import type { SendTicket } from '../core/rate-limit.ts';
import {
  TransportError,
  NOT_SENT_CODES,
  type RequestTrace,
  type TransportResponse,
} from '../core/transport.ts';

/**
 * Follows one request onto the wire: marks its rate-limit ticket sent when its socket is connected
 * (or handed over from the pool), and, when it fails, tells whether any byte of it can have been
 * written: a request whose socket took no byte from it provably never reached the server.
 */
export function watchWire(stream: GotRequest, ticket: SendTicket | undefined) {
  let socket: Socket | undefined;
  let bytesBefore = 0;
  stream.once('request', (req: { once(event: 'socket', cb: (s: Socket) => void): void }) => {
    req.once('socket', (s: Socket) => {
      socket = s;
      bytesBefore = s.bytesWritten;
      if (!s.connecting) ticket?.sent();
      else s.once('encrypted' in s ? 'secureConnect' : 'connect', () => ticket?.sent());
    });
  });
  return {
    failed(error: unknown): unknown {
      // bytesWritten counts what the socket has taken, sent or still buffered: unchanged means nothing left.
      const written = socket !== undefined && socket.bytesWritten > bytesBefore;
      if (written) ticket?.sent();
      else {
        ticket?.cancel();
        if (error && typeof error === 'object') provenUnsent.add(error);
      }
      return error;
    },
  };
}

/**
 * Follows one request to its end for the trace: status or error, time, body bytes each way. A
 * JSON answer ends when it was read; a download when its stream closes (read, failed or left).
 */
export function traceRequest(
  method: string,
  path: string,
  proxy: string | undefined,
  counts: ExchangeCounts,
  trace: (request: RequestTrace) => void,
) {
  const started = performance.now();
  const report = (status: number | undefined, error: string | undefined) =>
    trace({
      method,
      path,
      status,
      error,
      ms: Math.round(performance.now() - started),
      sentBytes: counts.sent,
      receivedBytes: counts.received,
      proxy,
    });
  return {
    failed(error: unknown) {
      const e = error as { code?: string; name?: string } | undefined;
      report(undefined, e?.code ?? e?.name);
    },
    answered({ response, finished }: { response: TransportResponse; finished: Promise<BodyEnd> }) {
      void finished.then((end) => report(response.status, end));
    },
  };
}

/**
 * How an answer's body ended: undefined when read to its end; else the code of the failure that cut
 * it (ECONNRESET, ETIMEDOUT...) or BODY_LEFT when the reader stopped before the end.
 */
export type BodyEnd = string | undefined;
export const BODY_LEFT = 'left unread';

/** Errors of requests of which not one byte was written (see watchWire). */
const provenUnsent = new WeakSet<object>();

/** The transport's error for whatever a request failed with (the key is never in its message). */
export function toTransportError(error: unknown, signal: AbortSignal | undefined): TransportError {
  if (error instanceof TransportError) return error;
  const e = error as { name?: string; code?: string; message?: string };
  const message = (e.message ?? String(error)).replace(/Bearer\s+\S+/gi, 'Bearer [REDACTED]');
  if (signal?.aborted || e.name === 'AbortError' || e.code === 'ERR_ABORTED') {
    return new TransportError('abort', 'aborted', { code: e.code, requestSent: true });
  }
  // A failure before the socket took a byte (watchWire), or a timeout while still connecting (the
  // bytes it took were only buffered), never reached the server: even an upload may be sent again.
  const unsent = provenUnsent.has(error as object);
  if (e.name === 'TimeoutError' || e.code === 'ETIMEDOUT') {
    const connecting = isConnectTimeout(error);
    return new TransportError('timeout', message, { code: e.code, requestSent: !(unsent || connecting) });
  }
  return new TransportError('connection', message, {
    code: e.code,
    requestSent: !(unsent || (e.code && NOT_SENT_CODES.has(e.code))),
  });
}
