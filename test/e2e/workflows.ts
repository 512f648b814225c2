/** Workflows the real-n8n tests import. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { TOOL_DESCRIPTIONS } from '../../nodes/Docex/actions/tool.ts';
import { CREDENTIAL, type RunData } from './real-n8n.ts';

/** The Docex trigger, polling every minute, into a No Operation node named "Done". */
export const triggerWorkflow = (id: string, triggerName: string, parameters: Record<string, unknown>) => ({
  id,
  name: id,
  active: false,
  nodes: [
    {
      parameters: { pollTimes: { item: [{ mode: 'everyMinute' }] }, ...parameters },
      id: 'trigger',
      name: triggerName,
      type: 'n8n-nodes-docex.docexTrigger',
      typeVersion: 1,
      position: [0, 0],
      credentials: CREDENTIAL,
    },
    {
      parameters: {},
      id: 'noop',
      name: 'Done',
      type: 'n8n-nodes-base.noOp',
      typeVersion: 1,
      position: [200, 0],
    },
  ],
  connections: { [triggerName]: { main: [[{ node: 'Done', type: 'main', index: 0 }]] } },
  settings: {},
});

/** A template picked by ID, as the node's resource locator saves it. */
export const templateById = (id: number) => ({ __rl: true, mode: 'id', value: String(id) });
/**
 * The template as picked from the list: no "By ID" pattern for n8n to check. n8n checks such a
 * pattern in a vm with a 250 ms limit (n8n-workflow's safe-regex), which a heap busy with a 200 MB
 * file on a loaded machine ran past once ("Regular expression execution timed out").
 */
export const templateFromList = (id: number) => ({ __rl: true, mode: 'list', value: String(id) });

export const manualStart = {
  parameters: {},
  id: 'start',
  name: 'Start',
  type: 'n8n-nodes-base.manualTrigger',
  typeVersion: 1,
  position: [0, 0],
};

/** A connection list to `node` (of `type`, into its input `index`). */
export const link = (node: string, index = 0, type = 'main') => [{ node, type, index }];

/** The items of a node's first run on one of its outputs; fails when the node did not run. */
export const outputOf = (runData: RunData, node: string, output = 0) => {
  expect(runData[node], `node ${node} ran`).toBeDefined();
  return runData[node]![0]!.data!.main[output] ?? [];
};

interface ExampleNode {
  name: string;
  type: string;
  parameters: Record<string, unknown> & { additionalFields?: Record<string, unknown> };
  credentials?: Record<string, { id: string; name: string }>;
}
export interface ExampleWorkflow {
  id: string;
  name: string;
  active: boolean;
  nodes: ExampleNode[];
  connections: Record<string, unknown>;
  settings?: Record<string, unknown>;
  [key: string]: unknown;
}

/**
 * A workflow of examples/ filled in the way its builder would after importing it: the Docex
 * credential of the test's n8n, `templateId` wherever a Docex node picks a template, file paths
 * under `/files/` moved into `filesDir`, and any other credential from `credentials` (by type).
 * Everything else stays as shipped.
 */
export async function exampleWorkflow(
  file: string,
  id: string,
  fill: {
    templateId: number;
    filesDir?: string;
    credentials?: Record<string, { id: string; name: string }>;
  },
): Promise<ExampleWorkflow> {
  const shipped = JSON.parse(
    await readFile(join(import.meta.dirname, '../../examples', file), 'utf8'),
  ) as ExampleWorkflow;
  const credentials = { ...CREDENTIAL, ...fill.credentials };
  for (const node of shipped.nodes) {
    for (const type of Object.keys(node.credentials ?? {})) {
      const credential = credentials[type as keyof typeof credentials];
      if (!credential) throw new Error(`${file}: node "${node.name}" needs a ${type} credential`);
      node.credentials![type] = credential;
    }
    if (!node.type.startsWith('n8n-nodes-docex.')) continue;
    const { parameters } = node;
    if (parameters.templateId) parameters.templateId = templateById(fill.templateId);
    if (parameters.additionalFields?.templateId)
      parameters.additionalFields.templateId = templateById(fill.templateId);
  }
  for (const node of shipped.nodes) {
    const selector = node.parameters.fileSelector;
    if (typeof selector === 'string' && selector.startsWith('/files/')) {
      if (!fill.filesDir) throw new Error(`${file}: node "${node.name}" reads ${selector}: give filesDir`);
      node.parameters.fileSelector = join(fill.filesDir, selector.slice('/files/'.length));
    }
  }
  return { ...shipped, id, active: false };
}

/**
 * Start → Read/Write Files from Disk (`fileSelector`) → Docex Extract with the invoice template
 * `templateId`: a file extracted the way a builder's first workflow does it. Extract's output is
 * node "Extract".
 */
export const readAndExtract = (
  id: string,
  fileSelector: string,
  templateId: number,
  template: (id: number) => object = templateById,
) => ({
  id,
  name: id,
  active: false,
  nodes: [
    manualStart,
    {
      parameters: { fileSelector, options: {} },
      id: 'read',
      name: 'Read File',
      type: 'n8n-nodes-base.readWriteFile',
      typeVersion: 1,
      position: [200, 0],
    },
    {
      parameters: {
        resource: 'document',
        operation: 'extract',
        binaryPropertyName: 'data',
        templateId: template(templateId),
        options: { pollInterval: 0.2, waitTimeout: 120 },
      },
      id: 'extract',
      name: 'Extract',
      type: 'n8n-nodes-docex.docex',
      typeVersion: 1,
      position: [400, 0],
      credentials: CREDENTIAL,
    },
  ],
  connections: { Start: { main: [link('Read File')] }, 'Read File': { main: [link('Extract')] } },
  settings: {},
});

/**
 * Start → AI Agent asking for the invoice at `fileUrl`, its chat model n8n's OpenAI Chat Model (with
 * the credential `openAi`, pointed at a stand-in model: stand-in-model.ts), and its one tool our
 * Extract (docexTool) with the URL the model gives and the invoice template `templateId`.
 */
export const agentExtractWorkflow = (
  id: string,
  {
    fileUrl,
    templateId,
    openAi,
  }: { fileUrl: string; templateId: number; openAi: { openAiApi: { id: string; name: string } } },
) => ({
  id,
  name: id,
  active: false,
  nodes: [
    manualStart,
    {
      parameters: {
        promptType: 'define',
        text: `What are the invoice number and the total of the invoice at ${fileUrl} ?`,
        options: {},
      },
      id: 'agent',
      name: 'AI Agent',
      type: '@n8n/n8n-nodes-langchain.agent',
      typeVersion: 3.1,
      position: [200, 0],
    },
    {
      parameters: { model: { __rl: true, mode: 'id', value: 'stand-in-1' }, options: {} },
      id: 'model',
      name: 'Chat Model',
      type: '@n8n/n8n-nodes-langchain.lmChatOpenAi',
      typeVersion: 1.2,
      position: [200, 200],
      credentials: openAi,
    },
    {
      parameters: {
        resource: 'document',
        operation: 'extract',
        source: 'url',
        fileUrl: "={{ $fromAI('url', 'Link to the invoice file', 'string') }}",
        // Saved as the examples do: n8n 2.40.7 falls back to "<action> in Document Extraction"
        // when a workflow carries no toolDescription (seen here before it was set).
        descriptionType: 'manual',
        toolDescription: TOOL_DESCRIPTIONS['document:extract'],
        templateId: templateById(templateId),
        options: { pollInterval: 0.2, waitTimeout: 60 },
      },
      id: 'tool',
      name: 'Extract Invoice',
      type: 'n8n-nodes-docex.docexTool',
      typeVersion: 1,
      position: [400, 200],
      credentials: CREDENTIAL,
    },
  ],
  connections: {
    Start: { main: [link('AI Agent')] },
    'Chat Model': { ai_languageModel: [link('AI Agent', 0, 'ai_languageModel')] },
    'Extract Invoice': { ai_tool: [link('AI Agent', 0, 'ai_tool')] },
  },
  // What the editor saves for every new workflow. Without it (n8n's legacy order "v0") the agent is
  // resumed before its tool has run and the model is handed '""' as the tool's answer:
  // docs/n8n.md, "As an AI agent's tool".
  settings: { executionOrder: 'v1' },
});
