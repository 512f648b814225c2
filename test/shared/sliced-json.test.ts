/**
 * JSON read and written a slice at a time (shared/src/node/sliced-json.ts) gives what JSON.parse and
 * JSON.stringify give, for every value and every mistake, and lets the event loop run between slices.
 * Small slices make the tests go through every path (runs of values, values larger than a slice,
 * keys, strings longer than a slice) with small values; the values are random, from a fixed seed.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { jsonInSlices, parseJsonInSlices } from '@docex/shared/node';

/** A small PRNG (mulberry32): the same values on every run. */
function random(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = [
  '',
  'a',
  'Widget, blue',
  'quote " and \\ backslash',
  'line\nbreak\ttab',
  'é ü 😀 \u2028',
  '{[,]}:',
  '\u0000',
];
const KEYS = ['a', 'value', 'confidence', '', '0', '12', '__proto__', 'constructor', 'x y', '"q"'];

/** A random JSON value: nested containers of varied sizes, every kind of scalar. */
function jsonValue(next: () => number, depth = 0): unknown {
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const kind = depth > 4 ? Math.floor(next() * 4) : Math.floor(next() * 7);
  if (kind === 0) return pick(STRINGS) + (next() < 0.1 ? 'x'.repeat(Math.floor(next() * 300)) : '');
  if (kind === 1) return pick([0, -0, 1, -1.5, 1e21, 2.5e-7, 123456789.125, Math.floor(next() * 1e6)]);
  if (kind === 2) return pick([true, false]);
  if (kind === 3) return null;
  const size = next() < 0.2 ? Math.floor(next() * 30) : Math.floor(next() * 4);
  if (kind < 6) return Array.from({ length: size }, () => jsonValue(next, depth + 1));
  const object: Record<string, unknown> = {};
  for (let k = 0; k < size; k++) {
    const key = next() < 0.5 ? pick(KEYS) : `k${Math.floor(next() * 50)}`;
    Object.defineProperty(object, key, {
      value: jsonValue(next, depth + 1),
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  return object;
}

/** The text of `value` with random whitespace around its tokens, as some servers write it. */
const spaced = (text: string, next: () => number) =>
  text.replace(/("(?:[^"\\]|\\.)*")|([,:[\]{}])/g, (match, string: string | undefined) =>
    string !== undefined ? match : `${next() < 0.3 ? ' \n' : ''}${match}${next() < 0.3 ? '\t ' : ''}`,
  );

/**
 * The same value as JSON.parse gives: deeply equal (own __proto__ keys, -0, prototypes) and with its
 * keys in the same order. Not toStrictEqual: it compares an own `constructor` key by identity.
 */
const expectSame = (value: unknown, expected: unknown) => {
  expect(isDeepStrictEqual(value, expected)).toBe(true);
  expect(JSON.stringify(value)).toBe(JSON.stringify(expected));
};

const settle = async (text: string, sliceChars: number) => {
  let pauses = 0;
  try {
    // From the text's UTF-8 bytes, as answers and files come.
    const value = await parseJsonInSlices(Buffer.from(text), {
      sliceChars,
      pause: async () => void pauses++,
    });
    return { value, pauses };
  } catch (error) {
    return { error: error as Error, pauses };
  }
};
/** JSON.parse of the text as its UTF-8 bytes carry it (a lone surrogate of a cut becomes U+FFFD). */
const native = (text: string) => {
  try {
    return { value: JSON.parse(Buffer.from(text).toString()) as unknown };
  } catch (error) {
    return { error: error as Error };
  }
};

const written = async (value: unknown, indent: number | string, sliceChars: number) => {
  let text = '';
  for await (const piece of jsonInSlices(value, indent, { sliceChars, pause: async () => {} })) text += piece;
  return text;
};

describe('JSON read in slices', () => {
  it('gives what JSON.parse gives, for 600 random values, with slices of 8 to 512 characters', async () => {
    const next = random(41);
    for (let n = 0; n < 600; n++) {
      const value = jsonValue(next);
      const text = next() < 0.5 ? JSON.stringify(value) : spaced(JSON.stringify(value, null, 2), next);
      const sliceChars = [8, 16, 64, 512][n % 4]!;
      const parsed = await settle(text, sliceChars);
      expect(parsed.error).toBeUndefined();
      expectSame(parsed.value, JSON.parse(text));
    }
  });

  it('refuses what JSON.parse refuses: mistakes made by hand and 2,000 random cuts and changes of valid text', async () => {
    const mistakes = [
      '[1,]',
      '[,1]',
      '[1,,2]',
      '[1 2]',
      '{"a":1,}',
      '{,"a":1}',
      '{"a" 1}',
      '{"a":}',
      '{a:1}',
      "{'a':1}",
      '[1}',
      '{"a":1]',
      '[[1,2]',
      '[1,2]]',
      '["abc]',
      '["a\\"]',
      '[NaN]',
      '[01]',
      '[.5]',
      '[tru]',
      '\uFEFF[1]',
      '[1]x',
      '[1] [2]',
      '[\u00a01]',
      '{"a":1 "b":2}',
      '[{"a":1},]',
      '{"a":[1,2,],"b":1}',
      '',
      ' ',
    ].map((text) => (text.length > 2 ? `${text.slice(0, -1)}${' '.repeat(40)}${text.slice(-1)}` : text));
    const next = random(7);
    const cut: string[] = [];
    for (let n = 0; n < 2000; n++) {
      const text = JSON.stringify(jsonValue(next));
      const at = Math.floor(next() * text.length);
      const change = Math.floor(next() * 3);
      const char = '[]{},:"\\ 1a'[Math.floor(next() * 12)]!;
      cut.push(
        change === 0
          ? text.slice(0, at) + text.slice(at + 1)
          : change === 1
            ? text.slice(0, at) + char + text.slice(at)
            : text.slice(0, at),
      );
    }
    for (const [n, text] of [...mistakes, ...cut].entries()) {
      const sliceChars = [4, 8, 32][n % 3]!;
      const parsed = await settle(text, sliceChars);
      const expected = native(text);
      if (expected.error) expect(parsed.error, `${text} should be refused`).toBeInstanceOf(SyntaxError);
      else expectSame(parsed.value, expected.value);
    }
  });

  it('reads bytes as JSON.parse reads their UTF-8 text, split characters and invalid bytes included', async () => {
    const next = random(5);
    for (let n = 0; n < 200; n++) {
      const text = JSON.stringify(jsonValue(next));
      const bytes = Buffer.from(text);
      // A stray byte inside a string: invalid UTF-8, decoded as U+FFFD by both.
      const quote = bytes.indexOf(0x22, Math.floor(next() * bytes.length));
      const damaged =
        quote === -1
          ? bytes
          : Buffer.concat([bytes.subarray(0, quote + 1), Buffer.from([0xc3]), bytes.subarray(quote + 1)]);
      for (const input of [bytes, damaged]) {
        const expected = native(input.toString('utf8'));
        let parsed: { value?: unknown; error?: Error };
        try {
          parsed = { value: await parseJsonInSlices(input, { sliceChars: [8, 32][n % 2]! }) };
        } catch (error) {
          parsed = { error: error as Error };
        }
        if (expected.error) expect(parsed.error).toBeInstanceOf(SyntaxError);
        else expectSame(parsed.value, expected.value);
      }
    }
  });

  it('a __proto__ key is an own property, as JSON.parse makes it, and never the prototype', async () => {
    const text = `{"__proto__": {"polluted": true}, "list": [${'{"__proto__": {"x": 1}},'.repeat(20)} 1]}`;
    const parsed = (await parseJsonInSlices(Buffer.from(text), { sliceChars: 16 })) as Record<
      string,
      unknown
    >;
    expectSame(parsed, JSON.parse(text));
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(parsed, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('a repeated key keeps its first place and its last value, as with JSON.parse', async () => {
    const text = `{"a": 1, "b": [${'2,'.repeat(30)} 2], "a": [${'3,'.repeat(30)} 3], "c": 4, "b": 5}`;
    const parsed = await parseJsonInSlices(Buffer.from(text), { sliceChars: 16 });
    expectSame(parsed, JSON.parse(text));
    expect(Object.keys(parsed as object)).toEqual(['a', 'b', 'c']);
  });

  it('a large answer is parsed a slice at a time: the event loop runs between slices', async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ value: `Widget ${i}`, confidence: 0.93 }));
    const text = JSON.stringify({ document_id: 7, Line_fields: { Description: items, Amount: items } });
    const sliceChars = 16 * 1024;
    const { value, pauses } = await settle(text, sliceChars);
    expectSame(value, JSON.parse(text));
    expect(pauses).toBeGreaterThanOrEqual(Math.floor(text.length / sliceChars) - 2);

    // The default pause: other I/O and timers run while a large text is parsed.
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 0);
    await parseJsonInSlices(Buffer.from(text), { sliceChars: 1024 });
    clearInterval(ticking);
    expect(ticks).toBeGreaterThan(0);
  });

  it('large values nested deeper than it enters are refused, in bounded work', async () => {
    const deep = `${'['.repeat(70)}${'1,'.repeat(5000)}1${']'.repeat(70)}`;
    await expect(parseJsonInSlices(Buffer.from(deep), { sliceChars: 64 })).rejects.toThrow(
      /nested deeper than 64/,
    );
    // Small enough for one slice: JSON.parse takes it whole, however deep.
    const small = `${'['.repeat(500)}${']'.repeat(500)}`;
    expectSame(await parseJsonInSlices(Buffer.from(small)), JSON.parse(small));
  });
});

describe('JSON written in slices', () => {
  it('writes what JSON.stringify writes, for 600 random values, indented or not', async () => {
    const next = random(17);
    for (let n = 0; n < 600; n++) {
      const value = jsonValue(next);
      const indent = [0, 2, '\t', '--'][n % 4]!;
      const sliceChars = [8, 32, 256][n % 3]!;
      expect(await written(value, indent, sliceChars)).toBe(JSON.stringify(value, null, indent));
    }
  });

  it('leaves out what JSON leaves out, writes null where it does, and calls toJSON', async () => {
    const big = Array.from({ length: 40 }, (_, i) => i);
    const value = {
      fn: () => 1,
      undef: undefined,
      sym: Symbol('s'),
      date: new Date(0),
      list: [undefined, () => 1, Symbol('t'), ...big],
      sparse: [1, , 3, ...big], // eslint-disable-line no-sparse-arrays
      nested: { gone: undefined, also: () => 2, big, empty: {}, none: [] },
      onlyGone: { a: undefined, b: () => 1 },
      custom: { toJSON: () => ({ replaced: big }) },
      own: JSON.parse('{"__proto__": {"x": [1, 2, 3, 4, 5, 6, 7, 8, 9]}}') as unknown,
    };
    for (const indent of [0, 2])
      for (const sliceChars of [8, 64])
        expect(await written(value, indent, sliceChars)).toBe(JSON.stringify(value, null, indent));
    expect(await written(undefined, 2, 8)).toBe('');
  });

  it('a large value is written in pieces, with a pause after each', async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ value: `Widget ${i}`, confidence: 0.93 }));
    const value = { document: { Line_fields: { Description: items } } };
    const pieces: string[] = [];
    let pauses = 0;
    for await (const piece of jsonInSlices(value, 2, {
      sliceChars: 16 * 1024,
      pause: async () => void pauses++,
    }))
      pieces.push(piece);
    expect(pieces.join('')).toBe(JSON.stringify(value, null, 2));
    expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(3 * 16 * 1024);
    expect(pauses).toBeGreaterThanOrEqual(pieces.length - 1);
  });

  it('a circular value is refused, as JSON.stringify refuses it', async () => {
    const loop: Record<string, unknown> = { list: Array.from({ length: 50 }, (_, i) => i) };
    loop.self = loop;
    await expect(written(loop, 2, 16)).rejects.toThrow(TypeError);
  });
});
