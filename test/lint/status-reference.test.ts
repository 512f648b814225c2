/**
 * docs/reference/status.md describes `status --json` by hand; this test holds it to the report the
 * code makes: every top-level key, the file states and the health and throughput keys the page
 * names are the report's, no more and no fewer. The planted key shows the comparison bites.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliStatus } from '../../daemon/src/status/report.ts';

const page = readFileSync(resolve(import.meta.dirname, '../../docs/reference/status.md'), 'utf8');
/** The `status --json` section: from its heading to the next one. */
const section = page.slice(page.indexOf('## `status --json`'), page.indexOf('\n## ', page.indexOf('## `status --json`') + 1));

/** The report of a daemon that never ran: every key is present with or without a state DB. */
const report = () =>
  cliStatus({ state_db: '/nonexistent/docex-sync/state.db', watch: [], mailboxes: [] } as unknown as Parameters<
    typeof cliStatus
  >[0]);

/** The keys the page's table names in its first column (`watches[]` as `watches`), and the paragraphs' `name[]`. */
function documentedTopKeys(text: string): string[] {
  const rows = [...text.matchAll(/^\| `([a-z_]+)(?:\[\])?` +\|/gm)].map((m) => m[1]!);
  const paragraphs = [...text.matchAll(/^`([a-z_]+)\[\]`, one per/gm)].map((m) => m[1]!);
  return [...rows, ...paragraphs].filter((k) => k !== 'key');
}

/** The `{ a, b: type, c? }` list the page gives in the row of `key`. */
function documentedFields(text: string, key: string): string[] {
  const row = new RegExp(`^\\| \`${key}\` +\\|[^{]*\\{([^}]*)\\}`, 'm').exec(text);
  if (!row) throw new Error(`docs/reference/status.md has no row for ${key}`);
  return row[1]!.split(',').map((f) => f.trim().split(/[?:\s]/)[0]!);
}

const differences = (documented: string[], actual: string[]) => ({
  undocumented: actual.filter((k) => !documented.includes(k)),
  gone: documented.filter((k) => !actual.includes(k)),
});

describe('docs/reference/status.md and status --json', () => {
  it('name the same top-level keys', () => {
    expect(differences(documentedTopKeys(section), Object.keys(report()))).toEqual({ undocumented: [], gone: [] });
  });

  it('name the same file states, health keys and last-hour counts', () => {
    const r = report();
    expect(differences(documentedFields(section, 'files'), Object.keys(r.files))).toEqual({ undocumented: [], gone: [] });
    expect(differences(documentedFields(section, 'health'), Object.keys(r.health))).toEqual({ undocumented: [], gone: [] });
    expect(differences(['processed', 'failed', 'review'], Object.keys(r.throughput.last_hour))).toEqual({
      undocumented: [],
      gone: [],
    });
    expect(section).toContain('last_hour: { processed, failed, review }');
  });

  it('a key planted in the report, or one gone from it, is found', () => {
    const keys = Object.keys(report());
    expect(differences(documentedTopKeys(section), [...keys, 'planted'])).toEqual({ undocumented: ['planted'], gone: [] });
    expect(differences(documentedTopKeys(section), keys.filter((k) => k !== 'pulls'))).toEqual({
      undocumented: [],
      gone: ['pulls'],
    });
  });
});
