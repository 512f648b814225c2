/**
 * Each daemon module gets its slice of the config: the repo's ESLint config refuses the whole
 * `Config` (and `ConfigSchema` / `loadConfig`, which give it) outside the wiring, however it is
 * imported. Each probe is linted as if it were a file at that path.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, test } from 'vitest';

const eslint = new ESLint({ cwd: join(import.meta.dirname, '../..') });

// The first lint loads the config and its plugins (tens of seconds on a busy machine): paid here,
// under the hook's limit, not by whichever test comes first.
beforeAll(() => eslint.lintText('export {};\n', { filePath: 'shared/src/core/warm-up.ts' }), 300_000);

async function wholeConfig(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'docex/whole-config').map((m) => m.message);
}

const fromConfig = (file: string) =>
  file.startsWith('daemon/src/config/') ? './config.ts' : '../config/config.ts';

const WHOLE = /whole docex-sync config/;

describe.each([
  'daemon/src/pipeline/probe.ts',
  'daemon/src/jobs/probe.ts',
  'daemon/src/actions/probe.ts',
  'daemon/src/status/probe.ts',
  'daemon/src/outputs/probe.ts',
  'daemon/src/mail/probe.ts',
  'daemon/src/store/probe.ts',
  'daemon/src/config/probe.ts',
])('a library module (%s)', (file) => {
  const config = fromConfig(file);

  test('may import the slice types and the helpers', async () => {
    const code = `import { globMatcher, ConfigError, type ConfigSlice, type WatchConfig, type NotifyConfig } from '${config}';\nexport type S = ConfigSlice<'watch'> & WatchConfig & NotifyConfig;\nexport { globMatcher, ConfigError };\n`;
    expect(await wholeConfig(file, code)).toEqual([]);
  });

  test.each([
    ['the Config type', `import type { Config } from '%s';\nexport type C = Config;\n`],
    ['the Config type renamed', `import type { Config as Settings } from '%s';\nexport type C = Settings;\n`],
    [
      'the Config type inline',
      `import { type Config, type WatchConfig } from '%s';\nexport type C = [Config, WatchConfig];\n`,
    ],
    ['the schema', `import { ConfigSchema } from '%s';\nexport const s = ConfigSchema;\n`],
    ['the loader', `import { loadConfig } from '%s';\nexport const l = loadConfig;\n`],
    ['a re-export of it', `export type { Config } from '%s';\n`],
    ['an import type', `export type C = import('%s').Config;\n`],
  ])('may not import %s', async (_what, template) => {
    const findings = await wholeConfig(file, template.replace('%s', config));
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatch(WHOLE);
  });

  test.each([
    ['a namespace', `import * as settings from '%s';\nexport { settings };\n`],
    ['everything re-exported', `export * from '%s';\n`],
    ['the module type', `export type M = typeof import('%s');\n`],
  ])('may not reach it through %s', async (_what, template) => {
    expect((await wholeConfig(file, template.replace('%s', config))).join()).toMatch(
      /namespace of config\/config\.ts reaches the whole docex-sync config/,
    );
  });
});

describe('paths are resolved', () => {
  test("config/mail.ts (the mailboxes' section) is not the daemon's config", async () => {
    expect(
      await wholeConfig(
        'daemon/src/mail/probe.ts',
        `import type { Config } from '../config/mail.ts';\nexport type C = Config;\n`,
      ),
    ).toEqual([]);
  });

  test('config/config.ts reached by a longer way still is', async () => {
    const code = `import type { Config } from '../../src/config/config.ts';\nexport type C = Config;\n`;
    expect((await wholeConfig('daemon/src/status/probe.ts', code)).join()).toMatch(WHOLE);
  });
});

describe('the wiring may hold the whole Config', () => {
  test.each([
    'daemon/src/app/daemon.ts',
    'daemon/src/app/run.ts',
    'daemon/src/commands/run.ts',
    'daemon/src/commands/probe.ts',
  ])('%s', async (file) => {
    const code = `import { loadConfig, type Config } from '../config/config.ts';\nexport const load: (file: string) => Config = loadConfig;\n`;
    expect(await wholeConfig(file, code)).toEqual([]);
  });

  test('and tests may', async () => {
    const code = `import type { Config } from '../../../daemon/src/config/config.ts';\nexport type C = Config;\n`;
    expect(await wholeConfig('test/daemon/pipeline/probe.test.ts', code)).toEqual([]);
  });
});
