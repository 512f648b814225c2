/** Workflows the real-n8n tests import. */
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
