/**
 * The workflows of examples/ in a real n8n, imported from the shipped files with only what a
 * builder fills in after an import changed (credentials, template, file paths: workflows.ts,
 * `exampleWorkflow`), in the run's shared n8n (test/e2e/shared.ts): those that start by hand run
 * from their manual trigger against the emulator, as the editor's Run button runs them; those that
 * start on a trigger are published and must be active in the running n8n without an activation
 * error. The agent example also runs, its chat trigger replaced by a chat message, with the
 * stand-in model (test/e2e/stand-in-model.ts).
 */
import { readdirSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInvoiceTemplate, startFileServer, type FileServer } from './invoices.ts';
import { N8N_VERSION } from './n8n-instance.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
import {
  extractThenAnswer,
  importOpenAiCredential,
  startStandInModel,
  type StandInModel,
} from './stand-in-model.ts';
import { exampleWorkflow, link, manualStart, outputOf } from './workflows.ts';

const examplesDir = join(import.meta.dirname, '../../examples');
const OPENAI = { openAiApi: { id: 'openaicred000002', name: 'Stand-in model' } };
/** The notify example's credentials: a webhook token and an SMTP server (never reached: only activated). */
const NOTIFY = {
  httpHeaderAuth: { id: 'hdrauthcred00001', name: 'docex-sync webhook token' },
  smtp: { id: 'smtpcred00000001', name: 'SMTP' },
};

let n8n: SharedN8n;
let model: StandInModel;
let files: FileServer;
let templateId = 0;

beforeAll(async () => {
  files = await startFileServer({
    '/invoices/chat-1.txt': 'Invoice number: CHAT-1\nTotal: 42,00\n',
  });
  model = await startStandInModel(extractThenAnswer('Extract_Document'));
  n8n = await sharedN8n();
  templateId = await createInvoiceTemplate(n8n.emulator, 'examples e2e');
  await importOpenAiCredential(n8n, OPENAI.openAiApi, model.url);
  await n8n.createCredential({
    ...NOTIFY.httpHeaderAuth,
    type: 'httpHeaderAuth',
    data: { name: 'X-Docex-Token', value: 'e2e' },
  });
  await n8n.createCredential({
    ...NOTIFY.smtp,
    type: 'smtp',
    data: { host: '127.0.0.1', port: 25, user: '', password: '' },
  });
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await n8n?.cleanup();
  await model?.stop();
  await files?.stop();
});

/** A one-page PDF whose text is `lines` (what the emulator reads: text runs of a content stream). */
const pdf = (lines: string[]) =>
  [
    '%PDF-1.4',
    '1 0 obj',
    '<< /Length 0 >>',
    'stream',
    'BT /F1 11 Tf 50 780 Td 14 TL',
    ...lines.map((l) => `(${l}) Tj T*`),
    'ET',
    'endstream',
    'endobj',
    '%%EOF',
    '',
  ].join('\n');

describe(`examples/ in a real n8n ${N8N_VERSION}`, () => {
  it('n8n-review-route.json books the sure invoice and sends the others to a person, each with its reasons', async () => {
    const dir = join(n8n.filesDir, 'invoices');
    await mkdir(dir);
    // One PDF that passes the example's rules, one without an invoice number, one whose lines do not add up.
    await writeFile(
      join(dir, 'sure.pdf'),
      pdf(['Invoice number: SURE-1', 'Total: 99,90', 'Consulting hour | 99,90']),
    );
    await writeFile(join(dir, 'no-number.pdf'), pdf(['Total: 20,00', 'Pens | 20,00']));
    await writeFile(
      join(dir, 'lines-off.pdf'),
      pdf(['Invoice number: OFF-1', 'Total: 99,90', 'Consulting hour | 50,00']),
    );
    const runData = await n8n.execute(
      await exampleWorkflow('n8n-review-route.json', 'wfexreview000001', {
        templateId,
        filesDir: n8n.filesDir,
      }),
    );
    const booked = outputOf(runData, 'Book the Invoice');
    expect(booked.map((i) => i.json)).toEqual([
      expect.objectContaining({
        document_name: 'sure.pdf',
        'Invoice number': 'SURE-1',
        Total: 99.9,
        confidence: expect.objectContaining({ 'Invoice number': 0.95, Total: 0.95 }),
      }),
    ]);
    // Include Input Binary Files: the PDF travels on with the data.
    expect(booked[0]!.binary?.data).toMatchObject({ fileName: 'sure.pdf', mimeType: 'application/pdf' });
    const review = outputOf(runData, 'Send to a Person');
    const reasons = Object.fromEntries(
      review.map((i) => [
        i.json.document_name,
        (i.json.review_reasons as Array<{ rule: string }>).map((r) => r.rule),
      ]),
    );
    // The emulator gives a missing field a confidence of 0.1 and scores fraud from the content's hash:
    // deterministic for these bytes, and lines-off.pdf happens to score MEDIUM_RISK.
    expect(reasons).toEqual({
      'no-number.pdf': ['minConfidence', 'requiredFields'],
      'lines-off.pdf': ['fraud', 'lineTotal'],
    });
    expect(review.every((i) => i.binary?.data?.mimeType === 'application/pdf')).toBe(true);
  }, 300_000);

  it('n8n-long-extraction-upload.json uploads the scans without waiting, with metadata to correlate', async () => {
    const dir = join(n8n.filesDir, 'scans');
    await mkdir(dir);
    await copyFile(join(examplesDir, 'samples', 'invoice-initech-09.pdf'), join(dir, 'initech.pdf'));
    const uploadsBefore = n8n.emulator.stats().requestsByOperation.upload_file ?? 0;
    const runData = await n8n.execute(
      await exampleWorkflow('n8n-long-extraction-upload.json', 'wfexupload000001', {
        templateId,
        filesDir: n8n.filesDir,
      }),
    );
    const [uploaded] = outputOf(runData, 'Remember the Task IDs');
    expect(JSON.stringify(uploaded!.json)).toMatch(/task/i);
    expect(n8n.emulator.stats().requestsByOperation.upload_file).toBe(uploadsBefore + 1);
  }, 300_000);

  it('n8n-agent.json answers a chat message with the values its Extract Document tool returned', async () => {
    const example = await exampleWorkflow('n8n-agent.json', 'wfexagent0000001', {
      templateId,
      credentials: OPENAI,
    });
    // `n8n execute` cannot wait for a chat: a manual start and the message the chat trigger would emit.
    const chat = example.nodes.find((n) => n.type === '@n8n/n8n-nodes-langchain.chatTrigger')!;
    const question = `What are the invoice number and the total of ${files.url}/invoices/chat-1.txt ?`;
    Object.assign(chat, {
      type: 'n8n-nodes-base.set',
      typeVersion: 3.4,
      parameters: {
        assignments: {
          assignments: [
            { id: 'c1', name: 'chatInput', value: question, type: 'string' },
            { id: 'c2', name: 'sessionId', value: 'e2e', type: 'string' },
          ],
        },
        options: {},
      },
    });
    example.nodes.push(manualStart as never);
    example.connections.Start = { main: [link(chat.name)] };
    const runData = await n8n.execute(example).catch((error: Error) => {
      throw new Error(`${error.message}\nmodel answers: ${JSON.stringify(model.answers)}`);
    });
    // The model was offered the four tools of the example, with their hand-written descriptions.
    expect(model.requests[0]!.tools!.map((t) => t.function.name).sort()).toEqual([
      'Extract_Document',
      'Get_Document_Data',
      'List_Documents',
      'Rerun_Documents',
    ]);
    expect(files.requests).toContain('/invoices/chat-1.txt');
    expect(outputOf(runData, 'AI Agent')[0]!.json).toEqual({
      output: 'The invoice number is CHAT-1 and the total is 42.',
    });
  }, 300_000);

  it('the examples that start on a trigger are active in the running n8n, without an activation error', async () => {
    const triggered = {
      'n8n-trigger.json': 'wfextrigger00001',
      'n8n-long-extraction-trigger.json': 'wfexlongtrig0001',
      'n8n-agent.json': 'wfexagentchat001',
      'n8n-notify-workflow.json': 'wfexnotify000001',
    };
    // Published as the editor's Publish button does; each waits until n8n activated its trigger
    // (and fails with the trigger's error if it could not).
    await Promise.all(
      Object.entries(triggered).map(async ([file, id]) => {
        await n8n.importWorkflow(
          await exampleWorkflow(file, id, { templateId, credentials: { ...OPENAI, ...NOTIFY } }),
        );
        await n8n.publish(id);
      }),
    );
    const rest = (path: string) => n8n.rest.call<unknown>('GET', path);
    for (const id of Object.values(triggered))
      expect((await rest(`/active-workflows/error/${id}`)) ?? null, id).toBeNull();
    // Active and free of activation errors (n8n lists only those).
    expect(await rest('/active-workflows')).toEqual(expect.arrayContaining(Object.values(triggered)));
  }, 600_000);

  it('every workflow in examples/ is run or activated by a test', () => {
    const covered = [
      // run or activated in this file
      'n8n-review-route.json',
      'n8n-long-extraction-upload.json',
      'n8n-agent.json',
      'n8n-trigger.json',
      'n8n-long-extraction-trigger.json',
      // test/e2e/n8n.test.ts runs it as shipped
      'n8n-workflow.json',
      'n8n-notify-workflow.json', // activated here; its Code node runs in test/daemon/outputs/notify.test.ts
    ];
    const shipped = readdirSync(examplesDir).filter((f) => /^n8n-.*\.json$/.test(f));
    expect(shipped.sort()).toEqual(covered.sort());
  });
});
