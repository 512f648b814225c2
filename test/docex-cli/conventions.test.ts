/**
 * The CLI's conventions: a version, extracted values from `upload --wait` on a terminal, list
 * commands that print tables (not JSON in a cell), help that fits 100 columns, "did you mean" for a
 * setup-file typo, and a plan that says plainly what --prune would delete.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { actionsOf, RESOURCE_COMMANDS, HELP_WIDTH, wrap } from '../../cli/src/commands.ts';
import { ConfigError } from '../../cli-kit/src/errors.ts';
import { SetupSchema } from '../../cli/src/setup/model.ts';
import { formatPlan, type Plan } from '../../cli/src/setup/plan.ts';
import { parseYaml } from '../../cli-kit/src/yaml.ts';
import packageJson from '../../daemon/package.json' with { type: 'json' };
import { invoiceTemplate } from '../support/templates.ts';
import { ACME_KEY, inProcess, useCliWorld } from './helpers.ts';

const world = useCliWorld();
/** main() with a terminal as stdout, against the test's emulator. */
const onTerminal = (args: string[]) =>
  inProcess(args, { tty: true, env: { DOCEX_BASE_URL: world.emulator.url, DOCEX_API_KEY: ACME_KEY } });

describe('version', () => {
  it.each([['--version'], ['-v'], ['-V'], ['version']])('docex %s prints the version', async (flag) => {
    expect(await inProcess([flag])).toEqual({
      code: 0,
      stdout: `docex ${packageJson.version}\n`,
      stderr: '',
    });
  });
});

describe('help fits a terminal', () => {
  it(`every help text is at most ${HELP_WIDTH} columns wide (the format list wraps)`, async () => {
    const texts = [
      ['--help'],
      ['rerun', '--help'],
      ['templates', 'list', '--help'],
      ['fields', 'list', '--help'],
      ...RESOURCE_COMMANDS.flatMap((r) => actionsOf(r).map((c) => [r, c.action, '--help'])),
    ];
    for (const args of texts) {
      const { stdout } = await inProcess(args);
      const wide = stdout.split('\n').filter((l) => l.length > HELP_WIDTH);
      expect(wide, args.join(' ')).toEqual([]);
    }
    const help = (await inProcess(['fields', 'create', '--help'])).stdout;
    expect(help).toMatch(/--format text\|number\|date\|.*\|\n {6}\S/); // continued on the next line
    expect(help).toContain('fraud_verdict');
  });

  it('wrap breaks after spaces, bars and commas, never inside a word', () => {
    expect(wrap('a|bb|ccc dddd,ee', 5)).toEqual(['a|bb|', 'ccc', 'dddd,', 'ee']);
  });
});

describe('lists', () => {
  it('templates list, fields list and folders list print tables, not JSON in a cell', async () => {
    const client = world.client(ACME_KEY);
    const folder = await client.createFolder({ name: 'Lists' });
    const template = await client.createTemplate({ folder_id: folder.id, name: 'Listed invoice' });
    await client.createField({
      template_id: template.id,
      name: 'Total',
      type: 'General fields',
      format: 'total_price',
      position: 2,
    });
    await client.createField({
      template_id: template.id,
      name: 'Number',
      type: 'General fields',
      format: 'invoice_number',
      position: 1,
    });

    const templates = await onTerminal(['templates', 'list', '--folder', String(folder.id)]);
    expect(templates.code).toBe(0);
    expect(templates.stdout.split('\n').map((l) => l.trimEnd())).toEqual([
      expect.stringMatching(/^ID +NAME +FOLDER_ID +FOLDER$/),
      expect.stringMatching(new RegExp(`^${template.id} +Listed invoice +${folder.id} +Lists$`)),
      '',
    ]);
    const fields = await onTerminal(['fields', 'list', String(template.id)]);
    expect(fields.code).toBe(0);
    const lines = fields.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID +NAME +TYPE +FORMAT +POSITION/);
    expect(lines.slice(1).map((l) => l.split(/ {2,}/)[1])).toEqual(['Number', 'Total']);

    const folders = await onTerminal(['folders', 'list']);
    expect(folders.stdout).toContain(`Listed invoice (${template.id})`);
    expect(folders.stdout).not.toContain('{"id"');

    const piped = await inProcess(['fields', 'list', String(template.id)], {
      env: { DOCEX_BASE_URL: world.emulator.url, DOCEX_API_KEY: ACME_KEY },
    });
    expect(JSON.parse(piped.stdout).map((f: { name: string }) => f.name)).toEqual(['Number', 'Total']);
    expect((await onTerminal(['fields', 'list'])).stderr).toBe(
      'docex fields list: give one TEMPLATE_ID (see docex fields list --help)\n',
    );
  });
});

describe('upload --wait on a terminal', () => {
  it('prints the extracted values and line items, not only task ids', async () => {
    const client = world.client(ACME_KEY);
    const folder = await client.createFolder({ name: 'Wait' });
    const template = await invoiceTemplate(client, folder.id, 'Wait invoice');
    const file = join(world.dir, 'wait-invoice.txt');
    await writeFile(file, 'Invoice number: W-7\nTotal: 10,00\nWidget | 4,00\nGadget | 6,00\n');
    const run = await onTerminal(['upload', file, '--template', String(template.id), '--wait']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [heading, ...rest] = run.stdout.trimEnd().split('\n');
    expect(heading).toMatch(/^wait-invoice\.txt: DONE \(document \d+, task \S+\)$/);
    expect(rest.slice(0, 2)).toEqual([
      expect.stringMatching(/^ {2}Invoice number +W-7$/),
      expect.stringMatching(/^ {2}Total +10(\.0+)?$/),
    ]);
    expect(rest[2]).toBe('  Line items (2):');
    expect(rest[3]).toMatch(/^ {4}DESCRIPTION +AMOUNT$/);
    expect(rest[4]).toMatch(/^ {4}Widget +4(\.0+)?$/);
  });
});

describe('setup-file mistakes', () => {
  it('a typo in a key gets a "did you mean", as the daemon config does', () => {
    const text = `version: 1
folders:
  - name: Invoices
templates:
  - name: Supplier
    folder: Invoices
    numbr_locale: EU
`;
    let message = '';
    try {
      parseYaml(text, 'setup.yaml', SetupSchema);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      message = (error as Error).message;
    }
    expect(message).toBe(
      'setup.yaml: invalid\n  setup.yaml:7 templates[0].numbr_locale: unknown key (did you mean "number_locale"?)',
    );
  });
});

describe('templates plan', () => {
  const plan: Plan = {
    actions: [
      { kind: 'create', what: 'folder', label: 'folder "New"', input: { name: 'New' } },
      ...['a', 'b', 'c', 'd'].map((n, i) => ({
        kind: 'delete' as const,
        what: 'template' as const,
        label: `template "${n}"`,
        id: i + 1,
      })),
    ],
    extractionChanged: [],
  } as unknown as Plan;

  it('without --prune says the deletes would happen only with it, and that apply refuses the plan', () => {
    const text = formatPlan(plan);
    expect(text.split('\n').at(-1)).toBe(
      'Plan: 1 to create, 0 to change; 4 would be deleted with --prune. Without --prune, apply refuses this plan and changes nothing.',
    );
    expect(text).not.toContain('4 to delete');
  });

  it('with --prune counts them as deletes', () => {
    expect(formatPlan(plan, true).split('\n').at(-1)).toBe('Plan: 1 to create, 0 to change, 4 to delete.');
  });
});

describe('flags named once, alike in docex and docex-sync', () => {
  it('rerun: help shows --template, --folder and --all; the old spellings still work, hidden', async () => {
    const help = (await inProcess(['rerun', '--help'])).stdout;
    for (const flag of ['--template N', '--folder N', '--all', '--dry-run', '--json', '-c, --config FILE'])
      expect(help).toContain(flag);
    for (const old of ['--template-id', '--folder-id', '--all-documents']) expect(help).not.toContain(old);

    const client = world.client(ACME_KEY);
    const folder = await client.createFolder({ name: 'Aliases' });
    const template = await invoiceTemplate(client, folder.id, 'Alias invoice');
    await client.uploadAndWait(
      {
        files: [
          { data: new TextEncoder().encode('Invoice number: AL-1\nTotal: 1,00\n'), fileName: 'al.txt' },
        ],
        template_id: template.id,
      },
      { intervalMs: 20 },
    );
    for (const flag of ['--template', '--template-id']) {
      const dry = await world.run(['rerun', flag, String(template.id), '--dry-run']);
      expect(dry.code, dry.stderr).toBe(0);
      expect(JSON.parse(dry.stdout)).toMatchObject({ documents: 1 });
    }
    for (const flag of ['--folder', '--folder-id']) {
      const dry = await world.run(['rerun', flag, String(folder.id), '--dry-run']);
      expect(JSON.parse(dry.stdout)).toMatchObject({ documents: 1 });
    }
    const all = await world.run(['rerun', '--all-documents', '--dry-run']);
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout).documents).toBeGreaterThanOrEqual(1);
    expect(await world.run(['rerun'])).toMatchObject({
      code: 2,
      stderr: 'docex rerun: give --template, --folder, --from/--to or --ids (or --all for every document)\n',
    });
  });

  it('rerun: the selection is checked as docex-sync rerun checks it, before any call (one parser)', async () => {
    for (const [args, message] of [
      [['--template', '0'], '--template must be a positive whole number (got "0")'],
      [['--folder', '007x'], '--folder must be a positive whole number (got "007x")'],
      [['--from', '2026-02-30'], '--from must be a calendar date YYYY-MM-DD (got "2026-02-30")'],
      [['--to', '2026-1-5'], '--to must be a calendar date YYYY-MM-DD (got "2026-1-5")'],
      [['--from', '2026-03-01', '--to', '2026-02-01'], '--from 2026-03-01 is after --to 2026-02-01'],
    ] as const)
      expect(await inProcess(['rerun', ...args]), args.join(' ')).toEqual({
        code: 2,
        stdout: '',
        stderr: `docex rerun: ${message}\n`,
      });
  });

  it('usage mistakes name the command and exit 2, as in docex-sync', async () => {
    expect(await inProcess(['rerun', '--templte', '3'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'docex rerun: unknown flag --templte (did you mean "--template"?) (see docex rerun --help)\n',
    });
    expect(await inProcess(['templates', 'plan', '-c'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'docex templates plan: --config needs a value\n',
    });
  });
});
