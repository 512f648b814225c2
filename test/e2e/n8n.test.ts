/**
 * The packed n8n-nodes-docex tarball in a real n8n (the run's shared n8n, test/e2e/shared.ts),
 * its workflows run from their manual trigger as the editor's Run button runs them, against the
 * emulator.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIAL, type RunData } from './real-n8n.ts';
import { N8N_VERSION } from './n8n-instance.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';

let n8n: SharedN8n;

const execute = (workflow: { id: string; [key: string]: unknown }) => n8n.execute(workflow);

const out = (runData: RunData, node: string) => {
  expect(runData[node], `node ${node} ran`).toBeDefined();
  return runData[node]![0]!.data!.main[0]!;
};

let nodeId = 0;
const docex = (name: string, parameters: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  parameters,
  id: `n${++nodeId}`,
  name,
  type: 'n8n-nodes-docex.docex',
  typeVersion: 1,
  position: [nodeId * 200, 0],
  credentials: CREDENTIAL,
  ...extra,
});
const chain = (names: string[]) =>
  Object.fromEntries(
    names.slice(0, -1).map((n, i) => [n, { main: [[{ node: names[i + 1], type: 'main', index: 0 }]] }]),
  );
const workflow = (id: string, nodes: Array<{ name: string }>) => ({
  id,
  name: id,
  active: false,
  nodes: [
    {
      parameters: {},
      id: `start-${id}`,
      name: 'Start',
      type: 'n8n-nodes-base.manualTrigger',
      typeVersion: 1,
      position: [0, 0],
    },
    ...nodes,
  ],
  connections: chain(['Start', ...nodes.map((n) => n.name)]),
  settings: {},
});

beforeAll(async () => {
  n8n = await sharedN8n();
  await writeFile(join(n8n.filesDir, 'invoice-a.txt'), 'Invoice number: E2E-A\nTotal: 10,50\n');
  await writeFile(join(n8n.filesDir, 'invoice-b.txt'), 'Invoice number: E2E-B\nTotal: 20,00\n');
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await n8n?.cleanup();
});

describe(`n8n-nodes-docex in a real n8n ${N8N_VERSION}`, () => {
  let templateId = 0;

  it('creates a folder, a template, fields and an instruction', async () => {
    const runData = await execute(
      workflow('wfsetup00000001', [
        docex('Create Folder', {
          resource: 'folder',
          operation: 'create',
          additionalFields: { name: 'e2e folder' },
        }),
        docex('Create Template', {
          resource: 'template',
          operation: 'create',
          folderId: '={{ $json.id }}',
          name: 'e2e template',
          additionalFields: { numberLocale: 'EU' },
        }),
        docex('Create Field', {
          resource: 'field',
          operation: 'create',
          templateId: '={{ $json.id }}',
          name: 'Invoice number',
          type: 'General fields',
          format: 'invoice_number',
        }),
        docex('Create Field 2', {
          resource: 'field',
          operation: 'create',
          templateId: "={{ $('Create Template').item.json.id }}",
          name: 'Total',
          type: 'General fields',
          format: 'total_price',
        }),
        docex('Create Instruction', {
          resource: 'instruction',
          operation: 'create',
          templateId: "={{ $('Create Template').item.json.id }}",
          content: 'Totals include VAT',
          type: 'General fields',
        }),
      ]),
    );
    const template = out(runData, 'Create Template')[0]!.json;
    templateId = template.id as number;
    expect(template).toMatchObject({ name: 'e2e template', number_locale: 'EU' });
    expect(out(runData, 'Create Field 2')[0]!.json).toMatchObject({
      name: 'Total',
      format: 'total_price',
      template_id: templateId,
    });
    expect(out(runData, 'Create Instruction')[0]!.json).toMatchObject({
      content: 'Totals include VAT',
      template_id: templateId,
    });
  });

  it('uploads two binary files and waits; gets data, file, raw text and a ZIP; reruns; deletes', async () => {
    expect(templateId).toBeGreaterThan(0);
    const ids = "={{ $('Extract').all().map(i => i.json.document_id).join(',') }}";
    const runData = await execute(
      workflow('wfmain000000001', [
        {
          parameters: { fileSelector: join(n8n.filesDir, '*.txt'), options: {} },
          id: 'read',
          name: 'Read Files',
          type: 'n8n-nodes-base.readWriteFile',
          typeVersion: 1,
          position: [200, 0],
        } as never,
        docex('Extract', {
          resource: 'document',
          operation: 'extract',
          binaryPropertyName: 'data',
          templateId: { __rl: true, mode: 'id', value: String(templateId) },
          options: { pollInterval: 0.2, waitTimeout: 60 },
        }),
        docex('Get Data', {
          resource: 'document',
          operation: 'getData',
          documentId: '={{ $json.document_id }}',
          simplify: false,
        }),
        docex('Raw Text', {
          resource: 'document',
          operation: 'getRawText',
          documentId: "={{ $('Extract').item.json.document_id }}",
        }),
        docex('Download', {
          resource: 'document',
          operation: 'downloadFile',
          documentId: "={{ $('Extract').item.json.document_id }}",
          binaryPropertyOutput: 'file',
        }),
        docex(
          'Zip',
          { resource: 'document', operation: 'downloadZip', documentIds: ids },
          { executeOnce: true },
        ),
        docex(
          'Rerun',
          {
            resource: 'document',
            operation: 'rerun',
            documentIds: ids,
            additionalFields: { overrideExtraction: true },
          },
          { executeOnce: true },
        ),
        docex(
          'Delete',
          {
            resource: 'document',
            operation: 'delete',
            documentId: "={{ $('Extract').all()[0].json.document_id }}",
          },
          { executeOnce: true },
        ),
      ]),
    );
    const uploads = out(runData, 'Extract');
    // Simplify (the default): plain values, paired with the files read.
    expect(uploads.map((i) => [i.json.document_name, i.json['Invoice number'], i.json.Total]).sort()).toEqual(
      [
        ['invoice-a.txt', 'E2E-A', 10.5],
        ['invoice-b.txt', 'E2E-B', 20],
      ],
    );
    const data = out(runData, 'Get Data').map(
      (i) => i.json as { General_fields: Record<string, { value: unknown }> },
    );
    expect(data.map((d) => d.General_fields['Invoice number']!.value).sort()).toEqual(['E2E-A', 'E2E-B']);
    expect(data.map((d) => d.General_fields.Total!.value).sort()).toEqual([10.5, 20]);
    expect(out(runData, 'Raw Text').map((i) => i.json.text)).toEqual(
      expect.arrayContaining([expect.stringContaining('E2E-A')]),
    );
    const downloads = out(runData, 'Download');
    expect(downloads.map((i) => i.binary?.file?.fileName).sort()).toEqual(['invoice-a.txt', 'invoice-b.txt']);
    const zip = out(runData, 'Zip');
    expect(zip).toHaveLength(1);
    expect(zip[0]!.binary?.data?.mimeType).toBe('application/zip');
    expect(out(runData, 'Rerun')[0]!.json).toMatchObject({ rerun: 2, not_rerun: 0 });
    const deleted = out(runData, 'Delete')[0]!.json;
    expect(deleted).toEqual({ success: true, doc_id: uploads[0]!.json.document_id });
  });

  it('the example workflow runs as shipped, once its folder, template and credential are filled in', async () => {
    const example = JSON.parse(
      await readFile(join(import.meta.dirname, '../../examples/n8n-workflow.json'), 'utf8'),
    ) as {
      nodes: Array<{ type: string; parameters: Record<string, unknown>; credentials?: object }>;
      connections: object;
      name: string;
    };
    // Files of their own: the service would answer DUPLICATE for the ones extracted above.
    await mkdir(join(n8n.filesDir, 'example'));
    await writeFile(join(n8n.filesDir, 'example', 'c.txt'), 'Invoice number: EX-C\nTotal: 5,00\n');
    await writeFile(join(n8n.filesDir, 'example', 'd.txt'), 'Invoice number: EX-D\nTotal: 6,00\n');
    for (const node of example.nodes) {
      if (node.type === 'n8n-nodes-base.readWriteFile')
        node.parameters.fileSelector = join(n8n.filesDir, 'example', '*.txt');
      if (node.type === 'n8n-nodes-docex.docex') {
        node.credentials = CREDENTIAL;
        node.parameters.templateId = { __rl: true, mode: 'id', value: String(templateId) };
      }
    }
    const runData = await execute(
      Object.assign(example, { id: 'wfexample000001', active: false, settings: {} }),
    );
    expect(
      out(runData, 'Extract')
        .map((i) => i.json['Invoice number'])
        .sort(),
    ).toEqual(['EX-C', 'EX-D']);
    expect(n8n.emulator.stats().requestsByOperation.delete_doc).toBe(1);
  });
});
