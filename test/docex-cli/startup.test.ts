/**
 * What `docex` and `docex-sync` load to answer --version and --help (docs/cli.md, "Start-up"): the
 * entries answer those with Node's built-ins and the package's version only; the client (got,
 * p-queue), zod, pino and SQLite are loaded by the commands that use them. Every module resolved is
 * recorded by a resolve hook (module.registerHooks sees import and require alike), for the sources
 * and for the shipped bundles (scripts/build.ts). No timing is asserted: what is loaded is the
 * deterministic part of a fast start, and bench/cli.bench.ts measures the time.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../../daemon/src/docex-cli/table.ts';

const repo = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'docex-startup-'));
const hook = join(dir, 'record.mjs');
writeFileSync(
  hook,
  `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
const log = process.env.RECORD_MODULES;
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    appendFileSync(log, resolved.url + '\\n');
    return resolved;
  },
});
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let run = 0;
/** The modules a command resolves, and its stdout. */
function loaded(script: string, args: string[]) {
  const log = join(dir, `modules-${run++}.txt`);
  writeFileSync(log, '');
  // A usage mistake exits 2: the modules it loaded are what counts.
  const { stdout } = spawnSync(process.execPath, ['--import', hook, script, ...args], {
    cwd: repo,
    env: { ...process.env, RECORD_MODULES: log, NODE_DISABLE_COMPILE_CACHE: '1' },
    encoding: 'utf8',
  });
  const modules = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return { stdout, modules };
}

const heavy = (modules: string[]) =>
  modules.filter(
    (m) =>
      /node_modules|\/shared\/src\/|\/store\/|\/engine\/|\/status\/|\/outputs\//.test(m) ||
      /^node:(zlib|http|https|http2|net|tls|dns|crypto|sqlite|worker_threads)$/.test(m),
  );

const SOURCES = {
  'docex-sync': 'daemon/src/commands/docex-sync.ts',
  docex: 'daemon/src/docex-cli/docex.ts',
};

describe('from the sources', () => {
  for (const [command, script] of Object.entries(SOURCES)) {
    it(`${command} --version loads nothing but Node's built-ins and its own entry`, () => {
      const { stdout, modules } = loaded(script, ['--version']);
      expect(stdout).toMatch(new RegExp(`^${command} \\d+\\.\\d+\\.\\d+\\n$`));
      expect(heavy(modules)).toEqual([]);
      expect(modules.some((m) => m.endsWith(script))).toBe(true);
    });
  }

  it("docex-sync --help, every command's --help and a usage mistake load nothing heavy either", () => {
    // A command's file is loaded for its --help: its work must be imported inside run (common/command.ts).
    expect(heavy(loaded(SOURCES['docex-sync'], ['--help']).modules)).toEqual([]);
    for (const command of ['run', 'status', 'rerun', 'pull', 'retry', 'approve', 'prune', 'check'])
      expect(heavy(loaded(SOURCES['docex-sync'], [command, '--help']).modules), command).toEqual([]);
    expect(heavy(loaded(SOURCES['docex-sync'], ['status', '--confg', 'x']).modules)).toEqual([]);
  }, 120_000);

  it("docex's own commands (table.ts) answer --help with nothing heavy loaded", () => {
    for (const command of COMMANDS)
      expect(
        heavy(loaded(SOURCES.docex, [...command.name.split(' '), '--help']).modules),
        command.name,
      ).toEqual([]);
  }, 120_000);

  it("the operation table's commands answer --help with the table only: no client transport, profile or network", () => {
    // Their rows are made from the operation table (zod and shared's pure core): that much is loaded.
    const table = /\/node_modules\/zod\/|\/shared\/src\/core\//;
    for (const words of [
      ['folders', 'list'],
      ['documents', 'download'],
      ['upload'],
      ['fetch_folder'],
      ['folders'],
    ]) {
      const { stdout, modules } = loaded(SOURCES.docex, [...words, '--help']);
      expect(stdout, words.join(' ')).toMatch(/Usage: docex /);
      expect(
        heavy(modules).filter((m) => !table.test(m)),
        words.join(' '),
      ).toEqual([]);
      expect(
        modules.filter((m) => /\/docex-cli\/(context|profile|output|operation-run|failure)\.ts$/.test(m)),
        words.join(' '),
      ).toEqual([]);
    }
  }, 120_000);

  it('a command that does its work loads it: docex-sync status loads the store', () => {
    const config = join(dir, 'sync.yaml');
    writeFileSync(
      config,
      `watch:\n  - path: ${dir}\n    template_id: 1\n    output: ${join(dir, 'out')}\n    processed_dir: ${join(dir, 'done')}\n    failed_dir: ${join(dir, 'failed')}\nstate_db: ${join(dir, 'state.db')}\n`,
    );
    const { modules } = loaded(SOURCES['docex-sync'], ['status', '--config', config]);
    expect(modules.some((m) => m.includes('/store/state.ts'))).toBe(true);
  });
});

describe('the shipped bundles', () => {
  beforeAll(() => {
    execFileSync(process.execPath, ['scripts/build.ts', 'daemon'], { cwd: repo, stdio: 'ignore' });
  }, 120_000);

  it('make a missing cache folder (XDG_CACHE_HOME) and keep the compile cache in it', () => {
    const cache = join(dir, 'fresh-cache');
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: cache };
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    execFileSync(process.execPath, ['daemon/bin/docex-sync.js', '--version'], { cwd: repo, env });
    expect(readdirSync(join(cache, 'docex-sync', 'compile-cache')).length).toBeGreaterThan(0);
    // Only the last folder is made: a cache folder whose parent is missing means no cache.
    const deeper = join(dir, 'missing', 'cache');
    const output = execFileSync(process.execPath, ['daemon/bin/docex.js', '--version'], {
      cwd: repo,
      env: { ...env, XDG_CACHE_HOME: deeper },
      encoding: 'utf8',
    });
    expect(output).toMatch(/^docex \d/);
    expect(existsSync(deeper)).toBe(false);
  });

  for (const [command, bin] of [
    ['docex-sync', 'daemon/bin/docex-sync.js'],
    ['docex', 'daemon/bin/docex.js'],
  ] as const) {
    for (const flag of ['--version', '--help']) {
      it(`${command} ${flag} requires no package and no network built-in`, () => {
        const { stdout, modules } = loaded(bin, [flag]);
        expect(stdout.length).toBeGreaterThan(10);
        expect(heavy(modules)).toEqual([]);
        // Besides the bin's own files, only the entry and the chunks it imports statically.
        expect(
          modules.filter((m) => m.startsWith('file:')).map((m) => m.replace(/^.*\/daemon\//, '')),
        ).toEqual(
          expect.arrayContaining([
            `bin/${bin.split('/').at(-1)}`,
            'bin/require-node.js',
            'bin/compile-cache.js',
          ]),
        );
        const rest = modules.filter((m) => m.startsWith('file:') && !m.includes('/daemon/bin/'));
        expect(rest[0]).toMatch(/\/daemon\/dist\/(cli|docex)\.js$/);
        expect(rest.slice(1).filter((m) => !/\/daemon\/dist\/chunks\/chunk-[\w-]+\.js$/.test(m))).toEqual([]);
      });
    }
  }
});
