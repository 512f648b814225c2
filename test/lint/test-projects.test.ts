/**
 * The quick loop stays quick: a test file that starts a real server or a program as a process
 * belongs to the `system` project (SYSTEM in vitest.config.ts, with why), not to `unit`, which
 * `npm run test:quick` runs. Each file of SYSTEM exists and does start one, so the list neither
 * names a file that moved nor keeps one that no longer needs it.
 *
 * And the `unit` project's processes run file after file (not isolated): a file that patches
 * process-wide state belongs to `unit-isolated` (ISOLATED in vitest.config.ts), and each file of
 * ISOLATED does patch.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ISOLATED_FILES, SYSTEM_FILES } from '../../vitest.config.ts';

const repo = join(import.meta.dirname, '../..');

/**
 * What starts a server or a process in a test file (a `git` or `mkfifo` call is a tool, not a
 * process under test; `.exec(` is a RegExp's or a DB's).
 */
const STARTS = [
  /\b(runCli|calibrate|startDovecot|startTinyproxy|makePki|startTokenIntrospection|startHostileService|n8nNodeLint)\(/,
  /\.docex\(/,
  /(?<![.\w])(spawn|spawnSync|fork|exec|execSync|execFile|execFileSync)\((?!\s*'(git|mkfifo)')/,
  /promisify\(execFile\)/,
];
const starts = (source: string) => STARTS.filter((pattern) => pattern.test(source)).map(String);

const testFiles = readdirSync(join(repo, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.test.ts'))
  .map((file) =>
    relative(repo, join(repo, 'test', file))
      .split('\\')
      .join('/'),
  )
  .sort();
const self = relative(repo, import.meta.filename)
  .split('\\')
  .join('/');
/** The unit projects' files (shared and isolated) but this one, which spells the markers out. */
const unitFiles = testFiles.filter(
  (file) => !/^test\/(e2e|contract)\//.test(file) && !SYSTEM_FILES.includes(file) && file !== self,
);

describe('the unit and system projects', () => {
  it('the markers find what a file starts, and only that', () => {
    expect(starts(`const c = runCli(['run']);`)).toHaveLength(1);
    expect(starts(`await world.docex(['folders', 'list'])`)).toHaveLength(1);
    expect(starts(`spawn(process.execPath, [cli])`)).toHaveLength(1);
    expect(starts(`const run = promisify(execFile);`)).toHaveLength(1);
    expect(starts(`execFileSync('git', ['init', '-q'])`)).toEqual([]);
    expect(starts(`execFileSync('mkfifo', [path])`)).toEqual([]);
    expect(starts(`await syncInProcess(['status'])`)).toEqual([]);
    expect(starts(`/^would delete (.+)/.exec(line); db.exec('DELETE FROM files')`)).toEqual([]);
  });

  it.each(unitFiles)('%s (unit) starts no server and no process', (file) => {
    expect(starts(readFileSync(join(repo, file), 'utf8'))).toEqual([]);
  });

  it.each(SYSTEM_FILES)('%s (system) exists and starts a server or a process', (file) => {
    expect(testFiles).toContain(file);
    expect(starts(readFileSync(join(repo, file), 'utf8'))).not.toEqual([]);
  });
});

/**
 * A file whose tests run docex-sync as a process takes its time limits from a measured start
 * (`await calibrate()` in test/daemon/helpers.ts, at the top): vitest's default 20 s is a guess an
 * idle machine makes, and a loaded one ran past it (review-station.test.ts at a load of 20).
 */
const runsCli = (source: string) => /\brunCli\(/.test(source) && !/^export function runCli\(/m.test(source);
/** At the top level of the file (a line of its own that starts at column 0, not a comment). */
const calibrated = (source: string) => /^(?![\s/])[^\n]*\bawait calibrate\(\)/m.test(source);

describe('tests that run docex-sync as a process', () => {
  it('the check tells a calibrated file from one that is not', () => {
    expect(runsCli(`const run = runCli(['run']);`)).toBe(true);
    expect(calibrated(`await calibrate();\nconst run = runCli(['run']);`)).toBe(true);
    expect(calibrated(`const run = runCli(['run']);`)).toBe(false);
    expect(calibrated(`const startMs = await calibrate();`)).toBe(true);
    expect(calibrated(`// await calibrate();`)).toBe(false);
    expect(calibrated(`it('x', async () => {\n  await calibrate();\n});`)).toBe(false);
  });

  it.each(testFiles.filter((file) => file !== self && runsCli(readFileSync(join(repo, file), 'utf8'))))(
    '%s calibrates its time limits first',
    (file) => {
      expect(calibrated(readFileSync(join(repo, file), 'utf8'))).toBe(true);
    },
  );
});

/**
 * What changes state that the next file of the same process would meet: nock (loading it patches
 * http; disableNetConnect stays), a module mocked or a global stubbed for the whole file, the
 * environment, the working directory, the umask, the shared http agent or fetch dispatcher.
 */
const PATCHES = [
  /from 'nock'|helpers-nock\.ts'/,
  /\bvi\.(mock|doMock|stubGlobal|stubEnv)\(/,
  /process\.env(\.\w+|\[[^\]]+\])\s*=(?!=)|delete process\.env|Object\.assign\(process\.env/,
  /process\.(chdir|umask)\(/,
  /\bglobalAgent\b|setGlobalDispatcher\(|setDefaultResultOrder\(/,
];
/** Fake timers are fine in a shared process when every test hands the real ones back. */
const fakeTimersLeft = (source: string) =>
  /\bvi\.useFakeTimers\(/.test(source) && !/afterEach\([^;{]*(\{[^}]*)?\bvi\.useRealTimers\(\)/.test(source);
const patches = (source: string) => [
  ...PATCHES.filter((pattern) => pattern.test(source)).map(String),
  ...(fakeTimersLeft(source) ? ['fake timers not handed back in an afterEach'] : []),
];

/** The file and the test helpers it imports (relative imports under test/, followed through). */
function withHelpers(file: string): string {
  const seen = new Set<string>();
  const visit = (path: string) => {
    if (seen.has(path) || !existsSync(path)) return;
    seen.add(path);
    const source = readFileSync(path, 'utf8');
    for (const [, spec] of source.matchAll(/from '(\.{1,2}\/[^']+\.ts)'/g)) {
      const target = resolve(dirname(path), spec!);
      if (relative(join(repo, 'test'), target).startsWith('..')) continue;
      visit(target);
    }
  };
  visit(join(repo, file));
  return [...seen].map((path) => readFileSync(path, 'utf8')).join('\n');
}

describe('the unit and unit-isolated projects', () => {
  it('the markers find what patches a process, and only that', () => {
    expect(patches(`import nock from 'nock';`)).toHaveLength(1);
    expect(patches(`import { offlineNock } from './helpers-nock.ts';`)).toHaveLength(1);
    expect(patches(`vi.mock('node:fs', async (original) => ({}))`)).toHaveLength(1);
    expect(patches(`vi.stubGlobal('fetch', f)`)).toHaveLength(1);
    expect(patches(`process.env.DOCEX_API_KEY = 'k';`)).toHaveLength(1);
    expect(patches(`process.env['HTTPS_PROXY'] = url;`)).toHaveLength(1);
    expect(patches(`process.chdir(dir)`)).toHaveLength(1);
    expect(patches(`beforeEach(() => vi.useFakeTimers());`)).toHaveLength(1);
    expect(patches(`beforeEach(() => vi.useFakeTimers());\nafterEach(() => vi.useRealTimers());`)).toEqual(
      [],
    );
    expect(
      patches(
        `afterEach(async () => {\n  vi.useRealTimers();\n  await x();\n});\nit('', () => vi.useFakeTimers())`,
      ),
    ).toEqual([]);
    expect(
      patches(`afterEach(() => stop());\nit('', () => {\n  vi.useFakeTimers();\n  vi.useRealTimers();\n});`),
    ).toHaveLength(1);
    expect(patches(`if (process.env.DOCEX_X === '1') run({ env: { ...process.env } });`)).toEqual([]);
    expect(patches(`const spy = vi.spyOn(db.files, 'known');`)).toEqual([]);
  });

  it.each(unitFiles.filter((file) => !ISOLATED_FILES.includes(file)))(
    '%s (unit, processes shared) patches nothing process-wide',
    (file) => {
      expect(patches(withHelpers(file))).toEqual([]);
    },
  );

  it.each(ISOLATED_FILES)('%s (unit-isolated) exists and patches its process', (file) => {
    expect(unitFiles).toContain(file);
    expect(patches(withHelpers(file))).not.toEqual([]);
  });
});

/**
 * A file that calibrates gives no test a fixed limit: a number passed to `it` replaces the one
 * calibrate() set, and a busy machine then fails the test on time alone (two of process.test.ts's
 * crash tests at a load of 12 to 23). `testLimit(ms)` (test/daemon/helpers.ts) keeps `ms` as a floor.
 */
const FIXED_LIMIT = /^\s*\}, [\d_]+\);$/m;

describe('files whose limits follow the machine', () => {
  it('the marker finds a fixed limit given to a test, and only that', () => {
    expect(FIXED_LIMIT.test(`  it('x', async () => {\n  }, 90_000);\n`)).toBe(true);
    expect(FIXED_LIMIT.test(`  it('x', async () => {\n  }, testLimit(90_000));\n`)).toBe(false);
    expect(FIXED_LIMIT.test(`  await until('x', () => done, 40_000);\n`)).toBe(false);
  });

  it.each(testFiles.filter((file) => calibrated(readFileSync(join(repo, file), 'utf8'))))(
    '%s gives its tests calibrated limits (testLimit), not fixed ones',
    (file) => {
      expect(readFileSync(join(repo, file), 'utf8').match(FIXED_LIMIT)?.[0]).toBeUndefined();
    },
  );
});
