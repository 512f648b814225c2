/** Templates as code, the pure part: plan(desired, account) → actions, checked without a service. */
import { describe, expect, it } from 'vitest';
import type { Account, RemoteTemplate, Setup } from '../../cli/src/setup/model.ts';
import { checkPrune, formatPlan, plan, PlanError } from '../../cli/src/setup/plan.ts';

const desired = (): Setup => ({
  version: 1,
  folders: [{ name: 'Invoices', desc: 'Supplier invoices' }, { name: 'Receipts' }],
  templates: [
    {
      name: 'Supplier',
      folder: 'Invoices',
      number_locale: 'EU',
      fields: [
        { name: 'total', type: 'General fields', format: 'total_price', position: 1 },
        { name: 'sku', type: 'Line fields', format: 'code', desc: 'Article number' },
      ],
      instructions: [{ type: 'General fields', content: 'Amounts are in EUR' }],
    },
    { name: 'Till receipt', folder: 'Receipts', fields: [], instructions: [] },
  ],
});

const supplier = (): RemoteTemplate => ({
  id: 10,
  name: 'Supplier',
  desc: null,
  folder_id: 1,
  number_locale: 'EU',
  date_locale: null,
  fields: [
    { id: 100, name: 'total', type: 'General fields', format: 'total_price', desc: '', position: 1 },
    { id: 101, name: 'sku', type: 'Line fields', format: 'code', desc: 'Article number', position: 2 },
  ],
  instructions: [{ id: 200, type: 'General fields', content: 'Amounts are in EUR' }],
});

/** The account that matches desired() exactly. */
const matching = (): Account => ({
  folders: [
    { id: 1, name: 'Invoices', desc: 'Supplier invoices', templates: [{ id: 10, name: 'Supplier' }] },
    { id: 2, name: 'Receipts', desc: null, templates: [{ id: 11, name: 'Till receipt' }] },
  ],
  templates: [
    supplier(),
    { id: 11, name: 'Till receipt', desc: null, folder_id: 2, fields: [], instructions: [] },
  ],
});

const summary = (p: ReturnType<typeof plan>) => p.actions.map((a) => `${a.kind} ${a.what} ${a.label}`);

describe('plan', () => {
  it('on an empty account creates everything, parents before children, with names for references', () => {
    const p = plan(desired(), { folders: [], templates: [] });
    expect(summary(p)).toEqual([
      'create folder folder "Invoices"',
      'create folder folder "Receipts"',
      'create template template "Supplier"',
      'create field field "total" (General fields)',
      'create field field "sku" (Line fields)',
      'create instruction instruction (General fields) "Amounts are in EUR"',
      'create template template "Till receipt"',
    ]);
    expect(p.actions[2]!.input).toEqual({ folder: 'Invoices', name: 'Supplier', number_locale: 'EU' });
    expect(p.actions[4]!.input).toEqual({
      name: 'sku',
      type: 'Line fields',
      format: 'code',
      desc: 'Article number',
    });
    // New templates have no documents: nothing to rerun.
    expect(p.extractionChanged).toEqual([]);
  });

  it('is empty when the account matches ("" and null are the same description; position left out is not compared)', () => {
    const p = plan(desired(), matching());
    expect(p.actions).toEqual([]);
    expect(formatPlan(p)).toBe('No changes: the account matches the file.');
  });

  it('plans exactly one update for one changed format, and one template whose extraction changed', () => {
    const d = desired();
    d.templates[0]!.fields[1]!.format = 'text';
    const p = plan(d, matching());
    expect(p.actions).toEqual([
      {
        kind: 'update',
        what: 'field',
        template: 'Supplier',
        label: 'field "sku" (Line fields)',
        id: 101,
        changes: { format: { from: 'code', to: 'text' } },
      },
    ]);
    expect(p.extractionChanged).toEqual(['Supplier']);
    expect(formatPlan(p)).toContain(
      '~ field "sku" (Line fields) in template "Supplier"\n    format: "code" → "text"',
    );
  });

  it('turns a changed type into an update of the same field, not a replacement', () => {
    const d = desired();
    d.templates[0]!.fields[0]!.type = 'Line fields';
    const p = plan(d, matching());
    expect(summary(p)).toEqual(['update field field "total" (Line fields)']);
    expect(p.actions[0]!.changes).toEqual({ type: { from: 'General fields', to: 'Line fields' } });
  });

  it('updates an edited instruction in place and creates an added one', () => {
    const d = desired();
    d.templates[0]!.instructions = [
      { type: 'General fields', content: 'Amounts are in USD' },
      { type: 'Line fields', content: 'One line per article' },
    ];
    const p = plan(d, matching());
    expect(p.actions.map((a) => [a.kind, a.what, a.id ?? null, a.changes ?? a.input])).toEqual([
      ['update', 'instruction', 200, { content: { from: 'Amounts are in EUR', to: 'Amounts are in USD' } }],
      ['create', 'instruction', null, { type: 'Line fields', content: 'One line per article' }],
    ]);
  });

  it('deletes what the file leaves out of its folders only with --prune, children before parents and after creates', () => {
    const d = desired();
    d.templates[0]!.fields.pop();
    d.templates.pop(); // Till receipt, in the managed folder Receipts
    d.templates[0]!.fields.push({ name: 'vat', type: 'General fields', format: 'number' });
    const p = plan(d, matching());
    expect(summary(p)).toEqual([
      'create field field "vat" (General fields)',
      'delete field field "sku" (Line fields)',
      'delete template template "Till receipt"',
    ]);
    expect(() => checkPrune(p, false)).toThrow(PlanError);
    expect(() => checkPrune(p, false)).toThrow(
      /2 thing\(s\).*would be deleted:\n {2}field "sku" \(Line fields\) of template "Supplier"\n {2}template "Till receipt"\n.*--prune/s,
    );
    expect(() => checkPrune(p, true)).not.toThrow();
  });

  it('never touches folders the file does not list, nor their templates', () => {
    const account = matching();
    account.folders.push({ id: 3, name: 'Other team', desc: null, templates: [{ id: 12, name: 'Theirs' }] });
    expect(plan(desired(), account).actions).toEqual([]);
  });

  it('moves a template to another folder by name', () => {
    const d = desired();
    d.templates[1]!.folder = 'Invoices';
    const p = plan(d, matching());
    expect(p.actions).toEqual([
      expect.objectContaining({
        kind: 'update',
        what: 'template',
        id: 11,
        changes: { folder: { from: 'Receipts', to: 'Invoices' } },
      }),
    ]);
    expect(p.extractionChanged).toEqual([]);
  });

  it('compares a locale only when the service reports it', () => {
    const notReported = matching();
    delete notReported.templates[0]!.number_locale;
    const d = desired();
    d.templates[0]!.number_locale = 'US';
    expect(plan(d, notReported).actions).toEqual([]);

    const p = plan(d, matching());
    expect(p.actions[0]!.changes).toEqual({ number_locale: { from: 'EU', to: 'US' } });
    expect(p.extractionChanged).toEqual(['Supplier']);
    // Left out of the file: left as the service has it.
    delete d.templates[0]!.number_locale;
    expect(plan(d, matching()).actions).toEqual([]);
  });

  it('clears a description the file no longer has', () => {
    const d = desired();
    delete d.folders[0]!.desc;
    expect(plan(d, matching()).actions).toEqual([
      expect.objectContaining({
        kind: 'update',
        what: 'folder',
        changes: { desc: { from: 'Supplier invoices', to: null } },
      }),
    ]);
  });

  it('refuses to guess between two folders of the same name', () => {
    const account = matching();
    account.folders.push({ id: 7, name: 'Invoices', desc: null, templates: [] });
    expect(() => plan(desired(), account)).toThrow(/2 folders named "Invoices" \(ids 1, 7\)/);
  });

  it('gives the same actions for the same inputs', () => {
    const d = desired();
    d.templates[0]!.fields[1]!.format = 'text';
    expect(plan(d, matching())).toEqual(plan(d, matching()));
  });
});
