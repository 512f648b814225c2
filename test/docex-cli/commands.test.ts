/** docex's commands from the operation table: help, parsing, output, errors, exit codes, profiles, completion. */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseFlags, type Options } from '../../cli-kit/src/args.ts';
import { findRow } from '../../cli-kit/src/command.ts';
import { OPERATION_COMMANDS } from '../../cli/src/commands.ts';
import { OPERATION_ROWS } from '../../cli/src/operation-rows.ts';
import { inputOf } from '../../cli/src/operation-input.ts';
import { DOCEX_GLOBAL_FLAGS as GLOBAL_FLAGS } from '../../cli-kit/src/flags.ts';
import { COMMANDS } from '../../cli/src/table.ts';
import { OPERATION_NAMES, OPERATIONS } from '@docex/shared';
import { ACME_KEY, GLOBEX_KEY, inProcess, useCliWorld } from './helpers.ts';
import { templateWithField } from '../support/templates.ts';

const world = useCliWorld();

/** What docex does with the words before it calls the client: its table's row, the one parser, the input. */
async function parse(words: string[]): Promise<{ input: Record<string, unknown>; options: Options }> {
  const row = findRow([...COMMANDS, ...OPERATION_ROWS], words)!;
  const used = row.name.split(' ').length;
  const command = await row.load();
  const where = `docex ${row.name}`;
  const options = parseFlags(words.slice(used), [...command.flags, ...GLOBAL_FLAGS], where, Infinity);
  const operation = OPERATION_COMMANDS.find((c) =>
    command.usage.startsWith(`docex ${c.resource} ${c.action} `),
  )!;
  return { input: inputOf(operation, options, where), options };
}

describe('commands from the operation table', () => {
  it('gives every operation one command, each with --help listing every parameter and its description', async () => {
    expect(OPERATION_COMMANDS.map((c) => c.operation).sort()).toEqual([...OPERATION_NAMES].sort());
    const names = OPERATION_COMMANDS.map((c) => `${c.resource} ${c.action}`);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining(['folders list', 'documents data', 'documents download', 'tasks upload']),
    );
    for (const c of OPERATION_COMMANDS) {
      const run = await inProcess([c.resource, c.action, '--help']);
      expect(run.code).toBe(0);
      // Help wraps at 100 columns: a description may go on over several lines.
      const text = run.stdout.replace(/\n +/g, ' ');
      expect(text).toContain(c.spec.description);
      for (const p of c.spec.params) {
        expect(run.stdout).toContain(`--${p.name}`);
        expect(text).toContain(p.description);
      }
    }
    expect((await inProcess(['--help'])).stdout).toContain('templates     get, create, update, delete');
  });

  it('turns words into the input the client expects', async () => {
    expect((await parse(['documents', 'data', '12'])).input).toEqual({ document_id: 12 });
    const download = await parse(['documents', 'download', '--ids', '1,2', '--ids=3', '-o', 'x.zip']);
    expect(download.input).toEqual({ document_ids: [1, 2, 3] });
    expect(download.options.values.output).toBe('x.zip');
    expect((await parse(['fetch_folder', '--folder-id', '4'])).input).toEqual({ folder_id: 4 });
    expect((await parse(['folders', 'delete', '4', '--override'])).input).toEqual({
      folder_id: 4,
      override: true,
    });
    expect((await parse(['folders', 'update', '4', '--no-desc', '--name', 'AP'])).input).toEqual({
      folder_id: 4,
      desc: null,
      name: 'AP',
    });
    expect((await parse(['tasks', 'upload', 'a.pdf', 'b.pdf', '--template', '3'])).input).toEqual({
      files: [{ path: 'a.pdf' }, { path: 'b.pdf' }],
      template_id: 3,
    });
    expect((await parse(['upload', 'a.pdf', '--files', 'b.pdf', '--wait'])).input).toEqual({
      files: [{ path: 'b.pdf' }, { path: 'a.pdf' }],
    });
    expect((await parse(['documents', 'download-file', '--task_id', 't-1'])).input).toEqual({
      task_id: 't-1',
    });
    await expect(parse(['folders', 'get', '--folder_id', 'x'])).rejects.toThrow(
      '--folder_id must be a whole number (got "x")',
    );
    await expect(parse(['folders', 'get', '1', '--colour', 'red'])).rejects.toThrow(
      'docex folders get: unknown flag --colour (see docex folders get --help)',
    );
    await expect(parse(['folders', 'get', '1', '2'])).rejects.toThrow('unexpected argument "2"');
    await expect(parse(['folders', 'get', '--no-folder_id'])).rejects.toThrow(
      '--no-folder_id: folder_id cannot be null',
    );
    expect(OPERATIONS.fetch_files_batch.params.map((p) => p.name)).toContain('document_ids');
  });

  it("runs them as Commands of docex's table: the one parser, usage errors naming the command, exit 2", async () => {
    // An unknown flag is unknown (it used to take the next word as its value, or say it needed one).
    expect(await inProcess(['folders', 'list', '--colour'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'docex folders list: unknown flag --colour (see docex folders list --help)\n',
    });
    expect(await inProcess(['folders', 'get', 'abc'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'docex folders get: --folder_id must be a whole number (got "abc")\n',
    });
    expect(await inProcess(['upload', 'a.pdf', '--folder_d', '3'])).toMatchObject({
      code: 2,
      stderr:
        'docex upload: unknown flag --folder_d (did you mean "--folder_id"?) (see docex upload --help)\n',
    });
    // -o belongs to downloads only.
    expect((await inProcess(['folders', 'list', '-o', 'x.json'])).stderr).toBe(
      'docex folders list: unknown flag -o (see docex folders list --help)\n',
    );
    // Global switches are checked like every other command's.
    expect((await inProcess(['folders', 'list', '--json=maybe'])).stderr).toBe(
      'docex folders list: --json takes true or false (got "maybe")\n',
    );
    expect((await inProcess(['foldrs', 'list'])).stderr).toBe(
      'docex: unknown command "foldrs" (did you mean "folders"?); run "docex --help" for the commands\n',
    );
    const index = await inProcess(['folders']);
    expect(index.code).toBe(2);
    expect(index.stdout).toMatch(/^Usage: docex folders <action> \[flags\]\n\nActions:\n {2}list /);
    expect(await inProcess(['folders', 'lst'])).toMatchObject({
      code: 2,
      stderr: 'docex folders: unknown action "lst" (actions: list, get, create, update, delete)\n',
    });
  });

  it('prints a bash completion script that bash accepts, with every resource and action', async () => {
    const { stdout } = await inProcess(['completion', 'bash']);
    execFileSync('bash', ['-n'], { input: stdout });
    for (const c of OPERATION_COMMANDS) expect(stdout).toContain(c.action);
    expect(stdout).toContain('complete -o default -F _docex docex');
    const zsh = await inProcess(['completion', 'zsh']);
    expect(zsh.stdout.startsWith('autoload -U +X bashcompinit && bashcompinit\n')).toBe(true);
    const words = execFileSync(
      'bash',
      ['-c', `${stdout}\nCOMP_WORDS=(docex folders ""); COMP_CWORD=2; _docex; echo "\${COMPREPLY[@]}"`],
      { encoding: 'utf8' },
    );
    expect(words.trim().split(' ')).toEqual(['list', 'get', 'create', 'update', 'delete']);
    const complete = (line: string, index: number) =>
      execFileSync(
        'bash',
        ['-c', `${stdout}\nCOMP_WORDS=(${line}); COMP_CWORD=${index}; _docex; echo "\${COMPREPLY[@]}"`],
        { encoding: 'utf8' },
      )
        .trim()
        .split(' ');
    // docex's own commands and their flags come from their files (table.ts), the old spellings not offered.
    expect(complete('docex templates ""', 2)).toEqual(
      expect.arrayContaining(['list', 'export', 'plan', 'apply']),
    );
    const rerun = complete('docex rerun --', 2);
    expect(rerun).toEqual(
      expect.arrayContaining(['--template', '--folder', '--all', '--ids', '--json', '--debug']),
    );
    expect(rerun).not.toContain('--template-id');
    expect(complete('docex templates apply --', 3)).toEqual(
      expect.arrayContaining(['--prune', '--rerun', '--override', '--profile']),
    );
  });
});

// Each spawned docex starts Node with type stripping (about 1 s of CPU): generous limits on a busy machine.
describe('docex as a process', { timeout: 120_000 }, () => {
  it('runs operations: JSON when piped, errors as the client reports them, the documented exit codes', async () => {
    const created = await world.docex(['folders', 'create', '--name', 'Inbox', '--desc', 'Scans']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const folder = JSON.parse(created.stdout);
    expect(folder).toMatchObject({ name: 'Inbox', desc: 'Scans' });
    const listed = await world.docex(['folders', 'list']);
    expect(JSON.parse(listed.stdout).folders.map((f: { name: string }) => f.name)).toContain('Inbox');

    const missing = await world.docex(['documents', 'data', '999999']);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^docex: fetch_document_data: HTTP 404 Not Found: .+\n$/);

    const refused = await world.docex(['folders', 'list'], { key: 'sk-wrong-key-1234' });
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/^docex: fetch_all_folders: HTTP 401/);
    expect(refused.stderr).not.toContain('sk-wrong-key-1234');

    const unreachable = await world.docex(['folders', 'list'], {
      env: { DOCEX_BASE_URL: 'http://127.0.0.1:9' },
    });
    expect(unreachable.code).toBe(8); // connection refused
    expect(unreachable.stderr).toMatch(/^docex: fetch_all_folders: .*(ECONNREFUSED|refused)/);

    const usage = await world.docex(['folders', 'get']);
    expect(usage).toMatchObject({
      code: 2,
      stderr: 'docex: fetch_folder: missing required parameter "folder_id"\n',
    });
    const noKey = await world.docex(['folders', 'list'], { key: null });
    expect(noKey).toMatchObject({
      code: 2,
      stderr: `docex: no API key: set DOCEX_API_KEY (or api_key_file in a profile of ${join(world.dir, 'no-config', 'docex', 'config.yaml')}, chosen with --profile)\n`,
    });
    expect((await world.docex(['folderz'])).code).toBe(2);
  });

  it('uploads and waits, downloads one file and a ZIP, and reruns by template', async () => {
    const acme = world.client(ACME_KEY);
    const folder = await acme.createFolder({ name: 'Uploads' });
    const template = await templateWithField(acme, folder.id, 'Upload test', {
      name: 'Total',
      format: 'total_price',
    });
    await writeFile(join(world.dir, 'invoice.txt'), 'Invoice number: U-1\nTotal: 9,90\n');

    const upload = await world.docex(['upload', 'invoice.txt', '--template', String(template.id), '--wait']);
    expect(upload).toMatchObject({ code: 0, stderr: '' });
    const { tasks } = JSON.parse(upload.stdout);
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ status: 'DONE', document_id: expect.any(Number) });
    const documentId = tasks[0].document_id as number;

    const file = await world.docex(['documents', 'download-file', String(documentId), '-o', 'copy.txt']);
    expect(file.code).toBe(0);
    expect(await readFile(join(world.dir, 'copy.txt'), 'utf8')).toBe('Invoice number: U-1\nTotal: 9,90\n');
    const piped = await world.docex(['documents', 'download-file', String(documentId)]);
    expect(piped.stdout).toBe('Invoice number: U-1\nTotal: 9,90\n');

    const zip = await world.docex(['documents', 'download', '--ids', String(documentId), '-o', 'docs.zip']);
    expect(zip.code).toBe(0);
    expect(JSON.parse(zip.stdout)).toEqual({ file: join(world.dir, 'docs.zip'), bytes: expect.any(Number) });
    expect((await readFile(join(world.dir, 'docs.zip'))).subarray(0, 2).toString()).toBe('PK');

    const rerun = await world.run(['rerun', '--template', String(template.id), '--override']);
    expect(rerun.code).toBe(0);
    expect(JSON.parse(rerun.stdout)).toMatchObject({
      documents: 1,
      rerun: 1,
      not_rerun: 0,
      rerun_doc_ids: [documentId],
    });
    expect((await world.run(['rerun'])).code).toBe(2);
  });

  it('picks the account from a profile of the config file, with the key from its key file', async () => {
    const dir = join(world.dir, 'profiles');
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'acme.key'), `${ACME_KEY}\n`);
    await writeFile(join(dir, 'globex.key'), `${GLOBEX_KEY}\n`);
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      `default_profile: acme
profiles:
  acme: { base_url: "${world.emulator.url}", api_key_file: acme.key }
  globex: { base_url: "${world.emulator.url}", api_key_file: globex.key, max_retries: 0 }
`,
    );
    await world.client(GLOBEX_KEY).createFolder({ name: 'Only at Globex' });
    const names = async (args: string[]) => {
      const run = await world.run(['folders', 'list', '--config', config, ...args], {
        key: null,
        env: { DOCEX_BASE_URL: '' },
      });
      expect(run.stderr).toBe('');
      return JSON.parse(run.stdout).folders.map((f: { name: string }) => f.name) as string[];
    };
    expect(await names([])).not.toContain('Only at Globex');
    expect(await names(['--profile', 'globex'])).toContain('Only at Globex');
    const spawned = await world.docex(['folders', 'list'], {
      key: null,
      env: { DOCEX_CONFIG: config, DOCEX_PROFILE: 'globex', DOCEX_BASE_URL: '' },
    });
    expect(JSON.parse(spawned.stdout).folders.map((f: { name: string }) => f.name)).toContain(
      'Only at Globex',
    );

    // DOCEX_API_KEY wins over the profile's key file, as in docex-sync, and docex says so.
    const both = await world.run(['folders', 'list', '--config', config, '--profile', 'globex']);
    expect(both.stderr).toBe('docex: DOCEX_API_KEY is set and wins over profiles.globex.api_key_file\n');
    expect(JSON.parse(both.stdout).folders.map((f: { name: string }) => f.name)).not.toContain(
      'Only at Globex',
    );

    const unknown = await world.run(['folders', 'list', '--config', config, '--profile', 'prod'], {
      key: null,
    });
    expect(unknown).toMatchObject({
      code: 2,
      stderr: `docex: ${config}: no profile "prod" (profiles: acme, globex)\n`,
    });
    await writeFile(config, 'profiles:\n  acme: { base_url: "not a url", api_key: x }\n');
    const bad = await world.run(['folders', 'list', '--config', config], { key: null });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      `${config}:2 profiles.acme.base_url: must be a URL, e.g. https://api.example.com, not "not a url"`,
    );
    expect(bad.stderr).toContain(`${config}:2 profiles.acme.api_key: unknown key`);
  });

  it('exits 3 when check_api_key answers 200 with a body that says the key is not valid', async () => {
    const server = createServer((_req, res) =>
      res.setHeader('content-type', 'application/json').end('{"valid":false}'),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const run = await inProcess(['account', 'check'], { env: { DOCEX_BASE_URL: url, DOCEX_API_KEY: 'k' } });
      expect(run.code).toBe(3);
      expect(JSON.parse(run.stdout)).toEqual({ valid: false, details: { valid: false } });
    } finally {
      server.close();
    }
  });

  it('prints tables on a terminal', async () => {
    await world.client(ACME_KEY).createFolder({ name: 'Table test', desc: 'For people' });
    const run = await inProcess(['folders', 'list'], {
      tty: true,
      env: {
        DOCEX_BASE_URL: world.emulator.url,
        DOCEX_API_KEY: ACME_KEY,
        XDG_CONFIG_HOME: join(world.dir, 'none'),
      },
    });
    expect(run.code).toBe(0);
    const lines = run.stdout.split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +DESC +TEMPLATE_IDS +TEMPLATES$/);
    expect(lines.some((l) => /^\d+ +Table test +For people/.test(l))).toBe(true);
  });
});
