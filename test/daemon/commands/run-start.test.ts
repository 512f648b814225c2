/**
 * `run` checks the API key before anything else: refused -> exit 3 with check's message, no watcher,
 * no file looked at, the refusal recorded in the state DB for `status` (until a later run's key
 * check passes); unreachable -> it starts, says so, and checks again until the service answers.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  SECRET,
  stopCliChildren,
  until,
  type World,
} from '../helpers.ts';

// Each test runs the CLI a few times (the refused-key one eight): limits from a measured start.
const startMs = await calibrate();

/** The time a refusal was recorded, as status prints it, made fixed for comparing. */
const untimed = (text: string) => text.replace(/\(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\)/g, '(TIME)');

let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

describe('run checks the API key first', () => {
  it(
    'a refused key: exit 3 with the message check gives, before a watcher or a scan; status says it until a run passes the key check',
    async () => {
      world = await makeWorld();
      await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('A-1'));
      const run = runCli(['run', '--config', world.configFile], { DOCEX_API_KEY: 'refused-key' });
      expect(await run.exited).toBe(3);
      const check = runCli(['check', '--config', world.configFile], { DOCEX_API_KEY: 'refused-key' });
      expect(await check.exited).toBe(3);
      const line = `${world.configFile}: API key: refused by ${world.emulator.url} (`;
      expect(run.output()).toContain(`docex-sync run: ${line}`);
      expect(run.output()).toContain('set DOCEX_API_KEY (or api.api_key_file) to a key this service accepts');
      const message = (cli: string, output: string) =>
        output
          .split('\n')
          .find((l) => l.startsWith(`docex-sync ${cli}: ${line}`))
          ?.replace(`docex-sync ${cli}: `, '');
      expect(message('run', run.output())).toBe(message('check', check.output()));
      console.info(`printed: ${run.output().trim().split('\n').at(-1)}`);
      expect(run.output()).not.toContain('docex-sync running');
      expect(run.output()).not.toContain('start-up scan');
      expect(await readdir(join(world.dir, 'inbox'))).toEqual(['a.txt']);
      expect(world.emulator.stats().requestsByOperation.upload_file ?? 0).toBe(0);

      // The refusal is in the state DB (no file is): `status` after the exit 3 says it, failing.
      const status = runCli(['status', '--config', world.configFile]);
      expect(await status.exited).toBe(6);
      const refusal = `the service refused the API key (TIME) and docex-sync run stopped (exit 3): ${message('run', run.output())!.replace(`${world.configFile}: `, '')}, then start docex-sync run again (its key check clears this)`;
      expect(untimed(status.output())).toMatch(
        `Failing:\n  ${refusal}\nNow: 0 in the queue, 0 waiting for review, 0 held, 0 failed, 0 finished (archived)\nFiles: 0\n`,
      );
      console.info(`status printed:\n${status.output().split('\n').slice(0, 2).join('\n')}`);
      const json = runCli(['status', '--config', world.configFile, '--json']);
      expect(await json.exited).toBe(6);
      expect(JSON.parse(json.stdout())).toMatchObject({
        health: { level: 'failing', ok: false },
        service: { key_refused: true },
      });
      expect(JSON.parse(json.stdout()).health.reasons.map(untimed)).toEqual([refusal]);
      expect(status.output() + json.output()).not.toContain('refused-key');

      // A run whose key check passes clears it; a refused run beside it does not mark the running one's DB.
      const good = runCli(['run', '--config', world.configFile]);
      await until('running', () => good.output().includes('docex-sync running'), 30_000);
      const beside = runCli(['run', '--config', world.configFile], { DOCEX_API_KEY: 'refused-key' });
      expect(await beside.exited).toBe(3);
      await until(
        'a.txt archived',
        async () => (await readdir(join(world!.dir, 'processed'))).includes('a.txt'),
        30_000,
      );
      const cleared = runCli(['status', '--config', world.configFile, '--json']);
      expect(await cleared.exited).toBe(0);
      expect(JSON.parse(cleared.stdout())).toMatchObject({
        health: { level: 'healthy', reasons: [] },
        service: { key_refused: false },
      });
      good.child.kill('SIGTERM');
      expect(await good.exited).toBe(0);
    },
    Math.max(120_000, startMs * 100),
  );

  it(
    'an unreachable service: it starts, says the service cannot be reached, and checks again until it answers',
    async () => {
      world = await makeWorld();
      world.emulator.faults.set({ dropRate: 1, operations: ['check_api_key'] });
      const run = runCli(['run', '--config', world.configFile]);
      await until('running', () => run.output().includes('docex-sync running'), 30_000);
      expect(run.output()).toContain('the service cannot be reached');
      expect(run.output()).toContain('the API key could not be checked');
      world.emulator.faults.clear();
      await until('accepted', () => run.output().includes('the API key is accepted'), 30_000);
      await writeFile(join(world.dir, 'inbox', 'b.txt'), invoice('B-1'));
      await until(
        'archived',
        async () => (await readdir(join(world!.dir, 'processed'))).includes('b.txt'),
        30_000,
      );
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    },
    Math.max(60_000, startMs * 50),
  );

  it(
    'after a SIGHUP that reloads a refused key: the key is checked before the reload, exit 3',
    async () => {
      world = await makeWorld();
      const yaml = await readFile(world.configFile, 'utf8');
      await writeFile(
        world.configFile,
        yaml.replace(/base_url: "([^"]+)"/, 'base_url: "$1", api_key_file: ./key.txt'),
      );
      await writeFile(join(world.dir, 'key.txt'), `${SECRET}\n`);
      const run = runCli(['run', '--config', world.configFile], { DOCEX_API_KEY: '' });
      await until('running', () => run.output().includes('docex-sync running'), 30_000);
      await writeFile(join(world.dir, 'key.txt'), 'refused-key\n');
      run.child.kill('SIGHUP');
      expect(await run.exited).toBe(3);
      expect(run.output()).toContain('SIGHUP: the API key is refused; stopping');
      expect(run.output()).toContain(
        `docex-sync run: ${world.configFile}: API key: refused by ${world.emulator.url} (check_api_key: HTTP 401`,
      );
      expect(run.output()).not.toContain('config reloaded');
      const status = runCli(['status', '--config', world.configFile]);
      expect(await status.exited).toBe(6);
      expect(status.output()).toContain('Failing:\n  the service refused the API key (');
    },
    Math.max(60_000, startMs * 50),
  );

  it(
    'unreachable at start, then the key is refused when the service answers: exit 3',
    async () => {
      world = await makeWorld();
      world.emulator.faults.set({ dropRate: 1, operations: ['check_api_key'] });
      const run = runCli(['run', '--config', world.configFile], { DOCEX_API_KEY: 'refused-key' });
      await until('running', () => run.output().includes('docex-sync running'), 30_000);
      world.emulator.faults.clear();
      expect(await run.exited).toBe(3);
      expect(run.output()).toContain(
        `docex-sync run: ${world.configFile}: API key: refused by ${world.emulator.url} (check_api_key: HTTP 401`,
      );
      expect(run.output()).toContain(
        '"msg":"the service refused the API key: stopping; no file was changed"',
      );
    },
    Math.max(60_000, startMs * 50),
  );
});

describe('last words that say what to do', () => {
  it(
    'a state DB that is not a database: exit 5, its path, how to move it aside and what that costs',
    async () => {
      world = await makeWorld();
      await mkdir(join(world.dir, 'state'));
      await writeFile(
        world.config().state_db,
        'this is not a SQLite file, whatever its name says\n'.repeat(100),
      );
      for (const command of ['run', 'status', 'retry']) {
        const cli = runCli([
          command,
          '--config',
          world.configFile,
          ...(command === 'retry' ? ['--all'] : []),
        ]);
        expect(await cli.exited, cli.output()).toBe(5);
        const db = world.config().state_db;
        expect(cli.output()).toContain(
          `docex-sync ${command}: the state DB ${db} cannot be used: file is not a database`,
        );
        expect(cli.output()).toContain(`mv ${db} ${db}.broken`);
        expect(cli.output()).toContain('files already archived stay where they are');
        expect(cli.output()).toContain('the service answers DUPLICATE');
        expect(cli.output()).not.toContain('    at ');
        if (command === 'run') console.info(`printed: ${cli.output().trim().split('\n').at(-1)}`);
      }
    },
    Math.max(60_000, startMs * 50),
  );

  it(
    'a config that cannot be read: the path, the reason in words, what to do',
    async () => {
      world = await makeWorld();
      const missing = join(world.dir, 'nope.yaml');
      const absent = runCli(['run', '--config', missing]);
      expect(await absent.exited).toBe(2);
      expect(absent.output()).toBe(
        `docex-sync run: ${missing}: cannot read (ENOENT): there is no file there; check the path (relative paths start from the current folder)\n`,
      );
      const folder = runCli(['check', '--config', world.dir]);
      expect(await folder.exited).toBe(2);
      expect(folder.output()).toBe(
        `docex-sync check: ${world.dir}: cannot read (EISDIR): that is a folder; give the path of the file in it\n`,
      );
      console.info(`printed:\n${absent.output()}${folder.output()}`);
    },
    Math.max(60_000, startMs * 50),
  );

  it(
    'a YAML syntax error: the line and column, the reason, the line with a caret, what to do',
    async () => {
      world = await makeWorld();
      const file = join(world.dir, 'broken.yaml');
      await writeFile(file, 'state_db: ./s.db\nwatch:\n  - path: ./inbox\n    template_id: 1: 2\n');
      const cli = runCli(['check', '--config', file]);
      expect(await cli.exited).toBe(2);
      console.info(`printed:\n${cli.output()}`);
      expect(cli.output()).toBe(
        [
          `docex-sync check: ${file}: not valid YAML at line 4, column 18: Nested mappings are not allowed in compact mappings`,
          '      template_id: 1: 2',
          '                   ^',
          `  Fix it there (a value containing ": " or "#" needs quotes), then: docex-sync check --config ${file}`,
          '',
        ].join('\n'),
      );
    },
    Math.max(60_000, startMs * 50),
  );
});
