/**
 * The node as an AI Agent's tool in a real n8n (the run's shared n8n, test/e2e/shared.ts;
 * the workflow runs as the editor's Run button runs it): the agent's chat model is a scripted
 * stand-in (test/e2e/stand-in-model.ts) behind n8n's own OpenAI Chat Model node and credential; the
 * document comes from a file server started here, the service is the emulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOOL_DESCRIPTIONS } from '../../nodes/Docex/actions/tool.ts';
import { createInvoiceTemplate, startFileServer, type FileServer } from './invoices.ts';
import { N8N_VERSION } from './n8n-instance.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
import {
  extractThenAnswer,
  importOpenAiCredential,
  startStandInModel,
  textOf,
  type StandInModel,
} from './stand-in-model.ts';
import { agentExtractWorkflow, outputOf } from './workflows.ts';

let n8n: SharedN8n;
let model: StandInModel;
let files: FileServer;
let templateId = 0;
const OPENAI = { openAiApi: { id: 'openaicred000001', name: 'Stand-in model' } };

beforeAll(async () => {
  files = await startFileServer({ '/invoices/agent-1.txt': 'Invoice number: AGENT-1\nTotal: 10,50\n' });
  model = await startStandInModel(extractThenAnswer('Extract_Invoice'));
  n8n = await sharedN8n();
  templateId = await createInvoiceTemplate(n8n.emulator, 'agent e2e');

  await importOpenAiCredential(n8n, OPENAI.openAiApi, model.url);
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await n8n?.cleanup();
  await model?.stop();
  await files?.stop();
});

describe(`the package as an AI Agent's tool in a real n8n ${N8N_VERSION}`, () => {
  it('an AI Agent is offered Extract with its hand-written description and calls it with the link', async () => {
    const fileUrl = `${files.url}/invoices/agent-1.txt`;
    const runData = await n8n
      .execute(agentExtractWorkflow('wfagent000000001', { fileUrl, templateId, openAi: OPENAI }))
      .catch((error: Error) => {
        // What the stand-in model saw and said: the first thing to read when the agent fails.
        const seen = model.requests.map((r) => ({
          tools: r.tools?.map((t) => t.function),
          messages: r.messages,
        }));
        throw new Error(
          `${error.message}\nmodel answers: ${JSON.stringify(model.answers)}\nrequests: ${JSON.stringify(seen).slice(0, 4000)}`,
        );
      });
    expect(model.answers).toEqual(['tool call', 'text']);
    // What the model was offered: our tool, with the hand-written description and a url parameter.
    const offered = model.requests[0]!.tools!.map((t) => t.function);
    expect(offered).toEqual([
      expect.objectContaining({
        name: 'Extract_Invoice',
        description: TOOL_DESCRIPTIONS['document:extract'],
        parameters: expect.objectContaining({
          properties: expect.objectContaining({ url: expect.objectContaining({ type: 'string' }) }),
        }),
      }),
    ]);
    // The call reached the node with the model's argument: it downloaded exactly that link.
    expect(files.requests).toContain('/invoices/agent-1.txt');
    // The tool's answer, as the model was handed it: our node's simplified item.
    const toolMessage = model.requests[1]!.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(textOf(toolMessage!))).toEqual([
      expect.objectContaining({ document_name: 'agent-1.txt', 'Invoice number': 'AGENT-1', Total: 10.5 }),
    ]);
    // The agent's final answer carries the extracted values (the stand-in builds it from the tool's answer).
    expect(outputOf(runData, 'AI Agent')[0]!.json).toEqual({
      output: 'The invoice number is AGENT-1 and the total is 10.5.',
    });
  }, 300_000);
});
