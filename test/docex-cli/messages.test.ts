/**
 * What docex (and docex-sync, where they share it) prints when something is wrong, word for word: a
 * refused key, an unreachable service and a proxy or certificate in docex's own terms (its
 * variables, --profile, the profiles' file), a base URL ending in /v1, "did you mean" for every flag
 * of every command, an empty file, and the answers of `account check` and `upload --wait`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Command, CommandRow } from '../../cli-kit/src/command.ts';
import { COMMANDS as SYNC_COMMANDS } from '../../daemon/src/commands/table.ts';
import { PROGRAM as DOCEX } from '../../cli/src/docex.ts';
import { PROGRAM as DOCEX_SYNC } from '../../daemon/src/commands/docex-sync.ts';
import { OPERATION_ROWS } from '../../cli/src/operation-rows.ts';
import { COMMANDS as DOCEX_COMMANDS } from '../../cli/src/table.ts';
import { closedPortUrl } from '../support/client.ts';
import { syncInProcess } from '../daemon/helpers.ts';
import { ACME_KEY, GLOBEX_KEY, inProcess, useCliWorld } from './helpers.ts';

const world = useCliWorld();

/** docex in this process with the test's emulator, DOCEX_API_KEY = `key`, no config file but `env`'s. */
function docex(args: string[], options: { key?: string; env?: Record<string, string>; tty?: boolean } = {}) {
  return inProcess(args, {
    tty: options.tty,
    env: {
      XDG_CONFIG_HOME: join(world.dir, 'no-config'),
      DOCEX_BASE_URL: world.emulator.url,
      DOCEX_API_KEY: options.key ?? ACME_KEY,
      ...options.env,
    },
  });
}
const profilesFile = () => join(world.dir, 'no-config', 'docex', 'config.yaml');

describe('hints in docex terms', () => {
  it('a refused key says which variable to set, and where profiles are', async () => {
    const run = await docex(['folders', 'list'], { key: 'sk-wrong-4711' });
    expect(run).toEqual({
      code: 3,
      stdout: '',
      stderr: `docex: fetch_all_folders: HTTP 401 Unauthorized: Invalid API key; set DOCEX_API_KEY (or api_key_file in a profile of ${profilesFile()}, chosen with --profile) to a key this service accepts\n`,
    });
  });

  it('no base URL at all says which variable to set, and where profiles are (not a key that does not exist)', async () => {
    const run = await docex(['folders', 'list'], { env: { DOCEX_BASE_URL: '' } });
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `docex: no base URL: set DOCEX_BASE_URL (or base_url in a profile of ${profilesFile()}, chosen with --profile)\n`,
    });
  });

  it('with a profile, its own keys are named', async () => {
    const config = join(world.dir, 'profiles.yaml');
    await writeFile(join(world.dir, 'wrong.key'), 'sk-wrong-0815\n');
    await writeFile(
      config,
      `profiles:\n  prod:\n    base_url: ${world.emulator.url}\n    api_key_file: wrong.key\n`,
    );
    const run = await docex(['folders', 'list', '--config', config, '--profile', 'prod'], {
      env: { DOCEX_API_KEY: '' },
    });
    expect(run.stderr).toBe(
      `docex: fetch_all_folders: HTTP 401 Unauthorized: Invalid API key; set DOCEX_API_KEY (or profiles.prod.api_key_file in ${config}; --profile chooses another profile) to a key this service accepts\n`,
    );
    expect(run.code).toBe(3);
  });

  // The client retries a refused connection (backoff) before it gives up: seconds on a busy machine.
  it(
    'a refused connection names DOCEX_BASE_URL (not docex-sync api.base_url)',
    { timeout: 60_000 },
    async () => {
      const closed = await closedPortUrl();
      const address = new URL(closed).host;
      const run = await docex(['folders', 'list'], { env: { DOCEX_BASE_URL: closed } });
      expect(run).toEqual({
        code: 8,
        stdout: '',
        stderr: `docex: fetch_all_folders: connection refused by ${address} (ECONNREFUSED): nothing listens there; check the service URL (DOCEX_BASE_URL) and that the service is up\n`,
      });
    },
  );

  it('an address where no service answers (a 404 to a list) says to check the service URL', async () => {
    const run = await docex(['folders', 'list'], { env: { DOCEX_BASE_URL: `${world.emulator.url}/api` } });
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'docex: fetch_all_folders: HTTP 404 Not Found: Not Found; no Document Extraction Service answers at this address; check the service URL (DOCEX_BASE_URL): the address without /v1\n',
    });
    // A 404 naming a missing thing is the service's answer, without a hint.
    expect((await docex(['folders', 'get', '999'])).stderr).toBe(
      'docex: fetch_folder: HTTP 404 Not Found: Folder 999 not found\n',
    );
  });

  it('docex-sync rerun says which variable to set for a refused key, as check does', async () => {
    const file = join(world.dir, 'docex-sync.yaml');
    await mkdir(join(world.dir, 'in'), { recursive: true });
    await writeFile(
      file,
      `api: { base_url: "${world.emulator.url}", max_retries: 0 }\nstate_db: ./state.db\nwatch:\n  - { path: ./in, template_id: 1, output: ./out, processed_dir: ./done, failed_dir: ./failed }\nlog_level: error\n`,
    );
    const run = await syncInProcess(['rerun', '--config', file, '--all'], {
      env: { DOCEX_API_KEY: 'sk-wrong-4711' },
    });
    expect(run.stderr).toBe(
      'docex-sync rerun: fetch_documents: HTTP 401 Unauthorized: Invalid API key; set DOCEX_API_KEY (or api.api_key_file) to a key this service accepts\n',
    );
    expect(run.code).toBe(3);
  });
});

describe('a base URL ending in /v1', () => {
  it('is refused before any request, saying to drop /v1 (docex)', async () => {
    world.emulator.resetStats();
    const run = await docex(['folders', 'list'], { env: { DOCEX_BASE_URL: `${world.emulator.url}/v1/` } });
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `docex: DOCEX_BASE_URL: "${world.emulator.url}/v1/" ends in /v1: give the service's address without it, ${world.emulator.url} (every request adds /v1/... itself)\n`,
    });
    expect(world.emulator.stats().totalRequests).toBe(0);
  });

  it('is a config mistake with its line (docex-sync)', async () => {
    const file = join(world.dir, 'v1.yaml');
    await writeFile(
      file,
      `api:\n  base_url: ${world.emulator.url}/v1\nstate_db: ./state.db\nwatch:\n  - { path: ./in, template_id: 1, output: ./out, processed_dir: ./done, failed_dir: ./failed }\n`,
    );
    const run = await syncInProcess(['check', '--config', file]);
    expect(run.stderr).toBe(
      `docex-sync check: ${file}: invalid config\n  ${file}:2 api.base_url: "${world.emulator.url}/v1" ends in /v1: give the service's address without it, ${world.emulator.url} (every request adds /v1/... itself)\n`,
    );
    expect(run.code).toBe(2);
  });
});

/** A typo of a flag: its second and third letters swapped (--tempalte), or a letter dropped when too short. */
const typo = (name: string) =>
  name.length > 3
    ? `${name[0]}${name[2]}${name[1]}${name.slice(3)}`
    : name.slice(0, -1) + name.at(-1)!.repeat(2);

describe('"did you mean" for every flag', () => {
  it('docex upload --templte suggests --template, as --wiat suggests --wait', async () => {
    expect(await docex(['upload', 'f.pdf', '--templte', '2'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'docex upload: unknown flag --templte (did you mean "--template"?) (see docex upload --help)\n',
    });
    expect((await docex(['upload', 'f.pdf', '--wiat'])).stderr).toBe(
      'docex upload: unknown flag --wiat (did you mean "--wait"?) (see docex upload --help)\n',
    );
  });

  it('every spelling of every flag of every command of both binaries, mistyped, is suggested back', async () => {
    const missed: string[] = [];
    const programs: Array<[typeof DOCEX | typeof DOCEX_SYNC, readonly CommandRow[]]> = [
      [DOCEX, [...DOCEX_COMMANDS, ...OPERATION_ROWS]],
      [DOCEX_SYNC, SYNC_COMMANDS],
    ];
    let tried = 0;
    for (const [program, rows] of programs) {
      for (const row of rows) {
        const command = (await row.load()) as Command;
        const flags = [...command.flags, ...program.globalFlags];
        for (const flag of flags) {
          for (const spelling of [flag.name, ...(flag.aliases ?? [])]) {
            const wrong = `--${typo(spelling)}`;
            if (flags.some((f) => [f.name, ...(f.aliases ?? [])].includes(wrong.slice(2)))) continue;
            const run =
              program === DOCEX
                ? await docex([...row.name.split(' '), wrong])
                : await syncInProcess([...row.name.split(' '), wrong]);
            tried++;
            const suggested = /did you mean "--([^"]+)"/.exec(run.stderr)?.[1];
            if (!suggested || ![flag.name, ...(flag.aliases ?? [])].includes(suggested))
              missed.push(`${program.name} ${row.name} ${wrong}: ${run.stderr.trim()}`);
          }
        }
      }
    }
    expect(tried).toBeGreaterThan(300);
    expect(missed).toEqual([]);
  }, 120_000);
});

describe('upload', () => {
  it('refuses an empty file before sending anything, naming it', async () => {
    const empty = join(world.dir, 'empty.pdf');
    await writeFile(empty, '');
    world.emulator.resetStats();
    const run = await docex(['upload', empty, '--wait']);
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `docex: upload_file: "${empty}" is empty (0 bytes): nothing was sent; give a file with content\n`,
    });
    expect(world.emulator.stats().requestsByOperation.upload_file).toBeUndefined();
  });

  it('--wait names each result by its file, never by its task id twice', async () => {
    const file = join(world.dir, 'scan.pdf');
    await writeFile(file, 'Invoice number: 7\n');
    // No template given and none in the account: the task ends FAILED without a document.
    const run = await docex(['upload', file, '--wait'], { tty: true, key: GLOBEX_KEY });
    expect(run.stdout).toMatch(/^scan\.pdf: FAILED \(task [0-9a-f-]{36}\): No template available: .+\n$/);
    expect(run.code).toBe(1);
  });
});

describe('account check', () => {
  it('prints its answer once', async () => {
    expect(await docex(['account', 'check'], { tty: true })).toEqual({
      code: 0,
      stdout: 'valid         true\ncompany_id    1\ncompany_name  Acme\n',
      stderr: '',
    });
  });
});
