/** Workflows the real-n8n tests import. */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
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
