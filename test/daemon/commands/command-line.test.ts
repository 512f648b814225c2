/**
 * docex-sync's command line in this process (main() with injected I/O): the table, the help, the
 * flags shared with docex, and the old spellings scripts still use. cli.test.ts keeps the checks
 * that need a real process.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseFlags } from '../../../cli-kit/src/args.ts';
import { RERUN_FLAGS } from '../../../cli-kit/src/flags.ts';
import { COMMANDS } from '../../../daemon/src/commands/table.ts';
import { createNodeClient } from '@docex/shared/node';
import { invoice, makeWorld, SECRET, syncInProcess, type World } from '../helpers.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

describe('the table and the help', () => {
  it('the main help lists every command of the table; each command has --help starting with its usage', async () => {
    const main = await syncInProcess(['--help']);
    expect(main.code).toBe(0);
    const listed = main.stdout.split('\n').map((l) => l.trim().split(/ {2,}/));
    for (const row of COMMANDS) expect(listed).toContainEqual([row.name, row.summary]);
    for (const row of COMMANDS) {
      const help = await syncInProcess([...row.name.split(' '), '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: docex-sync ${row.name} --config FILE`));
      expect(help.stdout).toMatch(/^ {2}-c, --config FILE +the config file/m);
    }
    expect((await syncInProcess([])).code).toBe(2);
  });

  it('--version, -v, -V and version print the version', async () => {
    for (const word of ['--version', '-v', '-V', 'version']) {
      const r = await syncInProcess([word]);
      expect(r).toEqual({
        code: 0,
        stdout: expect.stringMatching(/^docex-sync \d+\.\d+\.\d+\n$/),
        stderr: '',
      });
    }
  });

  it('usage mistakes: one line naming the command, exit 2', async () => {
    expect(await syncInProcess(['stauts'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'docex-sync: unknown command "stauts" (did you mean "status"?); run "docex-sync --help" for the commands\n',
    });
    expect(await syncInProcess(['status', '--confg', 'x.yaml'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'docex-sync status: unknown flag --confg (did you mean "--config"?) (see docex-sync status --help)\n',
    });
    expect((await syncInProcess(['status'])).stderr).toBe(
      'docex-sync status: --config FILE is required (or DOCEX_SYNC_CONFIG)\n',
    );
    expect((await syncInProcess(['status', '-c'])).stderr).toBe(
      'docex-sync status: --config needs a value\n',
    );
    expect((await syncInProcess(['check', '-c', 'x.yaml', 'extra'])).stderr).toBe(
      'docex-sync check: unexpected argument "extra" (see docex-sync check --help)\n',
    );
    const date = await syncInProcess(['rerun', '-c', 'x.yaml', '--from', '2026-02-30']);
    expect(date).toEqual({
      code: 2,
      stdout: '',
      stderr: 'docex-sync rerun: --from must be a calendar date YYYY-MM-DD (got "2026-02-30")\n',
    });
  });
});

describe('rerun flags, named as in docex', () => {
  it('help shows --template, --folder and --all, never the old spellings', async () => {
    const help = (await syncInProcess(['rerun', '--help'])).stdout;
    for (const flag of [
      '--template N',
      '--folder N',
      '--all',
      '--from YYYY-MM-DD',
      '--override',
      '--dry-run',
    ])
      expect(help).toContain(flag);
    for (const old of ['--template-id', '--folder-id', '--all-documents']) expect(help).not.toContain(old);
  });

  it('the old spellings --template-id, --folder-id and --all-documents still mean the same', () => {
    const parse = (words: string[]) => parseFlags(words, RERUN_FLAGS, 'docex-sync rerun').values;
    expect(parse(['--template-id', '3', '--folder-id=4', '--all-documents'])).toEqual(
      parse(['--template', '3', '--folder=4', '--all']),
    );
    expect(parse(['--template-id', '3'])).toEqual({ template: '3' });
  });

  it('a rerun with the old and the new spellings selects the same documents', async () => {
    world = await makeWorld();
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    await client.uploadAndWait(
      {
        files: [{ data: new TextEncoder().encode(invoice('A-1')), fileName: 'a.txt' }],
        template_id: world.templateId,
      },
      { intervalMs: 20 },
    );
    const config = ['--config', world.configFile];
    const id = String(world.templateId);
    const dry = 'Dry run: 1 document(s) match the filters; nothing was sent.';
    for (const flag of ['--template', '--template-id']) {
      const r = await syncInProcess(['rerun', ...config, flag, id, '--dry-run']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain(dry);
    }
    expect((await syncInProcess(['rerun', ...config, '--template', '999', '--dry-run'])).stdout).toContain(
      'Dry run: 0 document(s)',
    );
    for (const flag of ['--all', '--all-documents']) {
      const r = await syncInProcess(['rerun', ...config, flag, '--override']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('Rerun: 1 dispatched, 0 not rerun, of 1 document(s).');
    }
    const unconfirmed = await syncInProcess(['rerun', ...config]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toBe(
      'docex-sync rerun: no filter given: this would rerun every document of the company; add --all to mean it, or filter with --template, --folder, --from, --to\n',
    );
  }, 60_000);
});
