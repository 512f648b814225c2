/**
 * What `docex` and `docex-sync` load to answer --version and --help (docs/cli.md, "Start-up"): the
 * entries answer those with Node's built-ins and the package's version only; the client (got,
 * p-queue), zod, pino and SQLite are loaded by the commands that use them, got only once a request
 * is sent. Every module resolved is
 * recorded by a resolve hook (module.registerHooks sees import and require alike), for the sources
 * and for the shipped bundles (scripts/build.ts). No timing is asserted: what is loaded is the
 * deterministic part of a fast start, and bench/cli.bench.ts measures the time.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  cpSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELP_WORDS, VERSION_WORDS } from '../../cli-kit/src/flags.ts';
import { COMMANDS } from '../../cli/src/table.ts';
import { startEmulator } from '../../emulator/index.ts';
import { deferListFormat } from '../../scripts/defer-intl.ts';
import { eagerModuleWrappers } from '../../scripts/eager-modules.ts';

const runAsync = promisify(execFile);

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

/**
 * The compile cache for the commands these tests start: the system project's shared one when the
 * run has it (vitest.config.ts; it changes what a start costs, not which modules it resolves), else
 * none, so that a bin started here never writes into the user's own cache. The test of the cache
 * itself sets its own folder.
 */
const compileCacheEnv: NodeJS.ProcessEnv = process.env.NODE_COMPILE_CACHE
  ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE }
  : { NODE_DISABLE_COMPILE_CACHE: '1' };

let run = 0;
/** The modules a command resolves, its stdout and its exit code. */
function loaded(script: string, args: string[]) {
  const log = join(dir, `modules-${run++}.txt`);
  writeFileSync(log, '');
  // A usage mistake exits 2: the modules it loaded are what counts.
  const { stdout, status } = spawnSync(process.execPath, ['--import', hook, script, ...args], {
    cwd: repo,
    env: { ...process.env, RECORD_MODULES: log, ...compileCacheEnv },
    encoding: 'utf8',
  });
  const modules = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  return { stdout, status, modules };
}

/**
 * scripts/build.ts for the tests that read the shipped bundles: each target built once per run of
 * this file (a build is about 5 s of CPU), whichever of those tests runs first; the sources do not
 * change in between.
 */
const builtTargets = new Set<string>();
function buildOnce(...targets: Array<'docex' | 'daemon'>) {
  const missing = targets.filter((target) => !builtTargets.has(target));
  if (missing.length === 0) return;
  execFileSync(process.execPath, ['scripts/build.ts', ...missing], { cwd: repo, stdio: 'ignore' });
  for (const target of missing) builtTargets.add(target);
}

const heavy = (modules: string[]) =>
  modules.filter(
    (m) =>
      /node_modules|\/shared\/src\/|\/store\/|\/engine\/|\/status\/|\/outputs\//.test(m) ||
      /^node:(zlib|http|https|http2|net|tls|dns|crypto|sqlite|worker_threads)$/.test(m),
  );

const SOURCES = {
  'docex-sync': 'daemon/src/commands/docex-sync.ts',
  docex: 'cli/src/docex.ts',
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
    // Each --help below is also the proof that the command, run as a process of its own, answers
    // --help with its usage and exit code 0 (process.test.ts spawned the CLI once more per command
    // for that; command-line.test.ts checks the whole help text in-process).
    for (const command of [
      'run',
      'status',
      'rerun',
      'pull',
      'retry',
      'approve',
      'reject',
      'review list',
      'review log',
      'prune',
      'check',
    ]) {
      const help = loaded(SOURCES['docex-sync'], [...command.split(' '), '--help']);
      expect(heavy(help.modules), command).toEqual([]);
      expect(help.status, command).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: docex-sync ${command} --config FILE`));
    }
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
        modules.filter((m) => /\/cli\/src\/(context|profile|output|operation-run|failure)\.ts$/.test(m)),
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

/** docex-sync's bundle run as the bin runs it, but without the bin's early answers. */
const syncBundle = join(dir, 'docex-sync-bundle.mjs');
writeFileSync(
  syncBundle,
  `(await import(${JSON.stringify(pathToFileURL(join(repo, 'daemon/dist/cli.js')).href)})).run(process.argv.slice(2));\n`,
);
const BUNDLES = { docex: 'cli/dist/docex.js', 'docex-sync': syncBundle };

/**
 * What a bundle itself prints (stdout) and its exit code, without the bin's early answers: asked of
 * the bundle once per command and arguments (its answer does not change within a run).
 */
const bundleAnswers = new Map<string, { stdout: string; status: number | null }>();
const fromBundle = (command: 'docex' | 'docex-sync', args: string[]) => {
  const key = JSON.stringify([command, ...args]);
  let answer = bundleAnswers.get(key);
  if (!answer) {
    const { stdout, status } = spawnSync(process.execPath, [BUNDLES[command], ...args], {
      cwd: repo,
      env: { ...process.env, ...compileCacheEnv },
      encoding: 'utf8',
    });
    answer = { stdout, status };
    bundleAnswers.set(key, answer);
  }
  return answer;
};

/** A preload that leaves stdout non-blocking and full, and says on stderr when a write to it meets EAGAIN. */
const fillStdout = join(dir, 'fill-stdout.mjs');
writeFileSync(
  fillStdout,
  `import fs from 'node:fs';
process.stdout; // opens fd 1 as a libuv pipe: non-blocking from now on
const block = Buffer.alloc(4096, '.');
let filled = 0;
for (;;) {
  try { filled += fs.writeSync(1, block); } catch (e) { if (e.code === 'EAGAIN') break; throw e; }
}
fs.writeSync(2, 'filled ' + filled + '\\n');
const writeSync = fs.writeSync;
fs.writeSync = function (fd) {
  try { return writeSync.apply(this, arguments); }
  catch (e) { if (fd === 1 && e.code === 'EAGAIN') writeSync(2, 'EAGAIN\\n'); throw e; }
};
`,
);

describe('the shipped bundles', () => {
  beforeAll(() => buildOnce('docex', 'daemon'), 120_000);

  it("the bins' early --version answer writes everything, in pieces if need be, and gives up only on a gone reader", async () => {
    const { writeOut } = (await import(pathToFileURL(join(repo, 'cli/bin/answers.js')).href)) as {
      writeOut(
        fs: { writeSync: (...a: unknown[]) => number },
        bytes: Buffer,
        later: (rest: Buffer) => void,
      ): void;
    };
    const failWith = (code: string) => Object.assign(new Error(code), { code });
    const script = (steps: Array<number | string>) => {
      const written: string[] = [];
      let later: string | undefined;
      const fs = {
        writeSync: (_fd: unknown, bytes: unknown, offset: unknown, length: unknown) => {
          const step = steps.shift();
          if (typeof step === 'string') throw failWith(step);
          const n = Math.min(step ?? Infinity, length as number);
          written.push((bytes as Buffer).subarray(offset as number, (offset as number) + n).toString());
          return n;
        },
      };
      writeOut(fs, Buffer.from('docex 1.2.3\n'), (rest) => (later = rest.toString()));
      return { written: written.join(''), later };
    };
    expect(script([])).toEqual({ written: 'docex 1.2.3\n', later: undefined });
    expect(script([3, 'EINTR', 2])).toEqual({ written: 'docex 1.2.3\n', later: undefined });
    expect(script([3, 'EAGAIN'])).toEqual({ written: 'doc', later: 'ex 1.2.3\n' });
    expect(script(['EPIPE'])).toEqual({ written: '', later: undefined });
    expect(script(['EBADF'])).toEqual({ written: '', later: undefined });
    expect(() => script(['EIO'])).toThrow('EIO');
  });

  it('make a missing cache folder (XDG_CACHE_HOME) and keep the compile cache in it', () => {
    const cache = join(dir, 'fresh-cache');
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_CACHE_HOME: cache };
    delete env.NODE_COMPILE_CACHE;
    delete env.NODE_DISABLE_COMPILE_CACHE;
    // A command's --help: the bins answer --version and the main help before the compile cache is on.
    execFileSync(process.execPath, ['daemon/bin/docex-sync.js', 'status', '--help'], { cwd: repo, env });
    expect(readdirSync(join(cache, 'docex-sync', 'compile-cache')).length).toBeGreaterThan(0);
    // Only the last folder is made: a cache folder whose parent is missing means no cache.
    const deeper = join(dir, 'missing', 'cache');
    const output = execFileSync(process.execPath, ['cli/bin/docex.js', 'account', 'check', '--help'], {
      cwd: repo,
      env: { ...env, XDG_CACHE_HOME: deeper },
      encoding: 'utf8',
    });
    expect(output).toMatch(/\nUsage: docex account check/);
    expect(existsSync(deeper)).toBe(false);
  });

  for (const [command, bin] of [
    ['docex-sync', 'daemon/bin/docex-sync.js'],
    ['docex', 'cli/bin/docex.js'],
  ] as const) {
    it(`${command} --version, -v, -V, version, --help, -h, help and no command read no bundle and answer as the bundle, byte for byte`, () => {
      for (const args of [...[...VERSION_WORDS, ...HELP_WORDS].map((w) => [w]), []]) {
        const what = args[0] ?? '(nothing)';
        // One process for all three: its stdout and exit code against the bundle's, its modules.
        const { stdout, status, modules } = loaded(bin, args);
        expect({ stdout, status }, what).toEqual(fromBundle(command, args));
        expect(stdout, what).toMatch(
          VERSION_WORDS.includes(what) ? new RegExp(`^${command} \\d+\\.\\d+\\.\\d+\\n$`) : /\nUsage: /,
        );
        expect(status, what).toBe(args.length ? 0 : 2);
        expect(
          modules.filter((m) => m.startsWith('file:')).map((m) => m.replace(/^.*\/(daemon|cli)\//, '')),
          what,
        ).toEqual([
          `bin/${bin.split('/').at(-1)}`,
          'bin/require-node.js',
          'bin/compile-cache.js',
          'bin/answers.js',
          'dist/answers.js',
        ]);
        // Not even stdout's stream (process.stdout loads stream and net).
        expect(
          modules.filter((m) => /^node:(net|stream|tty)$/.test(m)),
          what,
        ).toEqual([]);
      }
    }, 120_000);

    it(`${command} --version to a file, a closed pipe and a full non-blocking pipe: all of it or nothing, exit 0`, async () => {
      const file = join(dir, `${command}-version.txt`);
      execFileSync(`${process.execPath} ${bin} --version > ${file}`, { cwd: repo, shell: '/bin/sh' });
      expect(readFileSync(file, 'utf8')).toBe(fromBundle(command, ['--version']).stdout);

      // The reader is gone before the line is written (EPIPE): nothing to say, exit 0, as the bundle.
      const closed = spawn(process.execPath, [bin, '--version'], {
        cwd: repo,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      closed.stdout.destroy();
      let closedErr = '';
      closed.stderr.on('data', (d) => (closedErr += d));
      expect(await new Promise((done) => closed.on('close', done))).toBe(0);
      expect(closedErr).toBe('');

      // A pipe left non-blocking (process.stdout makes it so) and full: fs.writeSync fails with
      // EAGAIN. The preload fills the pipe (a FIFO, read here only when asked) and says on stderr
      // when the bin's write met EAGAIN; only then is it read, and the line must come after the filler.
      const fifo = join(dir, `${command}-fifo`);
      execFileSync('mkfifo', [fifo]);
      const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      const full = spawn(process.execPath, ['--import', fillStdout, bin, '--version'], {
        cwd: repo,
        stdio: ['ignore', writer, 'pipe'],
      });
      closeSync(writer);
      const out: Buffer[] = [];
      const drain = () => {
        const buffer = Buffer.alloc(65536);
        for (;;) {
          try {
            const n = readSync(reader, buffer);
            if (n === 0) return;
            out.push(Buffer.from(buffer.subarray(0, n)));
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return;
            throw error;
          }
        }
      };
      let err = '';
      let draining: NodeJS.Timeout | undefined;
      full.stderr!.on('data', (d) => {
        err += d;
        if (!draining && err.includes('EAGAIN')) draining = setInterval(drain, 10);
      });
      // Without an EAGAIN the pipe is read after a while anyway, so that the test fails, not hangs.
      const anyway = setTimeout(() => (draining ??= setInterval(drain, 10)), 5000);
      const code = await new Promise((done) => full.on('close', done));
      clearTimeout(anyway);
      clearInterval(draining);
      drain();
      closeSync(reader);
      expect(err).toMatch(/^filled \d+\nEAGAIN\n$/);
      expect(code, err).toBe(0);
      const text = Buffer.concat(out).toString();
      expect(text.replace(/^\.+/, '')).toBe(fromBundle(command, ['--version']).stdout);
      expect(text.length - fromBundle(command, ['--version']).stdout.length).toBe(
        Number(/filled (\d+)/.exec(err)![1]),
      );
    });

    it(`${command}'s bundle, run without the bin, answers --help requiring no package and no network built-in`, () => {
      const { stdout, modules } = loaded(BUNDLES[command], ['--help']);
      expect(stdout).toMatch(/\nUsage: /);
      expect(heavy(modules)).toEqual([]);
      // Only the entry and the chunks it imports statically.
      const rest = modules.filter((m) => m.startsWith('file:') && /\/(daemon|cli)\/dist\//.test(m));
      expect(rest[0]).toMatch(/\/(daemon\/dist\/cli|cli\/dist\/docex)\.js$/);
      expect(rest.slice(1).filter((m) => !/\/daemon\/dist\/chunks\/chunk-[\w-]+\.js$/.test(m))).toEqual([]);
    });
  }
});

describe('the client loads got on its first request, not before', () => {
  // A client made and not used (a command that fails before it sends, a file refused before the
  // upload) costs no got; the first request loads it.
  const script = join(dir, 'client-got.ts');
  writeFileSync(
    script,
    `const { createNodeClient } = await import(${JSON.stringify(pathToFileURL(join(repo, 'shared/src/node/index.ts')).href)});
const client = createNodeClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'sk-startup', proxy: false, retry: { maxRetries: 0 } });
if (process.argv[2] === 'send') await client.call('fetch_all_folders', {}).catch(() => {});
`,
  );
  const gotModules = (modules: string[]) => modules.filter((m) => m.includes('/node_modules/got/'));

  it('a client made and not used loads no got', () => {
    expect(gotModules(loaded(script, []).modules)).toEqual([]);
  });

  it('a request sent loads got', () => {
    expect(gotModules(loaded(script, ['send']).modules)).not.toEqual([]);
  });
});

describe("got's type checks without ICU's list data at start (scripts/defer-intl.ts)", () => {
  const is = join(repo, 'node_modules/@sindresorhus/is/distribution');

  it('format their messages as before, the Intl.ListFormat made on first use', async () => {
    const copy = join(dir, 'is-deferred');
    cpSync(is, copy, { recursive: true });
    writeFileSync(join(copy, 'index.js'), deferListFormat(readFileSync(join(is, 'index.js'), 'utf8')));
    type Is = {
      assertAny(p: unknown, ...v: unknown[]): void;
      assertAll(p: unknown, ...v: unknown[]): void;
      isString: unknown;
      isNumber: unknown;
    };
    const original = (await import(pathToFileURL(join(is, 'index.js')).href)) as Is;
    const deferred = (await import(pathToFileURL(join(copy, 'index.js')).href)) as Is;
    const message = (m: Is, call: (m: Is) => void) => {
      try {
        call(m);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    for (const call of [
      (m: Is) => m.assertAny([m.isString, m.isNumber], true, null, 1n),
      (m: Is) => m.assertAll(m.isString, 'a', 2, {}),
    ]) {
      expect(message(deferred, call)).toBe(message(original, call));
      expect(message(deferred, call)).toMatch(
        /^Expected values which are .* or |Received values of types .*, .*, and /,
      );
    }
  });

  it('a new version of the package with other Intl.ListFormat uses fails the build, not silently', () => {
    expect(() => deferListFormat('const x = new Intl.ListFormat("en");')).toThrow(/expected 2 .* found 1/);
  });
});

// The first Intl.ListFormat of a process loads ICU's list data (~20 ms, a sixth of the command's
// start). got's type checks make two at import (deferred by scripts/defer-intl.ts in the bundles),
// and nothing else may bring one back unnoticed.
describe('no ICU list data at start', () => {
  it('the shipped docex runs folders list --json without making one', async () => {
    buildOnce('docex');
    const spy = join(dir, 'list-format-spy.mjs');
    writeFileSync(
      spy,
      `import fs from 'node:fs';
const ListFormat = Intl.ListFormat;
Intl.ListFormat = function (...args) { fs.writeSync(2, 'Intl.ListFormat made\\n'); return new ListFormat(...args); };
`,
    );
    const emulator = await startEmulator({ port: 0, companies: [{ name: 'Acme', apiKey: 'sk-startup-1' }] });
    try {
      const { stdout, stderr } = await runAsync(
        process.execPath,
        ['--import', spy, 'cli/bin/docex.js', 'folders', 'list', '--json'],
        {
          cwd: repo,
          env: {
            ...process.env,
            DOCEX_BASE_URL: emulator.url,
            DOCEX_API_KEY: 'sk-startup-1',
            XDG_CONFIG_HOME: dir,
            ...compileCacheEnv,
          },
        },
      );
      expect(JSON.parse(stdout)).toEqual({ folders: [] });
      expect(stderr).toBe('');
    } finally {
      await emulator.stop();
    }
  }, 120_000);
});

describe("docex's module wrappers compiled with the file, for the compile cache (scripts/eager-modules.ts)", () => {
  it('become parenthesised function expressions, braces in strings and async ones left alone', () => {
    const code = [
      'var init_a = __esm({ "a.js"() { x = "}" + /{/.source; } });',
      'var require_b = __commonJS({ "b.js"(exports, module) { module.exports = { "c"() {} }; } });',
      'var init_c = __esm({ async "c.js"() { await 0; } });',
      'var other = helper({ "d.js"() {} });',
    ].join('\n');
    const { code: out, wrapped } = eagerModuleWrappers(code);
    expect(wrapped).toBe(2);
    expect(out).toBe(
      [
        'var init_a = __esm({ "a.js":(function() { x = "}" + /{/.source; }) });',
        'var require_b = __commonJS({ "b.js":(function(exports, module) { module.exports = { "c"() {} }; }) });',
        'var init_c = __esm({ async "c.js"() { await 0; } });',
        'var other = helper({ "d.js"() {} });',
      ].join('\n'),
    );
    // The same behaviour: the wrapper still runs once, when first called.
    const run = (source: string) => {
      const log: string[] = [];
      const __esm = (fn: Record<string, () => void>) => () => fn[Object.keys(fn)[0]!]!();
      new Function('__esm', 'log', `${source}; log.push('defined'); init(); init();`)(__esm, log);
      return log;
    };
    const source = 'var init = __esm({ "m.js"() { log.push("ran"); } })';
    expect(run(eagerModuleWrappers(source).code)).toEqual(run(source));
  });

  it('in the shipped docex.js, every module wrapper', () => {
    buildOnce('docex');
    const bundle = readFileSync(join(repo, 'cli/dist/docex.js'), 'utf8');
    expect(bundle.match(/__(esm|commonJS)\(\{"[^"]+"\(/g) ?? []).toEqual([]);
    expect((bundle.match(/__(esm|commonJS)\(\{"[^"]+":\(function\(/g) ?? []).length).toBeGreaterThan(100);
  }, 120_000);
});

describe('docex folders list from the sources, against the emulator', () => {
  it("reads the api section's schema only, not docex-sync's whole config (watch folders, mail, ...)", async () => {
    const emulator = await startEmulator({ port: 0, companies: [{ name: 'Acme', apiKey: 'sk-startup-2' }] });
    const log = join(dir, 'modules-folders-list.txt');
    writeFileSync(log, '');
    try {
      const { stdout } = await runAsync(
        process.execPath,
        ['--import', hook, SOURCES.docex, 'folders', 'list', '--json'],
        {
          cwd: repo,
          env: {
            ...process.env,
            RECORD_MODULES: log,
            DOCEX_BASE_URL: emulator.url,
            DOCEX_API_KEY: 'sk-startup-2',
            XDG_CONFIG_HOME: dir,
            ...compileCacheEnv,
          },
        },
      );
      expect(JSON.parse(stdout)).toEqual({ folders: [] });
    } finally {
      await emulator.stop();
    }
    const modules = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    expect(modules.some((m) => m.endsWith('/cli-kit/src/api-config.ts'))).toBe(true);
    expect(modules.filter((m) => /\/daemon\/src\/(common|mail)\/config\.ts$/.test(m))).toEqual([]);
  });
});
