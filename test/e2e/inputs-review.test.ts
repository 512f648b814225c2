/**
 * Keep the input, Extract from a URL and Route for Review's two outputs in a real n8n
 * (the run's shared n8n, test/e2e/shared.ts; workflows run as the editor's Run button runs them),
 * against the emulator and a file server started here.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvoiceTemplate, startFileServer, type FileServer } from './invoices.ts';
import { CREDENTIAL } from './real-n8n.ts';
import { N8N_VERSION } from './n8n-instance.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
import { link, manualStart, outputOf, templateById } from './workflows.ts';

let n8n: SharedN8n;
let files: FileServer;
let templateId = 0;

beforeAll(async () => {
  files = await startFileServer({
    '/invoices/url-1.txt': 'Invoice number: URL-1\nTotal: 12,00\n',
    '/invoices/url-2.txt': 'Total: 5,00\nno number on this one\n',
  });
  n8n = await sharedN8n();
  templateId = await createInvoiceTemplate(n8n.emulator, 'inputs e2e');
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await n8n?.cleanup();
  await files?.stop();
});

const noOp = (name: string, x: number, y = 0) => ({
  parameters: {},
  id: name.toLowerCase().replace(/\W/g, ''),
  name,
  type: 'n8n-nodes-base.noOp',
  typeVersion: 1,
  position: [x, y],
});
const docex = (name: string, parameters: Record<string, unknown>, x: number) => ({
  parameters,
  id: name.toLowerCase().replace(/\W/g, ''),
  name,
  type: 'n8n-nodes-docex.docex',
  typeVersion: 1,
  position: [x, 0],
  credentials: CREDENTIAL,
});
describe(`the second round in a real n8n ${N8N_VERSION}`, () => {
  it('Extract from URLs keeps the input fields and routes the document without a number to "Needs Review"', async () => {
    const runData = await n8n.execute({
      id: 'wfreview00000001',
      name: 'review route',
      active: false,
      nodes: [
        manualStart,
        {
          parameters: {
            assignments: {
              assignments: [
                { id: 'a1', name: 'customer', value: 'ACME', type: 'string' },
                {
                  id: 'a2',
                  name: 'links',
                  value: `={{ ['${files.url}/invoices/url-1.txt', '${files.url}/invoices/url-2.txt?sig=s3cret'] }}`,
                  type: 'array',
                },
              ],
            },
            options: {},
          },
          id: 'set',
          name: 'Links',
          type: 'n8n-nodes-base.set',
          typeVersion: 3.4,
          position: [200, 0],
        },
        {
          parameters: { fieldToSplitOut: 'links', include: 'allOtherFields', options: {} },
          id: 'split',
          name: 'One per Link',
          type: 'n8n-nodes-base.splitOut',
          typeVersion: 1,
          position: [400, 0],
        },
        docex(
          'Extract',
          {
            resource: 'document',
            operation: 'extract',
            source: 'url',
            fileUrl: '={{ $json.links }}',
            templateId: templateById(templateId),
            routeForReview: true,
            reviewMinConfidence: 0,
            reviewRequiredFields: 'Invoice number',
            reviewFraud: false,
            options: {
              pollInterval: 0.2,
              waitTimeout: 60,
              includeOtherFields: true,
              includeConfidence: true,
            },
          },
          600,
        ),
        noOp('Done', 800, -100),
        noOp('Review', 800, 100),
      ],
      connections: {
        Start: { main: [link('Links')] },
        Links: { main: [link('One per Link')] },
        'One per Link': { main: [link('Extract')] },
        Extract: { main: [link('Done'), link('Review')] },
      },
      settings: {},
    });
    const done = outputOf(runData, 'Extract', 0);
    const review = outputOf(runData, 'Extract', 1);
    expect(done.map((i) => i.json)).toEqual([
      expect.objectContaining({
        customer: 'ACME',
        links: `${files.url}/invoices/url-1.txt`,
        document_name: 'url-1.txt',
        'Invoice number': 'URL-1',
        confidence: expect.objectContaining({ 'Invoice number': 0.95 }),
      }),
    ]);
    expect(review.map((i) => i.json)).toEqual([
      expect.objectContaining({
        customer: 'ACME',
        document_name: 'url-2.txt',
        review_reasons: [
          { rule: 'requiredFields', field: 'Invoice number', value: '', message: 'Invoice number is empty' },
        ],
      }),
    ]);
    // Each output reached the node wired to it.
    expect(outputOf(runData, 'Done')).toHaveLength(1);
    expect(outputOf(runData, 'Review')).toHaveLength(1);
    expect(files.requests).toEqual(
      expect.arrayContaining(['/invoices/url-1.txt', '/invoices/url-2.txt?sig=s3cret']),
    );
  }, 300_000);

  it('Extract keeps the input binary file with Include Input Binary Files', async () => {
    await writeFile(join(n8n.filesDir, 'keep.txt'), 'Invoice number: KEEP-1\nTotal: 3,00\n');
    const runData = await n8n.execute({
      id: 'wfkeepinput00001',
      name: 'keep input',
      active: false,
      nodes: [
        manualStart,
        {
          parameters: { fileSelector: join(n8n.filesDir, 'keep.txt'), options: {} },
          id: 'read',
          name: 'Read File',
          type: 'n8n-nodes-base.readWriteFile',
          typeVersion: 1,
          position: [200, 0],
        },
        docex(
          'Extract',
          {
            resource: 'document',
            operation: 'extract',
            templateId: templateById(templateId),
            options: { pollInterval: 0.2, waitTimeout: 60, includeBinary: true },
          },
          400,
        ),
      ],
      connections: { Start: { main: [link('Read File')] }, 'Read File': { main: [link('Extract')] } },
      settings: {},
    });
    const [item] = outputOf(runData, 'Extract');
    expect(item!.json).toMatchObject({ document_name: 'keep.txt', 'Invoice number': 'KEEP-1' });
    expect(item!.binary?.data).toMatchObject({ fileName: 'keep.txt' });
  }, 300_000);
});
