/**
 * Send slots shared by every client that speaks for one key (in n8n: every execution of one process
 * that uses one credential), so that together they stay under the service's rate and stop together
 * after a 429. The service counts arrivals in a sliding second; the client cannot see when a request
 * really leaves (n8n's HTTP helper reads the credential and opens the connection in between), only
 * when it let it go and when the answer came, and the arrival lies between the two. So:
 *
 * - `take()` hands out the key's next send time, one every `(1000 + marginMs) / perSecond` ms (no
 *   margin by default), first come first served; `claim()` says how long its holder still waits
 *   (0: send now).
 * - A request counts from the moment it is let go until a second after its answer is in
 *   (`answered()`). A new request goes only while fewer than `perSecond` (its whole part, at least 1)
 *   requests count: since each arrived before its answer, no second at the service can hold more
 *   than that many of them, however late a busy event loop puts one on the wire. (Take any
 *   `perSecond + 1` requests that arrived within one second at the service, and the one of them let
 *   go last. Its let-go came before its arrival, so before that second's end; each other one was let
 *   go before it and answered after its own arrival, so after that second's start: less than a
 *   second before the last one's let-go, if at all. All of them still counted then, and it could not
 *   have gone.) This rule is the guarantee; the spacing only spreads the requests out, so it needs
 *   no margin for the path's jitter (docex-sync's limiter, which counts at the real send, does).
 *   Each request holds one of the `perSecond` places for a second plus the time to its answer: slow
 *   answers, not the spacing, are what the rule costs.
 * - A 429 (`refused()`) pauses the key: no request goes before the pause's end, and the slots handed
 *   out but not yet used are handed out again from that end, in their order, at their spacing, so the
 *   callers already waiting do not all come back in the same second. 429s that arrive during a pause
 *   answer requests sent before it: one round, one pause. Each further round in a row (no other
 *   answer in between) doubles the pause's floor; a Retry-After is never cut short.
 * - The pause ends a little after the server's wait (random, up to one slot's spacing): processes
 *   that share a key without sharing this object (n8n queue-mode workers) do not all resume at once.
 * - Keys are kept in least-recently-used order, at most `maxKeys`; an idle key goes first.
 *
 * Pure: the time, randomness and sleeping come from the caller; no timers of its own. The key is
 * whatever the caller uses to tell credentials apart; never put a secret in it (use a digest).
 */
import { DocexAbortError } from './errors.ts';
import { sleepUnlessAborted } from './poll.ts';
import type { Sleep } from './transport.ts';

export interface SlotRate {
  /** Requests the key may send in any second. */
  perSecond: number;
  /** Added to the second the spacing is computed for (default SLOT_MARGIN_MS: none). */
  marginMs?: number;
}

export interface SendSlotsOptions {
  /** Keys remembered at most (default 256). */
  maxKeys?: number;
  /** First pause after a 429 without a server-given wait (default 1 s); doubles per round in a row. */
  basePauseMs?: number;
  /** Longest pause this object makes by itself; a longer Retry-After is still honoured (default 30 s). */
  maxPauseMs?: number;
  random?: () => number;
}

const WINDOW_MS = 1000;

/**
 * No margin by default: the counting rule (a request counts until a second after its answer) keeps
 * every second at the service within the rate whatever the spacing, so a margin would only leave
 * part of the rate unused (50 ms left 5 % of it, measured in the burst of docs/n8n.md).
 */
export const SLOT_MARGIN_MS = 0;

interface KeyState {
  /** When the next slot may go (spacing). */
  nextFree: number;
  /** No request of this key goes before this time (the current 429 pause's end). */
  coolDownUntil: number;
  /** Rounds of 429s in a row. */
  streak: number;
  /** The spacing last used: a pause's jitter is up to one of these. */
  spacingMs: number;
  /** Slots handed out and not yet sent, in the order they were handed out. */
  pending: SendSlot[];
  /** Slots sent that still count: until a second after their answer (Infinity while unanswered). */
  counting: SendSlot[];
  /** Holders waiting for an answer to come in (or for the slot ahead of them to go). */
  waiters: Array<() => void>;
}

/** A send time handed out by `take()`; `claim()` tells its holder how long it still waits. */
export interface SendSlot {
  readonly key: string;
  /** When it may go at the earliest; a 429's pause moves it. */
  at: number;
  readonly spacingMs: number;
  /** Requests of the key that may count at once (the rate's whole requests per second, at least 1). */
  readonly limit: number;
  /** When it was let go (undefined before). */
  sentAt: number | undefined;
  /** Until when it counts: Infinity from its send until its answer. */
  countsUntil: number;
  /** The key's state (a key evicted meanwhile keeps its holders in line with each other). */
  readonly state: KeyState;
}

export const spacingMsOf = (rate: SlotRate): number => {
  if (!(rate.perSecond > 0) || !Number.isFinite(rate.perSecond))
    throw new TypeError(
      `a send rate must be a positive number of requests per second (got ${rate.perSecond})`,
    );
  return (WINDOW_MS + (rate.marginMs ?? SLOT_MARGIN_MS)) / rate.perSecond;
};

export class SendSlots {
  readonly maxKeys: number;
  private readonly basePauseMs: number;
  private readonly maxPauseMs: number;
  private readonly random: () => number;
  /** In least-recently-used order (Map keeps insertion order; a use moves the key to the end). */
  private readonly keys = new Map<string, KeyState>();

  constructor(options: SendSlotsOptions = {}) {
    this.maxKeys = Math.max(1, Math.floor(options.maxKeys ?? 256));
    this.basePauseMs = options.basePauseMs ?? 1000;
    this.maxPauseMs = options.maxPauseMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  /** How many keys are remembered. */
  get size(): number {
    return this.keys.size;
  }

  /** The key's next send time at `rate`, from `now` on; the slot after it is one spacing later. */
  take(key: string, rate: SlotRate, now: number): SendSlot {
    const spacingMs = spacingMsOf(rate);
    const state = this.use(key, now);
    state.spacingMs = spacingMs;
    const slot: SendSlot = {
      key,
      at: Math.max(now, state.nextFree, state.coolDownUntil),
      spacingMs,
      limit: Math.max(1, Math.floor(rate.perSecond)),
      sentAt: undefined,
      countsUntil: Infinity,
      state,
    };
    state.nextFree = slot.at + spacingMs;
    state.pending.push(slot);
    return slot;
  }

  /**
   * How long the slot's holder still waits: 0 means "send now" (the slot counts as sent from now on,
   * and its holder must call `answered()` when the answer or failure comes); Infinity means "until
   * `changed()` resolves" (an answer of a request still in flight, or the slot ahead going first).
   */
  claim(slot: SendSlot, now: number): number {
    const { state } = slot;
    if (slot.sentAt !== undefined) return 0;
    // First come, first served: the slot ahead goes first.
    if (state.pending[0] !== slot) return Infinity;
    let due = Math.max(slot.at, state.coolDownUntil);
    state.counting = state.counting.filter((s) => s.countsUntil > now);
    const over = state.counting.length - slot.limit;
    if (over >= 0) {
      const until = state.counting.map((s) => s.countsUntil).sort((a, b) => a - b);
      due = Math.max(due, until[over]!);
    }
    const wait = due - now;
    if (wait > 0) return wait;
    state.pending.shift();
    slot.sentAt = now;
    state.counting.push(slot);
    this.notify(state);
    return 0;
  }

  /** Resolves at the key's next change (a request let go or answered, a slot given up). */
  changed(slot: SendSlot): Promise<void> {
    return new Promise((resolve) => slot.state.waiters.push(resolve));
  }

  /** The answer (or the failure) of a sent request came in at `now`: it counts a second more. */
  answered(slot: SendSlot, now: number, status?: number): void {
    const { state } = slot;
    if (slot.sentAt === undefined || slot.countsUntil !== Infinity) return;
    // It reached the service before its answer came: a second after the answer, it is out of every
    // second the service counts a request sent from now on in.
    slot.countsUntil = now + WINDOW_MS;
    if (status !== undefined && status !== 429) state.streak = 0;
    this.notify(state);
  }

  /** The slot will not be used (its holder gave up before sending): the next one may go. */
  release(slot: SendSlot): void {
    const { state } = slot;
    const i = state.pending.indexOf(slot);
    if (i < 0) return;
    state.pending.splice(i, 1);
    this.notify(state);
  }

  /**
   * A 429 for `key`: pauses it for the server's wait (`serverWaitMs`, e.g. Retry-After) or its own
   * backoff, whichever is longer, plus a little jitter. Returns when the pause ends.
   */
  refused(key: string, now: number, serverWaitMs?: number): number {
    const state = this.use(key, now);
    // Requests sent before the pause began are refused too: the same round, the same pause.
    if (now < state.coolDownUntil) return state.coolDownUntil;
    const backoff = Math.min(this.maxPauseMs, this.basePauseMs * 2 ** state.streak);
    state.streak++;
    const pauseMs =
      Math.max(serverWaitMs !== undefined && serverWaitMs > 0 ? serverWaitMs : 0, backoff) +
      this.random() * state.spacingMs;
    state.coolDownUntil = now + pauseMs;
    // The slots not yet used go again from the pause's end, in their order, at their spacing.
    let next = state.coolDownUntil;
    for (const slot of state.pending) {
      slot.at = next;
      next += slot.spacingMs;
    }
    state.nextFree = next;
    return state.coolDownUntil;
  }

  private notify(state: KeyState): void {
    const waiters = state.waiters;
    state.waiters = [];
    for (const wake of waiters) wake();
  }

  /** The key's state, made and moved to the most recently used end; the map trimmed to maxKeys. */
  private use(key: string, now: number): KeyState {
    let state = this.keys.get(key);
    if (state) this.keys.delete(key);
    else
      state = {
        nextFree: -Infinity,
        coolDownUntil: -Infinity,
        streak: 0,
        spacingMs: 0,
        pending: [],
        counting: [],
        waiters: [],
      };
    this.keys.set(key, state);
    if (this.keys.size > this.maxKeys) this.evict(now, key);
    return state;
  }

  /** Drops the least recently used idle key (nothing waiting or counting), else the least recently used. */
  private evict(now: number, keep: string): void {
    let victim: string | undefined;
    for (const [key, state] of this.keys) {
      if (key === keep) continue;
      victim ??= key;
      const idle =
        state.pending.length === 0 &&
        state.counting.every((s) => s.countsUntil <= now) &&
        state.coolDownUntil <= now;
      if (idle) {
        victim = key;
        break;
      }
    }
    if (victim !== undefined) this.keys.delete(victim);
  }
}

export interface SlotWaitDeps {
  /** A steady clock in ms (the one the slots' times are on). */
  now: () => number;
  sleep: Sleep;
  signal?: AbortSignal;
  /** Named by the abort error. */
  operation?: string;
}

/**
 * Takes the key's next slot and waits until it may go, however often a 429 moves it meanwhile.
 * The caller sends, then calls `slots.answered(slot, now, status)` once the answer (or failure) is in.
 */
export async function waitForSendSlot(
  slots: SendSlots,
  key: string,
  rate: SlotRate,
  deps: SlotWaitDeps,
): Promise<SendSlot> {
  const slot = slots.take(key, rate, deps.now());
  try {
    for (let wait = slots.claim(slot, deps.now()); wait > 0; wait = slots.claim(slot, deps.now())) {
      if (Number.isFinite(wait)) await sleepUnlessAborted(deps.sleep, wait, deps.signal, deps.operation);
      else await changedUnlessAborted(slots.changed(slot), deps.signal, deps.operation);
    }
    return slot;
  } catch (error) {
    slots.release(slot);
    throw error;
  }
}

/** Waits for `changed`, or ends with an abort error when the signal fires first. */
async function changedUnlessAborted(changed: Promise<void>, signal?: AbortSignal, operation = 'request') {
  if (!signal) return await changed;
  const aborted = () => new DocexAbortError(operation, 'aborted', { cause: signal.reason });
  if (signal.aborted) throw aborted();
  let onAbort!: () => void;
  const stopped = new Promise<never>((_, reject) => {
    onAbort = () => reject(aborted());
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([changed, stopped]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
