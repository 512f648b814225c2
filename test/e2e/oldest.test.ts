/**
 * The smoke set on the oldest n8n the docs support (OLDEST_N8N of n8n-instance.ts; the rest of the
 * suite runs on the newest, N8N_VERSION): the package loads, Extract extracts a file, the trigger's
 * Fetch Test Event emits, and an AI Agent calls the node as its tool. The registry install on the
 * oldest is test/e2e/registry.test.ts's. One shared n8n of that version (configuration `oldest`).
 */
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { createInvoiceTemplate, startFileServer, type FileServer } from './invoices.ts';
import { OLDEST_N8N } from './n8n-instance.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
import { extractThenAnswer, importOpenAiCredential, startStandInModel, type StandInModel } from './stand-in-model.ts';
import { agentExtractWorkflow, outputOf, readAndExtract, templateById, triggerWorkflow } from './workflows.ts';

let n8n: SharedN8n;
let model: StandInModel;
let files: FileServer;
let templateId = 0;
const OPENAI = { openAiApi: { id: 'openaicredoldest1', name: 'Stand-in model' } };

beforeAll(async () => {
  [n8n, model, files] = await Promise.all([
    sharedN8n({ taskDelayMs: 20 }, 'oldest'),
    startStandInModel(extractThenAnswer('Extract_Invoice')),
    startFileServer({ '/invoices/oldest-agent.txt': 'Invoice number: OLD-AGENT\nTotal: 7,00\n' }),
  ]);
  templateId = await createInvoiceTemplate(n8n.emulator, 'oldest e2e');
  await importOpenAiCredential(n8n, OPENAI.openAiApi, model.url);
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await n8n?.cleanup();
  await model?.stop();
  await files?.stop();
});

describe(`the smoke set on the oldest n8n the docs support (${OLDEST_N8N})`, () => {
  it('runs that version', () => {
    expect(n8n.version).toBe(OLDEST_N8N);
  });

  it('the package loads and Extract extracts a file read from disk', async () => {
    const file = join(n8n.filesDir, 'oldest.txt');
    await writeFile(file, 'Invoice number: OLD-1\nTotal: 4,20\n');
    const runData = await n8n.execute(readAndExtract('wfoldestextract', file, templateId));
    expect(outputOf(runData, 'Extract')[0]!.json).toMatchObject({
      document_name: 'oldest.txt',
      'Invoice number': 'OLD-1',
      Total: 4.2,
    });
  });

  it("the trigger's Fetch Test Event emits the template's documents", async () => {
    const client = createNodeClient({ baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0]! });
    await client.uploadAndWait(
      {
        files: [{ data: new TextEncoder().encode('Invoice number: OLD-T\n'), fileName: 't.txt' }],
        template_id: templateId,
      },
      { intervalMs: 20 },
    );
    const trigger = 'Docex Trigger';
    const workflow = triggerWorkflow('wfoldesttrigger', trigger, {
      event: 'newDocument',
      templateId: templateById(templateId),
    });
    await n8n.importWorkflow(workflow);
    const execution = await n8n.rest.run(workflow.id, {
      triggerToStartFrom: { name: trigger },
      destinationNode: { nodeName: trigger, mode: 'inclusive' },
    });
    expect(execution.status, execution.error).toBe('success');
    expect(outputOf(execution.runData, trigger).map((i) => i.json['Invoice number'])).toContain('OLD-T');
  });

  it("an AI Agent calls Extract as its tool with the model's link", async () => {
    const fileUrl = `${files.url}/invoices/oldest-agent.txt`;
    const runData = await n8n.execute(
      agentExtractWorkflow('wfoldestagent01', { fileUrl, templateId, openAi: OPENAI }),
    );
    expect(model.answers).toEqual(['tool call', 'text']);
    expect(files.requests).toContain('/invoices/oldest-agent.txt');
    expect(outputOf(runData, 'AI Agent')[0]!.json).toEqual({
      output: 'The invoice number is OLD-AGENT and the total is 7.',
    });
  });
});
