import type { TaskResult } from '@docex/shared';
import { resourceProperties } from '../common.descriptions.ts';
import { jsonItem } from '../common.execute.ts';
import { fromTable } from '../resource.ts';
import { SIMPLIFY, simplifyDocument } from '../simplify.ts';

export const operations = fromTable('Task', {
  fetch_tasks_results: {
    extraProperties: [SIMPLIFY],
    run: async (ctx, client, i, input) => {
      const result = (await client.call('fetch_tasks_results', input as never)) as TaskResult;
      if (!ctx.getNodeParameter('simplify', i, true)) return [jsonItem(i, result)];
      const { status, status_message } = result;
      return [jsonItem(i, { status, status_message, ...simplifyDocument(result) })];
    },
  },
});

export const description = resourceProperties('Task', operations);
