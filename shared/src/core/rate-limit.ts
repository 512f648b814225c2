/**
 * A send-rate limiter that holds where it matters, at the server: no more than `limit` requests in
 * any sliding window of `windowMs`, counted at the moment each request is put on the wire.
 *
 * - Requests are spread out (one every `(windowMs + marginMs) / limit`), never sent in bursts.
 * - A request counts from the moment it is admitted until its real send time is known (`ticket.sent()`,
 *   called by the transport once the socket is connected and the request is being written), and from
 *   then on at that real time. So a slow connect, a file that opens late or a busy event loop cannot
 *   push a burst into the next window: the invariant "at most `limit` requests pending or sent in the
 *   last `windowMs + marginMs`" holds at every instant.
 * - `marginMs` widens the window the client keeps to, for the variance between the client's send and
 *   the server's arrival count (network jitter, a busy server). bench/rate.bench.ts measures it.
 *
 * Pure: time and sleep come in; no timers of its own.
 */
import { DocexAbortError } from './errors.ts';
import type { Sleep } from './transport.ts';

export interface RateLimitOptions {
  /** Requests allowed in any window of `windowMs`. */
  limit: number;
  windowMs: number;
  /** Added to the window the client keeps to (default DEFAULT_RATE_MARGIN_MS). */
  marginMs?: number;
  now: () => number;
  sleep: Sleep;
}

/**
 * The default safety margin: the send-to-arrival spread measured under load on one host is <= 4 ms,
 * which leaves ~45 ms for the path's jitter (bench/rate.bench.ts; docs/decisions.md, "Throttling").
 */
export const DEFAULT_RATE_MARGIN_MS = 50;

export interface SendTicket {
  /** The request is going on the wire now (idempotent; later calls are ignored). */
  sent(): void;
  /** The request was never sent (e.g. the connection was refused): it no longer counts. */
  cancel(): void;
}

export class SendRateLimiter {
  readonly spanMs: number;
  readonly spacingMs: number;
  private readonly limit: number;
  private readonly now: () => number;
  private readonly sleep: Sleep;
  /** Real send times, ascending. */
  private readonly sentAt: number[] = [];
  private pending = 0;
  private lastAdmitted = -Infinity;
  private lastSent = -Infinity;
  /** Admission is one at a time, first come first served. */
  private turn: Promise<void> = Promise.resolve();
  private changed: (() => void) | undefined;

  constructor(options: RateLimitOptions) {
    if (!(options.limit >= 1)) throw new TypeError(`a rate limit must be at least 1 (got ${options.limit})`);
    this.limit = Math.floor(options.limit);
    this.spanMs = options.windowMs + (options.marginMs ?? DEFAULT_RATE_MARGIN_MS);
    this.spacingMs = this.spanMs / this.limit;
    this.now = options.now;
    this.sleep = options.sleep;
  }

  /** Waits for the request's turn; the returned ticket must be marked sent or cancelled. */
  async acquire(signal?: AbortSignal, operation = 'request'): Promise<SendTicket> {
    const previous = this.turn;
    let done!: () => void;
    this.turn = new Promise<void>((resolve) => (done = resolve));
    try {
      await previous;
      for (;;) {
        if (signal?.aborted) throw new DocexAbortError(operation, 'aborted', { cause: signal.reason });
        const wait = this.delayMs(this.now());
        if (wait <= 0) break;
        await this.pause(wait, signal);
      }
      return this.admit();
    } finally {
      done();
    }
  }

  /** How long to wait before the next request may be admitted (Infinity: until a pending one is sent). */
  delayMs(now: number): number {
    while (this.sentAt.length > 0 && this.sentAt[0]! <= now - this.spanMs) this.sentAt.shift();
    const spacing = Math.max(this.lastAdmitted, this.lastSent) + this.spacingMs - now;
    const excess = this.sentAt.length + this.pending - this.limit + 1;
    if (excess <= 0) return Math.max(0, spacing);
    // Pending requests do not age out; only a send (or cancel) frees their place.
    if (excess > this.sentAt.length) return Infinity;
    return Math.max(spacing, this.sentAt[excess - 1]! + this.spanMs - now);
  }

  private admit(): SendTicket {
    this.pending++;
    this.lastAdmitted = this.now();
    let state: 'pending' | 'sent' | 'cancelled' = 'pending';
    return {
      sent: () => {
        if (state !== 'pending') return;
        state = 'sent';
        this.pending--;
        const at = this.now();
        this.lastSent = Math.max(this.lastSent, at);
        let i = this.sentAt.length;
        while (i > 0 && this.sentAt[i - 1]! > at) i--;
        this.sentAt.splice(i, 0, at);
        this.notify();
      },
      cancel: () => {
        if (state !== 'pending') return;
        state = 'cancelled';
        this.pending--;
        this.notify();
      },
    };
  }

  private notify() {
    const wake = this.changed;
    this.changed = undefined;
    wake?.();
  }

  /** Sleeps `ms` (or until a pending request is sent or cancelled, which may shorten the wait). */
  private async pause(ms: number, signal: AbortSignal | undefined) {
    const stop = new AbortController();
    const onAbort = () => stop.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const changed = new Promise<void>((resolve) => (this.changed = resolve));
    try {
      await Promise.race([
        changed,
        Number.isFinite(ms) ? this.sleep(ms, stop.signal).catch(() => {}) : new Promise<void>(() => {}),
        new Promise<void>((resolve) =>
          stop.signal.addEventListener('abort', () => resolve(), { once: true }),
        ),
      ]);
    } finally {
      stop.abort();
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
