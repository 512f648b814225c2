/**
 * `docex-sync run` starts Node again with V8's young generation capped at 32 MB (the bin's
 * daemon-heap.js): in the same process (execve keeps the PID), with the same script and arguments,
 * and never against the user's own --max-semi-space-size. The installed command is checked in
 * test/e2e/daemon-package.test.ts; here the decision, and the exec itself in a plain script.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonExecArgs, heapModuleUrl, SEMI_SPACE_FLAG } from '../../support/daemon-heap.ts';

describe('the arguments run is started again with', () => {
  it('adds the flag before the script, keeping Node’s own arguments and the command’s', () => {
    expect(
      daemonExecArgs(
        '/n/node',
        ['--enable-source-maps'],
        ['/b/docex-sync', 'run', '--config', 'c.yaml'],
        '',
        true,
      ),
    ).toEqual([
      '/n/node',
      '--enable-source-maps',
      '--max-semi-space-size=16',
      '/b/docex-sync',
      'run',
      '--config',
      'c.yaml',
    ]);
    expect(SEMI_SPACE_FLAG).toBe('--max-semi-space-size=16');
  });

  it('leaves a size the user gave alone, in Node’s arguments or NODE_OPTIONS, in either spelling', () => {
    const script = ['/b/docex-sync', 'run'];
    expect(daemonExecArgs('/n/node', ['--max-semi-space-size=64'], script, undefined, true)).toBeUndefined();
    expect(
      daemonExecArgs('/n/node', [], script, '--max-old-space-size=512 --max-semi-space-size=8', true),
    ).toBeUndefined();
    expect(daemonExecArgs('/n/node', [], script, '--max_semi_space_size=8', true)).toBeUndefined();
    // Another flag that only starts alike is not the user's size.
    expect(daemonExecArgs('/n/node', [], script, '--max-semi-space-sizes', true)).toBeDefined();
  });

  it('runs on without it where Node cannot exec itself', () => {
    expect(daemonExecArgs('/n/node', [], ['/b/docex-sync', 'run'], undefined, false)).toBeUndefined();
  });
});

/** Runs a script that execs itself with the flag and then prints what the new image sees. */
async function execedScript(env: NodeJS.ProcessEnv) {
  const dir = await mkdtemp(join(tmpdir(), 'docex-heap-'));
  try {
    const script = join(dir, 'daemon.mjs');
    await writeFile(
      script,
      `import { execWithDaemonHeap } from ${JSON.stringify(heapModuleUrl)};
execWithDaemonHeap();
console.log(JSON.stringify({ pid: process.pid, execArgv: process.execArgv, argv: process.argv.slice(1) }));
`,
    );
    const child = spawn(process.execPath, [script, 'run', '--config', 'x.yaml'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const status = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(status, stderr).toBe(0);
    return {
      pid: child.pid,
      stderr,
      seen: JSON.parse(stdout) as { pid: number; execArgv: string[]; argv: string[] },
      script,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe.skipIf(typeof process.execve !== 'function')('the exec', () => {
  const plainEnv = () => {
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    return env;
  };

  it('replaces the process with one that has the flag: same PID, same script and arguments, no warning', async () => {
    const { pid, stderr, seen, script } = await execedScript(plainEnv());
    expect(seen.pid).toBe(pid);
    expect(seen.execArgv).toEqual([SEMI_SPACE_FLAG]);
    expect(seen.argv).toEqual([script, 'run', '--config', 'x.yaml']);
    expect(stderr).toBe('');
  });

  it('does not exec when NODE_OPTIONS already sets the size', async () => {
    const { seen } = await execedScript({ ...plainEnv(), NODE_OPTIONS: '--max-semi-space-size=8' });
    expect(seen.execArgv).toEqual([]);
  });
});
