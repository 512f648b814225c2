/**
 * Templates as code end to end: docex spawned as a process against the emulator, from one account
 * (Acme) to another (Globex).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ACME_KEY, GLOBEX_KEY, useCliWorld } from './helpers.ts';

const world = useCliWorld();
const file = (name: string) => join(world.dir, name);

/** A setup with what a file can hold: descriptions, locales, positions, both field types, instructions. */
async function seedAcme() {
  const acme = world.client(ACME_KEY);
  const invoices = await acme.createFolder({ name: 'Invoices', desc: 'Accounts payable' });
  const receipts = await acme.createFolder({ name: 'Receipts' });
  const supplier = await acme.createTemplate({
    folder_id: invoices.id,
    name: 'Supplier invoice',
    desc: 'From suppliers',
    number_locale: 'EU',
    date_locale: 'US',
  });
  const till = await acme.createTemplate({ folder_id: receipts.id, name: 'Till receipt' });
  const fields = [
    [supplier.id, 'Invoice number', 'General fields', 'invoice_number', 1, null],
    [supplier.id, 'Total', 'General fields', 'total_price', 2, 'Gross amount'],
    [supplier.id, 'Description', 'Line fields', 'text', 3, null],
    [supplier.id, 'Amount', 'Line fields', 'total_price', 4, null],
    [till.id, 'Total', 'General fields', 'total_price', null, null],
    [till.id, 'Date', 'General fields', 'date', null, null],
  ] as const;
  for (const [template_id, name, type, format, position, desc] of fields)
    await acme.createField({ template_id, name, type, format, position, desc });
  await acme.createInstruction({
    template_id: supplier.id,
    type: 'General fields',
    content: 'Amounts in EUR.',
  });
  await acme.createInstruction({
    template_id: supplier.id,
    type: 'Line fields',
    content: 'One line per article.\nSkip shipping.',
  });
}

const planOf = async (name: string, key = GLOBEX_KEY, extra: string[] = []) => {
  const run = await world.docex(['templates', 'plan', file(name), ...extra], { key });
  return { ...run, plan: run.stdout ? JSON.parse(run.stdout) : undefined };
};

// Each spawned docex starts Node with type stripping (about 1 s of CPU): generous limits on a busy machine.
describe('docex templates export → apply → export', { timeout: 120_000 }, () => {
  let exported: string;
  beforeAll(async () => {
    await seedAcme();
    const run = await world.docex(['templates', 'export']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    exported = run.stdout;
    await writeFile(file('setup.yaml'), exported);
  });

  it('exports names, not ids, in a stable order', async () => {
    expect(exported).not.toMatch(/\bid:|_id:/);
    expect(exported).toContain('number_locale: EU\n    date_locale: US');
    expect(exported.indexOf('name: Invoice number')).toBeLessThan(exported.indexOf('name: Amount'));
    expect((await world.run(['templates', 'export'])).stdout).toBe(exported);
  });

  it('applies to an empty second account; exporting it gives the same YAML; a second plan and apply change nothing', async () => {
    const before = await planOf('setup.yaml');
    expect(before.code).toBe(0);
    expect(before.plan.actions.every((a: { kind: string }) => a.kind === 'create')).toBe(true);
    expect(before.plan.actions).toHaveLength(2 + 2 + 6 + 2);

    const apply = await world.docex(['templates', 'apply', file('setup.yaml')], { key: GLOBEX_KEY });
    expect(apply).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(apply.stdout).applied).toHaveLength(12);

    expect((await world.run(['templates', 'export'], { key: GLOBEX_KEY })).stdout).toBe(exported);
    const after = await planOf('setup.yaml');
    expect(after).toMatchObject({ code: 0, plan: { actions: [], extractionChanged: [] } });
    const again = await world.run(['templates', 'apply', file('setup.yaml')], { key: GLOBEX_KEY });
    expect(JSON.parse(again.stdout)).toEqual({ applied: [], extractionChanged: [], reruns: [] });
  });

  it('a changed format plans one update, bumps one template, and --rerun reruns only its documents', async () => {
    const globex = world.client(GLOBEX_KEY);
    const { folders } = await globex.fetchAllFolders();
    const idOf = (name: string) => folders.flatMap((f) => f.templates ?? []).find((t) => t.name === name)!.id;
    for (const [template_id, text] of [
      [idOf('Supplier invoice'), 'Invoice number: S-1\nTotal: 12,50\n'],
      [idOf('Till receipt'), 'Total: 3,20\n'],
    ] as const) {
      const { tasks } = await globex.uploadAndWait({
        files: [{ data: Buffer.from(text), fileName: 'doc.txt' }],
        template_id,
      });
      expect(tasks[0]!.status).toBe('DONE');
    }
    await writeFile(file('changed.yaml'), exported.replace('format: text', 'format: label'));

    const planned = await planOf('changed.yaml');
    expect(planned.code).toBe(0);
    expect(planned.plan).toEqual({
      actions: [
        {
          kind: 'update',
          what: 'field',
          template: 'Supplier invoice',
          label: 'field "Description" (Line fields)',
          id: expect.any(Number),
          changes: { format: { from: 'text', to: 'label' } },
        },
      ],
      extractionChanged: ['Supplier invoice'],
    });

    const apply = await world.docex(['templates', 'apply', file('changed.yaml'), '--rerun'], {
      key: GLOBEX_KEY,
    });
    expect(apply.code).toBe(0);
    expect(JSON.parse(apply.stdout).reruns).toEqual([
      { template: 'Supplier invoice', documents: 1, rerun: 1, not_rerun: 0, failed: 0 },
    ]);
    // The other template's extraction did not move: the service refuses its rerun without override.
    const other = await globex.rerunAll(await globex.fetchDocuments({ template_id: idOf('Till receipt') }));
    expect(other).toMatchObject({ rerun: 0, not_rerun: 1 });
  });

  it('deletes only with --prune: without it plan and apply exit 1, name what would go, and change nothing', async () => {
    const text = (await world.run(['templates', 'export'], { key: GLOBEX_KEY })).stdout;
    const trimmed = text
      .replace(/ {6}- name: Amount\n {8}type: Line fields\n {8}format: total_price\n {8}position: 4\n/, '')
      .replace(/ {2}- name: Till receipt[\s\S]*$/, '');
    expect(trimmed).not.toContain('name: Amount');
    await writeFile(file('smaller.yaml'), trimmed);

    const plan = await planOf('smaller.yaml');
    expect(plan.code).toBe(1);
    expect(plan.plan.actions.map((a: { kind: string; label: string }) => `${a.kind} ${a.label}`)).toEqual([
      'delete field "Amount" (Line fields)',
      'delete template "Till receipt"',
    ]);
    expect(plan.stderr).toContain(
      'docex: 2 thing(s) on the service are not in the file and would be deleted:\n  field "Amount" (Line fields) of template "Supplier invoice"\n  template "Till receipt"\nAdd them to the file, or run again with --prune to delete them.',
    );

    const refused = await world.docex(['templates', 'apply', file('smaller.yaml')], { key: GLOBEX_KEY });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect((await world.run(['templates', 'export'], { key: GLOBEX_KEY })).stdout).toBe(text);

    // Till receipt still has a document: the service refuses to delete it without override.
    const blocked = await world.run(['templates', 'apply', file('smaller.yaml'), '--prune'], {
      key: GLOBEX_KEY,
    });
    expect(blocked.code).toBe(1);
    expect(blocked.stderr).toMatch(
      /^docex: delete_template: HTTP 409 Conflict: Template \d+ still has 1 document/,
    );
    const globex = world.client(GLOBEX_KEY);
    for (const id of await globex.fetchDocuments()) await globex.deleteDoc({ doc_id: id });
    const pruned = await world.run(['templates', 'apply', file('smaller.yaml'), '--prune'], {
      key: GLOBEX_KEY,
    });
    expect(pruned.code).toBe(0);
    expect((await world.run(['templates', 'export'], { key: GLOBEX_KEY })).stdout).toBe(trimmed);
  });

  it('refuses colliding names and missing references with the line, before calling the service', async () => {
    await writeFile(
      file('bad.yaml'),
      `version: 1
folders:
  - name: Invoices
templates:
  - name: Supplier invoice
    folder: Invoices
  - name: Supplier invoice
    folder: Payables
`,
    );
    const run = await world.docex(['templates', 'plan', file('bad.yaml')], {
      env: { DOCEX_BASE_URL: 'http://127.0.0.1:9' },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      `docex: ${file('bad.yaml')}: invalid
  ${file('bad.yaml')}:7 templates[1].name: a template of this name (template names are unique in an account) is also at ${file('bad.yaml')}:5 templates[0].name
  ${file('bad.yaml')}:8 templates[1].folder: folder "Payables" is not listed under folders:
`,
    );
  });

  it('refuses to guess when the account has two folders of a name the file uses', async () => {
    const acme = world.client(ACME_KEY);
    await acme.createFolder({ name: 'Receipts' });
    const run = await world.run(['templates', 'plan', file('setup.yaml')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^docex: the account has 2 folders named "Receipts" \(ids \d+, \d+\): rename all but one first\n$/,
    );
  });

  it('exports one folder with --folder, and names a folder that does not exist', async () => {
    const one = await world.run(['templates', 'export', '--folder', 'Invoices', '-o', file('one.yaml')]);
    expect(one.code).toBe(0);
    const text = await readFile(file('one.yaml'), 'utf8');
    expect(text).toContain('name: Supplier invoice');
    expect(text).not.toContain('Till receipt');
    const missing = await world.run(['templates', 'export', '--folder', 'Nope']);
    expect(missing).toMatchObject({
      code: 2,
      stderr: 'docex templates export: no folder named "Nope"\n',
    });
  });
});
