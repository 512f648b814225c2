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
import { CONFIG_MEANINGS, REFERENCE_MEANINGS } from '../../cli-kit/src/config-meanings.ts';
import { EXIT } from '../../cli-kit/src/exit-codes.ts';
import {
  configPage,
  configRows,
  exampleComments,
  exitCodesPage,
  metricRows,
  metricsPage,
  referencePages,
} from '../../scripts/docs-reference.ts';
import { commandEntries, commandsPage, manPage } from '../../scripts/docs-commands.ts';
import { PROGRAM as DOCEX } from '../../cli/src/docex.ts';
import { PROGRAM as SYNC } from '../../daemon/src/commands/docex-sync.ts';

const repo = resolve(import.meta.dirname, '../..');
const onDisk = (path: string) => readFileSync(resolve(repo, path), 'utf8');
const example = () => exampleComments(onDisk('examples/docex-sync.yaml'));

describe('generated reference pages', () => {
  it("each page is what `npm run docs:reference` makes from the code now", async () => {
    for (const [path, text] of Object.entries(await referencePages()))
      expect(onDisk(path), `${path} differs from the code: run npm run docs:reference`).toBe(text);
  });

  it('the config page lists every key with its type, default and meaning', () => {
    const page = onDisk('docs/reference/config.md');
    expect(page).toContain('| `state_db` | text | **required** | the file where docex-sync keeps');
    expect(page).toMatch(/\| `poll\.interval_ms` \| a whole number of milliseconds \(1 or more\), e\.g\. 2000 \| `2000` \| first wait/);
    expect(page).toContain('| `watch[].routes[].match` |');
    // Since which version: every key of the first release says so.
    expect(page).toMatch(/^\| `state_db` \|.*\| 0\.1\.0 \|$/m);
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

  it('a flag planted in a command changes its page and its man page; every command and its aliases are listed', async () => {
    const entries = await commandEntries(SYNC);
    const mainHelp = await SYNC.mainHelp();
    const what = { oneLine: 'x', exitCodes: '0 ok', seeAlso: [] };
    expect(onDisk('docs/reference/docex-sync-commands.md')).toBe(commandsPage(SYNC, mainHelp, entries));
    expect(entries.map((e) => e.names[0])).toEqual(SYNC.commands.map((r) => r.name));
    const [first, ...rest] = SYNC.commands;
    const planted = {
      ...SYNC,
      commands: [
        {
          ...first!,
          load: async () => {
            const command = await first!.load();
            return { ...command, flags: [...command.flags, { name: 'planted-flag', value: 'N', help: 'planted' }] };
          },
        },
        ...rest,
      ],
    };
    const drifted = await commandEntries(planted);
    expect(commandsPage(SYNC, mainHelp, drifted)).toContain('--planted-flag N');
    expect(commandsPage(SYNC, mainHelp, drifted)).not.toBe(commandsPage(SYNC, mainHelp, entries));
    expect(manPage(SYNC, what, mainHelp, drifted)).toContain('\\-\\-planted\\-flag N');
    // docex: each operation once, its API name listed beside its `<resource> <action>`.
    const docex = await commandEntries(DOCEX);
    const upload = docex.find((e) => e.names.includes('tasks upload'));
    expect(upload?.names).toContain('upload_file');
  });

  it('a metric planted in the registry changes the metrics page', () => {
    const rows = metricRows();
    expect(rows.map((r) => r.name)).toContain('docex_sync_files');
    expect(onDisk('docs/reference/metrics.md')).toBe(metricsPage(rows));
    const planted = metricsPage([...rows, { name: 'docex_sync_planted_total', type: 'counter', labels: ['x'], help: 'planted' }]);
    expect(planted).toContain('| `docex_sync_planted_total` | counter | `x` | planted |');
  });

  it('every key of the config page has a meaning, and every word of REFERENCE_MEANINGS names a key', () => {
    const rows = configRows(ConfigSchema, CONFIG_MEANINGS, example());
    expect(rows.filter((r) => r.meaning === '').map((r) => r.path)).toEqual([]);
    const paths = new Set(rows.map((r) => r.path.replace(/\[\]/g, '')));
    expect(Object.keys(REFERENCE_MEANINGS).filter((k) => !paths.has(k))).toEqual([]);
  });
});
