/**
 * Config mistakes in the words of whoever wrote the file: every message names the key (with the
 * file and line), says what is wrong and what a valid value looks like, never in the validation
 * library's words. The walk below tries wrong values on every key of the config's schema.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod/v4';
import { ConfigSchema } from '../../../daemon/src/config/config.ts';
import { CONFIG_MEANINGS } from '../../../cli-kit/src/config-meanings.ts';
import { check as checkWith, keyPath } from '../../../cli-kit/src/yaml.ts';
import { nodeAt, phrase, type KeyMeanings } from '../../../cli-kit/src/plain-words.ts';
import { CliConfigSchema } from '../../../cli/src/profile.ts';
import { syncInProcess } from '../helpers.ts';

/** The validation library's own phrasing: none of it may reach a person. */
const LIBRARY_WORDS =
  /invalid (input|option|url|iso|string|key|element|union|format|value|type)|\bexpected\b|\breceived\b|too (small|big)|unrecognized key|safeint|[<>]=?\s?\d|\bNaN\b/i;

let dir: string;
beforeAll(async () => void (dir = await mkdtemp(join(tmpdir(), 'docex-config-messages-'))));
afterAll(async () => rm(dir, { recursive: true, force: true }));

/** `docex-sync check` on a config file holding `text` (nothing is reached: the file is refused first). */
async function check(text: string) {
  const file = join(dir, 'docex-sync.yaml');
  await writeFile(file, text);
  const run = await syncInProcess(['check', '--config', file]);
  return { ...run, stderr: run.stderr.replaceAll(file, 'docex-sync.yaml') };
}

describe('config mistakes in plain words', () => {
  it('says what is missing, a number that is not whole or too small, with file, line and key', async () => {
    const run = await check(`state_db: ./state.db
watch:
  - path: ./in
    template_id: 3
    output: ./out
    processed_dir: ./done
    retention:
      processed_days: 0.0001
      failed_days: 0
    polling_interval_ms: 50
    on_success: mvoe
`);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`docex-sync check: docex-sync.yaml: invalid config
  docex-sync.yaml:11 watch[0].on_success: must be one of: move, delete, keep, not "mvoe" (did you mean "move"?)
  docex-sync.yaml:3 watch[0].failed_dir: is missing: set it to the folder where files that cannot be processed go, e.g. ./failed
  docex-sync.yaml:10 watch[0].polling_interval_ms: must be a whole number of milliseconds (100 or more), e.g. 1000, not 50
  docex-sync.yaml:8 watch[0].retention.processed_days: must be a whole number of days (1 or more), e.g. 30, not 0.0001
  docex-sync.yaml:9 watch[0].retention.failed_days: must be a whole number of days (1 or more), e.g. 30, not 0
`);
  });

  it('a key with no value, a wrong type, a URL, a date and a port out of range', async () => {
    const run = await check(`api:
  base_url: api.example.com
state_db:
watch:
  - path: ./in
    template_id: three
    output: ./out
    processed_dir: ./done
    failed_dir: ./failed
    recursive: "yes"
http:
  port: 99999
reruns:
  - name: nightly
    schedule: "0 2 * * *"
    created_from: 2026-13-01
`);
    expect(run.stderr).toBe(`docex-sync check: docex-sync.yaml: invalid config
  docex-sync.yaml:2 api.base_url: must be a URL, e.g. https://api.example.com, not "api.example.com"
  docex-sync.yaml:3 state_db: has no value: set it to the file where docex-sync keeps what it knows of every file, e.g. ./state/docex-sync.db
  docex-sync.yaml:6 watch[0].template_id: must be a whole number (1 or more), e.g. 3, not "three"
  docex-sync.yaml:10 watch[0].recursive: must be true or false, not "yes"
  docex-sync.yaml:16 reruns[0].created_from: must be a date such as 2026-01-31, not "2026-13-01"
  docex-sync.yaml:12 http.port: must be a whole number (from 0 to 65535), not 99999
`);
  });

  it('refuses a cron schedule whose field is out of range, naming the key and the field (check and load)', async () => {
    const run = await check(`state_db: ./state.db
watch:
  - path: ./in
    template_id: 3
    output: ./out
    processed_dir: ./done
    failed_dir: ./failed
    retention:
      processed_days: 30
      schedule: "*/61 * * * *"
reruns:
  - name: nightly
    schedule: "0 25 * * *"
  - name: weekly
    schedule: "0 2 * * 1/9"
pull:
  schedule: "0 2 * *"
  output: ./pulled
`);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`docex-sync check: docex-sync.yaml: invalid config
  docex-sync.yaml:10 watch[0].retention.schedule: "*/61 * * * *": the minute field "*/61" steps by 61, but minutes go from 0 to 59: a step is 1 to 59, e.g. "*/15 * * * *"
  docex-sync.yaml:17 pull.schedule: "0 2 * *" has 4 fields: a schedule has 5 (minute hour day-of-month month day-of-week), or 6 with seconds first, e.g. "30 3 * * *" (03:30 every day)
  docex-sync.yaml:13 reruns[0].schedule: "0 25 * * *": the hour field "25" is out of range: hours go from 0 to 23
  docex-sync.yaml:15 reruns[1].schedule: "0 2 * * 1/9": the day-of-week field "1/9" steps by 9, but days of the week go from 0 to 7: a step is 1 to 6, e.g. "*/2"
`);
  });
});

/** A YAML node of the schema: its wrappers (optional, default) removed. */
function core(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const def = s.def as { type: string; innerType?: z.ZodType };
    if (!def.innerType || !['optional', 'default', 'nullable', 'prefault'].includes(def.type)) return s;
    s = def.innerType;
  }
}

/** Valid values for the keys a generic value cannot satisfy (custom checks, patterns). */
const VALID_BY_KEY: Record<string, unknown> = {
  schedule: '30 3 * * *',
  archive_name: '{name}{ext}',
  result_name: '{name}',
  name: 'invoices',
  url: 'https://hooks.example.com/docex',
  base_url: 'https://api.example.com',
  ignore_names: ['@eaDir'],
  min_confidence: 0.5,
  max_score: 0.5,
  // A review field's rule: required and optional at once is itself a mistake (review-rules-config.test.ts).
  optional: false,
};

/** A valid value for every key of `schema`, optional sections included, so each key can be spoiled in turn. */
function sample(schema: z.ZodType, key = ''): unknown {
  if (key in VALID_BY_KEY) return VALID_BY_KEY[key];
  const s = core(schema);
  const def = s.def as {
    type: string;
    shape?: Record<string, z.ZodType>;
    element?: z.ZodType;
    options?: z.ZodType[];
    valueType?: z.ZodType;
    entries?: Record<string, string>;
    values?: unknown[];
    format?: string;
    checks?: Array<{ _zod: { def: { check: string; value?: number; inclusive?: boolean } } }>;
  };
  switch (def.type) {
    case 'object':
      return Object.fromEntries(Object.entries(def.shape!).map(([k, v]) => [k, sample(v, k)]));
    case 'array':
      return [sample(def.element!)];
    case 'union':
      return sample(def.options![0]!);
    case 'record':
      return { name: sample(def.valueType!) };
    case 'enum':
      return Object.values(def.entries!)[0];
    case 'literal':
      return def.values![0];
    case 'boolean':
      return true;
    case 'number':
      return Math.max(1, ...(def.checks ?? []).map((c) => c._zod.def.value ?? 0));
    case 'string':
      return def.format === 'url' ? 'https://example.com' : def.format === 'date' ? '2026-01-31' : 'x';
    default:
      throw new Error(`no sample for a ${def.type} at ${key}`);
  }
}

/** Every key path of a sample, parents first. */
function keyPaths(value: unknown, path: PropertyKey[] = []): PropertyKey[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...path, i], ...keyPaths(v, [...path, i])]);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => [[...path, k], ...keyPaths(v, [...path, k])]);
  return [];
}

function withValue(root: unknown, path: PropertyKey[], value: unknown): unknown {
  const copy = structuredClone(root) as Record<PropertyKey, unknown>;
  let node = copy;
  for (const part of path.slice(0, -1)) node = node[part] as Record<PropertyKey, unknown>;
  const last = path.at(-1)!;
  if (value === undefined) {
    if (Array.isArray(node)) node.splice(Number(last), 1);
    else delete node[last];
  } else node[last] = value;
  return copy;
}

const WRONG_VALUES: unknown[] = [undefined, null, '', 'x', -1, 0, 0.5, 1e15, true, [], {}, ['x'], [-1], [{}]];

/** The problems the loader reports for `data` (common/yaml.ts), each prefixed by its key path. */
const problemsOf = (schema: z.ZodType, data: unknown, meanings: KeyMeanings) => {
  const checked = checkWith(schema, data, keyPath, meanings);
  return checked.success ? [] : checked.problems;
};

/** Every wrong value on every key: each problem names its key and speaks plainly. */
function walk(schema: z.ZodType, meanings: KeyMeanings) {
  const valid = sample(schema);
  // The sample itself must pass, or every spoiled copy would fail for the wrong reason.
  expect(problemsOf(schema, valid, meanings)).toEqual([]);
  const leaks: string[] = [];
  let tried = 0;
  for (const path of keyPaths(valid)) {
    for (const wrong of WRONG_VALUES) {
      const problems = problemsOf(schema, withValue(valid, path, wrong), meanings);
      tried++;
      for (const problem of problems) {
        if (LIBRARY_WORDS.test(problem) || !/^\S+: \S/.test(problem))
          leaks.push(`${keyPath(path)} = ${JSON.stringify(wrong)}: ${problem}`);
      }
    }
  }
  return { leaks, tried };
}

describe('every key of the config schema', () => {
  // Thousands of checks of the whole config: seconds on a busy machine.
  it(
    'no message for any key of docex-sync config uses the validation library words',
    { timeout: 120_000 },
    () => {
      const { leaks, tried } = walk(ConfigSchema, CONFIG_MEANINGS);
      expect(tried).toBeGreaterThan(1500);
      expect(leaks).toEqual([]);
    },
  );

  it('nor for any key of docex profiles (the same loader)', () => {
    const { leaks } = walk(CliConfigSchema, CONFIG_MEANINGS);
    expect(leaks).toEqual([]);
  });

  it('every key that must be given says what it is when it is missing', () => {
    const valid = sample(ConfigSchema) as Record<string, unknown>;
    const missing: string[] = [];
    for (const path of keyPaths(valid).filter((p) => typeof p.at(-1) === 'string')) {
      for (const problem of problemsOf(ConfigSchema, withValue(valid, path, undefined), CONFIG_MEANINGS))
        // Only its type would say too little ("set it to text"): the key's meaning is wanted.
        if (
          problem ===
          `${keyPath(path)}: is missing: set it to ${phrase(nodeAt(ConfigSchema, path)!, String(path.at(-1)))}`
        )
          missing.push(problem);
    }
    expect(missing).toEqual([]);
    expect(Object.keys(CONFIG_MEANINGS).length).toBeGreaterThan(10);
  });
});
