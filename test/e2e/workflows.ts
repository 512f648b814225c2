/** Workflows the real-n8n tests import. */
import { CREDENTIAL } from './real-n8n.ts';

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
