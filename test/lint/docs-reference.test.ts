/**
 * The generated reference pages (scripts/docs-reference.ts) are what the code makes now: a key of the
 * config schema or an exit code added, removed or changed without `npm run docs:reference` fails
 * here. The planted drifts show the comparison sees a change of the input.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod/v4';
import { ConfigSchema } from '../../daemon/src/config/config.ts';
import { CONFIG_MEANINGS } from '../../cli-kit/src/config-meanings.ts';
import { EXIT } from '../../cli-kit/src/exit-codes.ts';
import {
  configPage,
  configRows,
  exampleComments,
  exitCodesPage,
  referencePages,
} from '../../scripts/docs-reference.ts';

const repo = resolve(import.meta.dirname, '../..');
const onDisk = (path: string) => readFileSync(resolve(repo, path), 'utf8');
const example = () => exampleComments(onDisk('examples/docex-sync.yaml'));

describe('generated reference pages', () => {
  it('each page is what `npm run docs:reference` makes from the code now', () => {
    for (const [path, text] of Object.entries(referencePages()))
      expect(onDisk(path), `${path} differs from the code: run npm run docs:reference`).toBe(text);
  });

  it('the config page lists every key with its type, default and meaning', () => {
    const page = onDisk('docs/reference/config.md');
    expect(page).toContain('| `state_db` | text | **required** | the file where docex-sync keeps');
    expect(page).toMatch(/\| `poll\.interval_ms` \| a whole number of milliseconds \(1 or more\), e\.g\. 2000 \| `2000` \| first wait/);
    expect(page).toContain('| `watch[].routes[].match` |');
    expect(page).toMatch(/\| `watch\[\]\.on_success` \| one of: move, delete, keep \| `"move"` \|/);
  });

  it('a planted drift of the schema changes the config page (a new key, a changed default)', () => {
    const now = configPage(configRows(ConfigSchema, CONFIG_MEANINGS, example()));
    const withKey = ConfigSchema.extend({ planted_key: z.number().int().min(1).default(7) });
    const drifted = configPage(configRows(withKey, CONFIG_MEANINGS, example()));
    expect(drifted).not.toBe(now);
    expect(drifted).toContain('| `planted_key` | a whole number (1 or more), e.g. 7 | `7` |');
    const changedDefault = ConfigSchema.extend({ log_level: z.enum(['info', 'debug']).default('debug') });
    expect(configPage(configRows(changedDefault, CONFIG_MEANINGS, example()))).not.toBe(now);
    expect(onDisk('docs/reference/config.md')).toBe(now);
  });

  it('a planted exit code changes the exit-code page, and one without words stops the script', () => {
    const now = exitCodesPage(EXIT);
    expect(onDisk('docs/reference/exit-codes.md')).toBe(now);
    expect(exitCodesPage({ ...EXIT, tlsExpired: 14 })).not.toBe(now);
    expect(() => exitCodesPage({ ...EXIT, planted: 99 })).toThrow(/planted/);
  });
});
