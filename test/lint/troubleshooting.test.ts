/**
 * docs/troubleshooting.md has an entry for every hint of the one table (shared/src/core/hints.ts),
 * as docex-sync prints it: a hint added to the table without its entry fails here.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HINTS, type SettingTerms } from '@docex/shared';

const page = readFileSync(resolve(import.meta.dirname, '../../docs/troubleshooting.md'), 'utf8');

/** docex-sync's words for its settings (daemon's syncTerms with api.base_url in the config). */
const SYNC_TERMS: SettingTerms = {
  baseUrl: 'api.base_url',
  apiKey: 'DOCEX_API_KEY (or api.api_key_file)',
  proxy: 'api.proxy',
  caFile: 'api.ca_file',
};

/** The hints whose sentence the page lacks, in docex-sync's words. */
const missingHints = (text: string, hints: Record<string, (t: SettingTerms) => string>) =>
  Object.entries(hints)
    .filter(([, hint]) => !text.includes(hint(SYNC_TERMS)))
    .map(([name]) => name);

describe('troubleshooting by message', () => {
  it('has an entry quoting every hint of the table', () => {
    expect(missingHints(page, HINTS)).toEqual([]);
  });

  it('finds a hint the page does not quote (a planted one)', () => {
    expect(missingHints(page, { ...HINTS, planted: () => 'a planted hint nobody wrote up' })).toEqual(['planted']);
  });
});
