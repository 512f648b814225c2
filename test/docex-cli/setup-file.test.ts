/** The setup file: schema errors with line and key, collisions, references, export order, the example. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../cli-kit/src/errors.ts';
import {
  checkSetup,
  SetupSchema,
  setupToYaml,
  toSetup,
  type Account,
} from '../../cli/src/setup/model.ts';
import { parseYaml } from '../../cli-kit/src/yaml.ts';

const load = (text: string) => {
  const located = parseYaml(text, 'setup.yaml', SetupSchema);
  checkSetup(located);
  return located.data;
};
const errorOf = (text: string) => {
  try {
    load(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('no error');
};

const GOOD = `version: 1
folders:
  - name: Invoices
templates:
  - name: Supplier
    folder: Invoices
    fields:
      - name: total
        type: General fields
        format: total_price
`;

describe('the setup file', () => {
  it('reads a minimal file with defaults for empty lists', () => {
    expect(load(GOOD).templates[0]!.instructions).toEqual([]);
  });

  it('names the line and the key of a value outside an enum', () => {
    const message = errorOf(GOOD.replace('format: total_price', 'format: price'));
    expect(message).toMatch(
      /^setup\.yaml: invalid\n {2}setup\.yaml:10 templates\[0\]\.fields\[0\]\.format: must be one of: text, number, date, .*, not "price"$/,
    );
  });

  it('names the line of an unknown key, and of a missing one', () => {
    const message = errorOf(
      GOOD.replace('    folder: Invoices\n', '    folder: Invoices\n    locale: EU\n').replace(
        '        type: General fields\n',
        '',
      ),
    );
    expect(message).toContain('setup.yaml:7 templates[0].locale: unknown key');
    expect(message).toMatch(
      /setup\.yaml:9 templates\[0\]\.fields\[0\]\.type: is missing: set it to one of: General fields, Line fields$/m,
    );
  });

  it('reports colliding names with both lines', () => {
    const twice = `${GOOD}  - name: Supplier\n    folder: Invoices\n`;
    expect(errorOf(twice)).toContain(
      'setup.yaml:11 templates[1].name: a template of this name (template names are unique in an account) is also at setup.yaml:5 templates[0].name',
    );
    const fields = GOOD.replace(
      'fields:\n',
      'fields:\n      - name: total\n        type: General fields\n        format: number\n',
    );
    expect(errorOf(fields)).toMatch(
      /setup\.yaml:11 templates\[0\]\.fields\[1\]\.name: a field of this name and type in template "Supplier" is also at setup\.yaml:8/,
    );
    // The same name in General and in Line fields is two fields.
    expect(() =>
      load(
        fields.replace(
          'type: General fields\n        format: number',
          'type: Line fields\n        format: number',
        ),
      ),
    ).not.toThrow();
  });

  it('reports a reference to a folder the file does not list', () => {
    expect(errorOf(GOOD.replace('folder: Invoices', 'folder: Invoice'))).toContain(
      'setup.yaml:6 templates[0].folder: folder "Invoice" is not listed under folders:',
    );
  });

  it('reports broken YAML with its line', () => {
    expect(errorOf('version: 1\nfolders:\n  - name: [\n')).toMatch(
      /^setup\.yaml: not valid YAML at line \d+, column \d+: /,
    );
  });

  it('accepts the annotated example in examples/setup.yaml', () => {
    const text = readFileSync(join(import.meta.dirname, '../../examples/setup.yaml'), 'utf8');
    expect(load(text).templates.length).toBeGreaterThan(0);
  });
});

describe('export', () => {
  const account: Account = {
    folders: [
      { id: 2, name: 'Receipts', desc: '', templates: [{ id: 11, name: 'Till' }] },
      { id: 1, name: 'Invoices', desc: 'AP', templates: [{ id: 10, name: 'Supplier' }] },
      { id: 3, name: null, desc: null, templates: [] },
    ],
    templates: [
      {
        id: 10,
        name: 'Supplier',
        desc: null,
        folder_id: 1,
        number_locale: 'EU',
        fields: [
          { id: 5, name: 'sku', type: 'Line fields', format: 'code', desc: null, position: null },
          { id: 4, name: 'vat', type: 'General fields', format: 'number', desc: null, position: null },
          { id: 3, name: 'total', type: 'General fields', format: 'total_price', desc: 'Gross', position: 1 },
        ],
        instructions: [
          { id: 8, type: 'Line fields', content: 'One line per article' },
          { id: 9, type: 'General fields', content: 'B' },
          { id: 7, type: 'General fields', content: 'A' },
        ],
      },
      { id: 11, name: 'Till', desc: null, folder_id: 2, fields: [], instructions: [] },
    ],
  };

  it('orders folders and templates by name, fields by position then type and name, instructions by type then age; no ids', () => {
    const setup = toSetup(account, new Set(['Invoices', 'Receipts']));
    expect(setup).toEqual({
      version: 1,
      folders: [{ name: 'Invoices', desc: 'AP' }, { name: 'Receipts' }],
      templates: [
        {
          name: 'Supplier',
          folder: 'Invoices',
          number_locale: 'EU',
          fields: [
            { name: 'total', type: 'General fields', format: 'total_price', position: 1, desc: 'Gross' },
            { name: 'vat', type: 'General fields', format: 'number' },
            { name: 'sku', type: 'Line fields', format: 'code' },
          ],
          instructions: [
            { type: 'General fields', content: 'A' },
            { type: 'General fields', content: 'B' },
            { type: 'Line fields', content: 'One line per article' },
          ],
        },
        { name: 'Till', folder: 'Receipts', fields: [], instructions: [] },
      ],
    });
    const yaml = setupToYaml(setup);
    expect(yaml).not.toMatch(/\bid\b/);
    expect(load(yaml)).toEqual(setup);
  });

  it('refuses a folder without a name, which a file could not identify', () => {
    expect(() => toSetup(account)).toThrow(/folder 3 has no name/);
  });
});
