/**
 * The quick loop stays quick: a test file that starts a real server or a program as a process
 * belongs to the `system` project (SYSTEM in vitest.config.ts, with why), not to `unit`, which
 * `npm run test:quick` runs. Each file of SYSTEM exists and does start one, so the list neither
 * names a file that moved nor keeps one that no longer needs it.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SYSTEM_FILES } from '../../vitest.config.ts';

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
/** The unit project's files but this one, which spells the markers out. */
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
