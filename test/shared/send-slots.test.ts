/**
 * The send slots one n8n process shares per credential (shared/src/core/send-slots.ts), on a
 * simulated clock: many callers at once, a 429's pause, keys kept apart, the bound on keys.
 */
import { describe, expect, test } from 'vitest';
import { DocexAbortError, SendSlots, spacingMsOf, waitForSendSlot, type SlotRate } from '@docex/shared';
import { simulatedClock, type SimulatedClock } from '../support/simulated-clock.ts';
import { maxInWindow } from '../support/windows.ts';

const RATE: SlotRate = { perSecond: 10, marginMs: 50 };
const SPACING = 105;

/**
 * `count` callers, caller i arriving at `arrival(i)`, each waiting for a slot of `key`, sending, and
 * getting its answer `latency(i)` ms later; their send times.
 */
function callers(
  clock: SimulatedClock,
  slots: SendSlots,
  key: string,
  count: number,
  arrival: (i: number) => number = () => 0,
  latency: (i: number) => number = () => 20,
) {
  const sent: Array<{ caller: number; at: number }> = [];
  const done = Promise.all(
    Array.from({ length: count }, async (_, caller) => {
      await clock.sleep(arrival(caller));
      const slot = await waitForSendSlot(slots, key, RATE, clock);
      sent.push({ caller, at: clock.now() });
      await clock.sleep(latency(caller));
      slots.answered(slot, clock.now(), 200);
    }),
  );
  return { sent, done };
}

const gapsOf = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);

describe('SendSlots', () => {
  test('many callers at once: first come first served, one slot every (1000 + margin) / rate ms, never more than the rate in a second', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots({ random: () => 0.5 });
    const run = callers(clock, slots, 'k', 60, (i) => i * 3);
    await clock.drain();
    await run.done;
    expect(run.sent.map((s) => s.caller)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    const times = run.sent.map((s) => s.at);
    expect(times[0]).toBe(0);
    for (const gap of gapsOf(times)) expect(gap).toBeCloseTo(SPACING, 6);
    expect(maxInWindow(times, 1000)).toBe(10);
    expect(spacingMsOf(RATE)).toBe(SPACING);
  });

  test('a 429 pauses the key: nothing goes before the pause ends, the waiting callers keep their order and spacing; a 429 of the same round does not pause again', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots({ random: () => 0.5 });
    const run = callers(clock, slots, 'k', 30);
    const ends: number[] = [];
    clock.schedule(350, () => ends.push(slots.refused('k', clock.now(), 1000)));
    // An answer to a request sent before the pause: the same round.
    clock.schedule(400, () => ends.push(slots.refused('k', clock.now(), 1000)));
    await clock.drain();
    await run.done;
    const pause = 1000 + 0.5 * SPACING; // the server's wait and half a spacing of jitter
    expect(ends).toEqual([350 + pause, 350 + pause]);
    const times = run.sent.map((s) => s.at);
    expect(times.filter((t) => t > 350 && t < 350 + pause)).toEqual([]);
    expect(times.slice(0, 4)).toEqual([0, 105, 210, 315]);
    expect(run.sent.map((s) => s.caller)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    for (const gap of gapsOf(times.slice(4))) expect(gap).toBeCloseTo(SPACING, 6);
    // The slots not yet used went again from the pause's end, once.
    expect(times[4]).toBeCloseTo(350 + pause, 6);
    expect(times.at(-1)).toBeCloseTo(350 + pause + 25 * SPACING, 6);
  });

  test('a slot already due when the 429 came, whose holder had not woken yet, goes after the pause, in its place', () => {
    const slots = new SendSlots({ random: () => 0 });
    const early = slots.take('k', RATE, 0);
    const late = slots.take('k', RATE, 0); // due at 105
    slots.refused('k', 200, 1000); // both holders are late (a busy event loop): the pause came first
    expect(slots.claim(early, 200)).toBe(1000);
    expect(slots.claim(late, 200)).toBe(Infinity); // behind the early one, which has not gone
    expect(slots.claim(early, 1200)).toBe(0);
    expect(slots.claim(late, 1200)).toBe(SPACING);
    // A slot taken now comes after them.
    expect(slots.take('k', RATE, 200).at).toBe(1200 + 2 * SPACING);
  });

  test('requests let go late by a busy event loop, or answered slowly, never make more than the rate in any second at the service', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots({ random: () => 0 });
    // Each request reaches the service 0-400 ms after it was let go (pseudo-random, repeatable),
    // and is answered 10 ms after it arrived.
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const arrivals: number[] = [];
    const done = Promise.all(
      Array.from({ length: 100 }, async () => {
        const slot = await waitForSendSlot(slots, 'k', RATE, clock);
        await clock.sleep(random() * 400);
        arrivals.push(clock.now());
        await clock.sleep(10);
        slots.answered(slot, clock.now(), 200);
      }),
    );
    await clock.drain();
    await done;
    expect(arrivals).toHaveLength(100);
    expect(maxInWindow(arrivals, 1000)).toBeLessThanOrEqual(10);
  });

  test('answers within the margin cost nothing; until a request is answered, the one `perSecond` places behind it waits', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots();
    const fast = callers(
      clock,
      slots,
      'fast',
      30,
      () => 0,
      () => 50,
    );
    await clock.drain();
    await fast.done;
    expect(fast.sent.at(-1)!.at).toBeCloseTo(29 * SPACING, 6);

    // Ten requests in flight, unanswered: the eleventh waits for an answer, then a second more.
    const holding = Promise.all(
      Array.from({ length: 10 }, () => waitForSendSlot(slots, 'slow', RATE, clock)),
    );
    let eleventhAt: number | undefined;
    const eleventh = waitForSendSlot(slots, 'slow', RATE, clock).then(() => (eleventhAt = clock.now()));
    await clock.drain();
    const held = await holding;
    expect(eleventhAt).toBeUndefined();
    let answeredAt = 0;
    clock.schedule(3000, () => slots.answered(held[0]!, (answeredAt = clock.now()), 200));
    await clock.drain();
    await eleventh;
    expect(eleventhAt).toBe(answeredAt + 1000);
  });

  test("rounds of 429s in a row pause longer (the server's wait, or twice the last pause); any other answer ends the streak", () => {
    const slots = new SendSlots({ random: () => 0, basePauseMs: 1000 });
    expect(slots.claim(slots.take('k', RATE, 0), 0)).toBe(0);
    expect(slots.refused('k', 0, 1000)).toBe(1000);
    expect(slots.refused('k', 1000, 1000)).toBe(1000 + 2000);
    expect(slots.refused('k', 3000, 1000)).toBe(3000 + 4000);
    expect(slots.refused('k', 7000, 9000)).toBe(7000 + 9000); // a longer Retry-After wins
    const answered = slots.take('k', RATE, 16_000);
    expect(slots.claim(answered, 16_000)).toBe(0);
    slots.answered(answered, 16_010, 200);
    expect(slots.refused('k', 20_000, 1000)).toBe(21_000);
    // Without a wait from the server: the base pause, doubling, capped by maxPauseMs.
    const own = new SendSlots({ random: () => 0, basePauseMs: 500, maxPauseMs: 1500 });
    expect([0, 1000, 3000, 5000].map((t) => own.refused('k', t) - t)).toEqual([500, 1000, 1500, 1500]);
  });

  test('a pause ends after the Retry-After, by at most one spacing of jitter', () => {
    for (const random of [0, 0.25, 0.999]) {
      const slots = new SendSlots({ random: () => random });
      slots.take('k', RATE, 0);
      const end = slots.refused('k', 10, 1000);
      expect(end).toBeGreaterThanOrEqual(1010);
      expect(end).toBeLessThan(1010 + SPACING);
    }
  });

  test('keys are kept apart: each has its own slots and its own pauses', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots({ random: () => 0 });
    const a = callers(clock, slots, 'https://a.example key-digest-1', 20);
    const b = callers(clock, slots, 'https://a.example key-digest-2', 20);
    clock.schedule(100, () => slots.refused('https://a.example key-digest-1', clock.now(), 5000));
    await clock.drain();
    await Promise.all([a.done, b.done]);
    expect(b.sent.map((s) => s.at)).toEqual(Array.from({ length: 20 }, (_, i) => i * SPACING));
    expect(a.sent.map((s) => s.at)[1]).toBe(100 + 5000); // its second slot went again from the pause's end
  });

  test('at most maxKeys keys are kept; an idle key goes before one with slots ahead', () => {
    const slots = new SendSlots({ maxKeys: 2, random: () => 0 });
    for (let i = 0; i < 20; i++) slots.take('busy', RATE, 0); // slots handed out up to 2100
    const once = slots.take('idle', RATE, 0);
    expect(slots.claim(once, 0)).toBe(0);
    slots.answered(once, 20, 200); // counts until 1020
    slots.take('new', RATE, 1500); // 'busy' is the least recently used, but 'idle' has nothing ahead
    expect(slots.size).toBe(2);
    expect(slots.take('busy', RATE, 1500).at).toBeCloseTo(20 * SPACING, 6);
    expect(slots.take('idle', RATE, 1500).at).toBe(1500); // forgotten: a fresh key
    for (let i = 0; i < 1000; i++) slots.take(`key ${i}`, RATE, 1600);
    expect(slots.size).toBe(2);
  });

  test('a caller whose signal fires stops waiting with an abort error', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots();
    for (let i = 0; i < 10; i++) slots.take('k', RATE, 0);
    const stop = new AbortController();
    const waiting = waitForSendSlot(slots, 'k', RATE, {
      ...clock,
      signal: stop.signal,
      operation: 'upload_file',
    });
    stop.abort();
    await expect(waiting).rejects.toBeInstanceOf(DocexAbortError);
  });

  test('without a margin (the default), slots are 1000 / rate ms apart: answers that come at once let the whole rate through', async () => {
    const clock = simulatedClock();
    const slots = new SendSlots({ random: () => 0 });
    const rate: SlotRate = { perSecond: 10 };
    expect(spacingMsOf(rate)).toBe(100);
    const sent: number[] = [];
    const done = Promise.all(
      Array.from({ length: 50 }, async () => {
        const slot = await waitForSendSlot(slots, 'k', rate, clock);
        sent.push(clock.now());
        slots.answered(slot, clock.now(), 200);
      }),
    );
    await clock.drain();
    await done;
    expect(sent).toEqual(Array.from({ length: 50 }, (_, i) => i * 100));
    expect(maxInWindow(sent, 1000)).toBe(10);
  });

  test('without a margin, wherever each request arrives between its let-go and its answer, no second at the service holds more than the rate', async () => {
    // The counting rule alone is the guarantee: of any rate + 1 arrivals in one server second, the
    // one let go last went while the others all still counted (each arrived before its answer,
    // and counts until a second after it). Late let-gos, slow and uneven answers, arrivals anywhere
    // in between (pseudo-random, repeatable): the arrivals never exceed the rate in any second.
    for (const seed0 of [1, 7, 42, 1234, 99_991]) {
      let seed = seed0;
      const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
      const clock = simulatedClock();
      const slots = new SendSlots({ random: () => 0 });
      const rate: SlotRate = { perSecond: 10 };
      const arrivals: number[] = [];
      const done = Promise.all(
        Array.from({ length: 200 }, async (_, i) => {
          await clock.sleep(random() < 0.5 ? 0 : i * 40);
          const slot = await waitForSendSlot(slots, 'k', rate, clock);
          const latency = random() < 0.2 ? random() * 600 : random() * 60;
          const arrival = clock.now() + random() * latency;
          clock.schedule(arrival - clock.now(), () => arrivals.push(clock.now()));
          await clock.sleep(latency);
          slots.answered(slot, clock.now(), 200);
        }),
      );
      await clock.drain();
      await done;
      expect(arrivals).toHaveLength(200);
      expect(maxInWindow(arrivals, 1000)).toBeLessThanOrEqual(10);
      // Not slower than the rule requires: 200 requests answered within 600 ms take less than
      // 200 / 10 seconds plus a second of latency per ten.
      expect(clock.now()).toBeLessThan(200 * 100 + 20 * 600 + 600);
    }
  });

  test('a rate must be a positive number of requests per second', () => {
    for (const perSecond of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => spacingMsOf({ perSecond })).toThrow(/positive number of requests per second/);
  });
});
