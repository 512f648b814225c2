/**
 * The package boundaries hold by construction: the repo's own ESLint config refuses Node code in
 * n8n node code (nodes/, credentials/) and in the pure core (shared/src/core/), whichever way it is
 * imported. Each probe is linted as if it were a file at that path.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, test } from 'vitest';

const eslint = new ESLint({ cwd: join(import.meta.dirname, '../..') });

// The first lint loads the config and its plugins (tens of seconds on a busy machine): paid here,
// under the hook's limit, not by whichever test comes first.
beforeAll(() => eslint.lintText('export {};\n', { filePath: 'shared/src/core/warm-up.ts' }), 300_000);

async function restrictedImports(filePath: string, importPath: string): Promise<string[]> {
  const [result] = await eslint.lintText(`import * as probe from '${importPath}';\nexport { probe };\n`, {
    filePath,
  });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe.each(['nodes/Docex/actions/probe.ts', 'nodes/DocexTrigger/probe.ts', 'credentials/probe.ts'])(
  'n8n node code (%s)',
  (file) => {
    test('may import the pure core and n8n-workflow', async () => {
      expect(await restrictedImports(file, '@docex/shared')).toEqual([]);
      expect(await restrictedImports(file, 'n8n-workflow')).toEqual([]);
    });

    test.each(['@docex/shared/node', '@docex/shared/src/node/index.ts'])(
      'may not import %s',
      async (path) => {
        expect((await restrictedImports(file, path)).join()).toMatch(/only the pure core/);
      },
    );

    test.each(['node:fs', 'fs', 'node:timers/promises', 'crypto'])(
      'may not import the built-in %s',
      async (path) => {
        expect((await restrictedImports(file, path)).join()).toMatch(/no Node built-ins/);
      },
    );

    test.each(['../../shared/src/node/index.ts', '../../../shared/src/core/index.ts', '../shared'])(
      'may not reach into shared/ by path (%s)',
      async (path) => {
        expect((await restrictedImports(file, path)).join()).toMatch(/not its files/);
      },
    );
  },
);

describe('the pure core (shared/src/core/)', () => {
  const file = 'shared/src/core/probe.ts';

  test('may import its own modules and zod', async () => {
    expect(await restrictedImports(file, './errors.ts')).toEqual([]);
    expect(await restrictedImports(file, 'zod')).toEqual([]);
  });

  test.each([
    'node:fs',
    'fs/promises',
    'stream',
    'got',
    'p-queue',
    'pino',
    '../node/transport.ts',
    '@docex/shared/node',
  ])('may not import %s', async (path) => {
    expect((await restrictedImports(file, path)).join()).toMatch(/the core is pure/);
  });
});

describe.each(['daemon/src/probe.ts', 'test/daemon/probe.ts', 'scripts/probe.ts', 'emulator/probe.ts'])(
  'code outside shared/ (%s)',
  (file) => {
    test('may import both entry points', async () => {
      expect(await restrictedImports(file, '@docex/shared')).toEqual([]);
      expect(await restrictedImports(file, '@docex/shared/node')).toEqual([]);
    });

    test.each(['../../shared/src/node/index.ts', '../shared/src/core/errors.ts'])(
      'may not reach into shared/ by path (%s)',
      async (path) => {
        expect((await restrictedImports(file, path)).join()).toMatch(/not its files/);
      },
    );
  },
);

describe('SQL stays in the daemon store (daemon/src/store/)', () => {
  async function sqlFindings(filePath: string, code: string): Promise<string[]> {
    const [result] = await eslint.lintText(code, { filePath });
    return result!.messages
      .filter((m) => m.ruleId === 'no-restricted-syntax' || m.ruleId === 'no-restricted-imports')
      .map((m) => m.message);
  }
  const statement = `export const rows = (db: { db: { prepare(s: string): { all(): unknown[] } } }) =>\n  db.db.prepare('SELECT * FROM files').all();\n`;
  const transaction = `export const run = (db: { transaction(f: () => void): () => void }) => db.transaction(() => {})();\n`;
  const regexp = `export const m = /a/.exec('a');\n`;

  test.each(['daemon/src/status/probe.ts', 'daemon/src/outputs/probe.ts', 'daemon/src/pipeline/probe.ts'])(
    '%s may not prepare statements, run transactions or import better-sqlite3',
    async (file) => {
      expect((await sqlFindings(file, statement)).join()).toMatch(/SQL belongs in daemon\/src\/store/);
      expect((await sqlFindings(file, transaction)).join()).toMatch(/SQL belongs in daemon\/src\/store/);
      expect(
        (await sqlFindings(file, `import Database from 'better-sqlite3';\nexport { Database };\n`)).join(),
      ).toMatch(/SQL belongs in daemon\/src\/store/);
      expect(await sqlFindings(file, regexp)).toEqual([]);
    },
  );

  test('the store may', async () => {
    expect(await sqlFindings('daemon/src/store/probe.ts', statement)).toEqual([]);
    expect(
      await sqlFindings(
        'daemon/src/store/probe.ts',
        `import Database from 'better-sqlite3';\nexport { Database };\n`,
      ),
    ).toEqual([]);
  });
});
