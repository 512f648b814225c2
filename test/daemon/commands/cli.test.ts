/**
 * docex-sync's command line as an operator meets it, against the emulator: the one-off commands in
 * this process (main() with injected I/O), `run` as a real process (signals, a daemon to stop).
 * Results on stdout, logs and errors on stderr; every mistake names its file and key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../daemon/src/config/config.ts';
import { colorAllowed } from '../../../daemon/src/common/logging.ts';
import { closest } from '../../../cli-kit/src/suggest.ts';
import { createNodeClient } from '@docex/shared/node';
import { calibrate, invoice, makeWorld, SECRET, syncInProcess, until, type World, testLimit } from '../helpers.ts';

// Time limits follow how long the CLI takes to start on this machine now (helpers.ts); measured
// before the tests are collected, since a test takes its time limit then.
await calibrate();
const cli = join(import.meta.dirname, '../../../daemon/src/commands/docex-sync.ts');
let world: World | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await world?.cleanup();
  world = undefined;
});

function runCli(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { ...process.env, DOCEX_API_KEY: SECRET, NO_COLOR: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

/** A one-off command, run in this process. */
const finished = (args: string[], env: Record<string, string> = {}) => syncInProcess(args, { env });

describe('conventions', () => {
  it('--version, and "did you mean" for a mistyped command or option', async () => {
    const version = await finished(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^docex-sync \d+\.\d+\.\d+\n$/);
    const typo = await finished(['stauts']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown command "stauts" (did you mean "status"?)');
    const option = await finished(['status', '--confg', 'x.yaml']);
    expect(option.code).toBe(2);
    expect(option.stderr).toContain('(did you mean "--config"?)');
    expect(closest('frobnicate', ['run', 'status'])).toBeUndefined();
  }, testLimit(60_000));

  it('colours only on a terminal and never with NO_COLOR', () => {
    expect(colorAllowed({ isTTY: true }, {})).toBe(true);
    expect(colorAllowed({ isTTY: true }, { NO_COLOR: '1' })).toBe(false);
    expect(colorAllowed({ isTTY: false }, {})).toBe(false);
    expect(colorAllowed({}, {})).toBe(false);
  });

  it('a mistyped config key gets "did you mean"; a bad cron names its key, without node-cron\'s words', async () => {
    world = await makeWorld();
    const text = await readFile(world.configFile, 'utf8');
    await writeFile(
      world.configFile,
      `${text.replace('stable_ms: 200', 'stabel_ms: 200')}reruns:\n  - { name: nightly, schedule: "99 99 * * * *", template_id: 1 }\n`,
    );
    const r = await finished(['check', '--config', world.configFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(world.configFile);
    expect(r.stderr).toMatch(/\.yaml:\d+ watch\[0\]\.stabel_ms: unknown key \(did you mean "stable_ms"\?\)/);
    expect(r.stderr).toContain(
      'reruns[0].schedule: "99 99 * * * *": the second field "99" is out of range: seconds go from 0 to 59',
    );
    expect(r.stderr).not.toMatch(/is a invalid expression/);
  }, testLimit(60_000));

  it("api.rate_margin_ms sets the rate limit's safety margin (default: the client's)", async () => {
    world = await makeWorld();
    const text = await readFile(world.configFile, 'utf8');
    expect(loadConfig(world.configFile).api.rate_margin_ms).toBeUndefined();
    await writeFile(
      world.configFile,
      text.replace('max_retries: 2 }', 'max_retries: 2, rate_margin_ms: 200 }'),
    );
    expect(loadConfig(world.configFile).api.rate_margin_ms).toBe(200);
    await writeFile(
      world.configFile,
      text.replace('max_retries: 2 }', 'max_retries: 2, rate_margin_ms: -1 }'),
    );
    expect(() => loadConfig(world!.configFile)).toThrow(/api\.rate_margin_ms/);
  }, testLimit(60_000));
});

describe('check proves the config', () => {
  it('names each problem on its own line: a missing template, a watched folder that is not there (and stays not there)', async () => {
    world = await makeWorld();
    const text = await readFile(world.configFile, 'utf8');
    await writeFile(
      world.configFile,
      `${text}  - { path: ./share, folder_id: 987654, output: ./r2, failed_dir: ./f2, on_success: keep }\n`,
    );
    const r = await finished(['check', '--config', world.configFile]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toEqual([
      `docex-sync check: ${world.configFile}: watch[1].path: ${join(world.dir, 'share')} does not exist (not mounted?); docex-sync never creates a watched folder`,
      `docex-sync check: ${world.configFile}: watch[1].folder_id: folder 987654 does not exist for this API key`,
    ]);
    expect(r.stdout).toBe('');
    expect(existsSync(join(world.dir, 'share'))).toBe(false);

    const run = await finished(['run', '--config', world.configFile]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('watch[1].path:');
    expect(existsSync(join(world.dir, 'share'))).toBe(false);
  }, testLimit(60_000));

  it('a folder it writes to must be a folder it can write to, or one it can create', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'results'), 'a file where the output folder should be');
    const text = await readFile(world.configFile, 'utf8');
    await writeFile(world.configFile, text.replace('failed_dir: ./failed', 'failed_dir: ./results/failed'));
    const r = await finished(['check', '--config', world.configFile]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual([
      `docex-sync check: ${world.configFile}: watch[0].output: ${join(world.dir, 'results')} is not a folder`,
      `docex-sync check: ${world.configFile}: watch[0].failed_dir: ${join(world.dir, 'results', 'failed')} cannot be created: ${join(world.dir, 'results')} is not a folder`,
    ]);
  }, testLimit(60_000));

  it('exit 0 with one line on stdout when all is well; 3 when the key is refused', async () => {
    world = await makeWorld();
    const ok = await finished(['check', '--config', world.configFile]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('the API key is accepted');
    expect(ok.stderr).toBe('');
    const refused = await finished(['check', '--config', world.configFile], { DOCEX_API_KEY: 'wrong' });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`${world.configFile}: API key: refused by ${world.emulator.url}`);
    const noKey = await finished(['check', '--config', world.configFile], { DOCEX_API_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain(`${world.configFile}: no API key`);
  }, testLimit(60_000));
});

describe('status and retry', () => {
  it('--json has the same shape with or without a DB; retry by pattern clears what it retried', async () => {
    world = await makeWorld();
    const before = JSON.parse((await finished(['status', '--config', world.configFile, '--json'])).stdout);
    expect(before.state_db.exists).toBe(false);
    expect(existsSync(world.config().state_db)).toBe(false);

    await writeFile(join(world.dir, 'inbox', 'ok.txt'), invoice('S-1'));
    await writeFile(join(world.dir, 'inbox', 'empty-a.txt'), '');
    await writeFile(join(world.dir, 'inbox', 'empty-b.txt'), '');
    const daemon = runCli(['run', '--config', world.configFile]);
    await until(
      'moved to failed and processed',
      async () =>
        (await readdir(join(world!.dir, 'failed')).catch((): string[] => [])).length === 4 &&
        (await readdir(join(world!.dir, 'processed')).catch((): string[] => [])).includes('ok.txt'),
      30_000,
    );
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    expect(daemon.stdout()).toBe('');

    const status = await finished(['status', '--config', world.configFile, '--json']);
    const after = JSON.parse(status.stdout);
    const shape = (v: unknown): unknown =>
      Array.isArray(v)
        ? 'array'
        : v && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)]))
          : v === null
            ? 'null'
            : typeof v;
    const { failed: _f, ...afterRest } = after;
    const { failed: _b, ...beforeRest } = before;
    expect(shape({ ...afterRest, generated_at: '', outcomes: {}, throughput: {} })).toEqual(
      shape({ ...beforeRest, generated_at: '', outcomes: {}, throughput: {} }),
    );
    expect(after.state_db.exists).toBe(true);
    expect(after.files).toMatchObject({ archived: 1, failed: 2 });
    expect(after.failed.files.map((f: { reason: string }) => f.reason)).toEqual([
      expect.stringContaining('the file is empty (0 bytes)'),
      expect.stringContaining('the file is empty (0 bytes)'),
    ]);
    expect(after.failed.files[0].at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(typeof after.failed.files[0].moved).toBe('boolean');

    const text = await finished(['status', '--config', world.configFile]);
    expect(text.stdout).toMatch(
      /^Needs attention:\n {2}2 failed file\(s\): fix the cause, then docex-sync retry --all .*\n {2}failed .*empty-[ab]\.txt: the file is empty \(0 bytes\)/,
    );
    expect(text.code).toBe(1); // needs attention (docs/reference/exit-codes.md)
    expect(status.code).toBe(1);

    const usage = await finished(['retry', '--config', world.configFile]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--all');
    // A name that names no failed file is said and exits 2; the others given are still retried.
    const one = await finished(['retry', '--config', world.configFile, 'nosuch.pdf', 'empty-a.*']);
    expect(one.code).toBe(2);
    expect(one.stderr).toBe(
      'docex-sync retry: nosuch.pdf: no failed file has this name, path or pattern (docex-sync status lists them)\n',
    );
    expect(one.stdout).toContain('1 failed file(s) re-queued.');
    expect(await readdir(join(world.dir, 'inbox'))).toEqual(['empty-a.txt']);
    const again = JSON.parse((await finished(['status', '--config', world.configFile, '--json'])).stdout);
    expect(again.files.failed).toBe(1);
    expect(again.failed.files.map((f: { file: string }) => f.file)).toEqual([
      join(world.dir, 'failed', 'empty-b.txt'),
    ]);
  }, testLimit(120_000));
});

describe('rerun is safe in bulk', () => {
  it('asks for --all-documents without a filter, checks dates before any call, is honest in a dry run, suggests --override', async () => {
    world = await makeWorld();
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    await client.uploadAndWait(
      {
        files: [{ data: new TextEncoder().encode(invoice('R-1')), fileName: 'r.txt' }],
        template_id: world.templateId,
      },
      { intervalMs: 20 },
    );
    const requests = () => world!.emulator.stats().requestsByOperation;
    const fetchesBefore = requests().fetch_documents ?? 0;

    const unfiltered = await finished(['rerun', '--config', world.configFile]);
    expect(unfiltered.code).toBe(2);
    expect(unfiltered.stderr).toContain('add --all to mean it');
    const badDate = await finished(['rerun', '--config', world.configFile, '--from', '2026-13-01']);
    expect(badDate.code).toBe(2);
    expect(badDate.stderr).toContain('--from must be a calendar date YYYY-MM-DD (got "2026-13-01")');
    expect(badDate.stderr).not.toContain('start_date');
    expect(requests().fetch_documents ?? 0).toBe(fetchesBefore);
    expect(requests().rerun_documents).toBeUndefined();

    const args = ['rerun', '--config', world.configFile, '--template-id', String(world.templateId)];
    const dry = await finished([...args, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('Dry run: 1 document(s) match the filters; nothing was sent.');
    expect(dry.stdout).toContain('The service decides which of them it reruns');
    expect(requests().rerun_documents).toBeUndefined();

    // Nothing changed since the extraction: the service reruns none without --override, and says why.
    const all = await finished(['rerun', '--config', world.configFile, '--all-documents']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toContain('Rerun: 0 dispatched, 1 not rerun, of 1 document(s).');
    expect(all.stderr).toContain('add --override to rerun them anyway');
    const forced = await finished([...args, '--override']);
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain('Rerun: 1 dispatched, 0 not rerun, of 1 document(s).');
    expect(forced.stderr).not.toContain('--override');
  }, testLimit(120_000));
});

describe('SIGHUP', () => {
  it('reloads a valid changed config, refuses an invalid one and keeps running; SIGTERM then exits 0', async () => {
    world = await makeWorld();
    const daemon = runCli(['run', '--config', world.configFile]);
    await until('running', () => daemon.stderr().includes('docex-sync running'), 30_000);
    const live = await finished(['status', '--config', world.configFile, '--json']);
    expect(live.code, live.stderr).toBe(0);
    expect(JSON.parse(live.stdout).state_db.exists).toBe(true);
    const good = await readFile(world.configFile, 'utf8');
    await writeFile(world.configFile, `${good}bogus_key: 1\n`);
    daemon.child.kill('SIGHUP');
    await until('refused', () => daemon.stderr().includes('the changed config is refused'), 30_000);
    expect(daemon.stderr()).toContain('bogus_key: unknown key');
    await mkdir(join(world.dir, 'inbox2'));
    await writeFile(
      world.configFile,
      `${good}  - { path: ./inbox2, template_id: ${world.templateId}, output: ./results2, failed_dir: ./failed2, on_success: keep, stable_ms: 100 }\n`,
    );
    daemon.child.kill('SIGHUP');
    await until('reloaded', () => daemon.stderr().includes('config reloaded'), 30_000);
    await writeFile(join(world.dir, 'inbox2', 'new.txt'), invoice('H-1'));
    await until(
      'the new watch works',
      async () => (await readdir(join(world!.dir, 'results2')).catch((): string[] => [])).length > 0,
      30_000,
    );
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
    expect(daemon.stdout()).toBe('');
  }, testLimit(120_000));
});

describe('running it as a service', () => {
  const repo = join(import.meta.dirname, '../../..');
  it('the compose config is valid; the unit restarts on failure and reloads with SIGHUP; the image builds from the release archive with a health check', async () => {
    const config = loadConfig(join(repo, 'examples/docex-sync.compose.yaml'));
    expect(config.http?.port).toBe(9464);
    const compose = await readFile(join(repo, 'examples/compose.yaml'), 'utf8');
    for (const mount of [
      '/data/inbox',
      '/data/results',
      '/data/processed',
      '/data/failed',
      '/var/lib/docex-sync',
    ])
      expect(compose).toContain(`:${mount}`);
    const unit = await readFile(join(repo, 'examples/docex-sync.service'), 'utf8');
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^ExecReload=\/bin\/sh -c 'kill -HUP "\$MAINPID"'$/m);
    const dockerfile = await readFile(join(repo, 'examples/Dockerfile'), 'utf8');
    // Built and run for real in test/e2e/container.test.ts.
    expect(dockerfile).toMatch(/^ARG BASE=/m);
    expect(dockerfile).toMatch(/^COPY release\/docex-sync-\*-linux-\*\.tar\.gz /m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n\s+CMD .*127\.0\.0\.1:9464\/healthz/m);
    // The context holds the Linux archives and nothing else (no sources, state DBs, .env).
    const ignored = (await readFile(join(repo, '.dockerignore'), 'utf8'))
      .split('\n')
      .filter((l) => l && !l.startsWith('#'));
    expect(ignored).toEqual(['*', '!release/docex-sync-*-linux-*.tar.gz']);
  });
});
