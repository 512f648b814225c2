/**
 * Runs the chosen operation over the input items: at most "Items in Parallel" items at once (1 by
 * default, never unbounded), each item's outputs paired with it, and a failed item either stops the
 * run with a NodeApiError / NodeOperationError or, with Continue On Fail, becomes an error item.
 */
import {
  NodeOperationError,
  type IDataObject,
  type IExecuteFunctions,
  type INodeExecutionData,
} from 'n8n-workflow';
import type { DocexClient } from '@docex/shared';
import { docexClient } from '../transport/index.ts';
import * as account from './account/Account.resource.ts';
import * as agent from './agent/Agent.resource.ts';
import { MAX_CONCURRENCY } from './common.descriptions.ts';
import { errorItem, jsonItem, readInput, toNodeError } from './common.execute.ts';
import * as document from './document/Document.resource.ts';
import * as field from './field/Field.resource.ts';
import * as folder from './folder/Folder.resource.ts';
import * as instruction from './instruction/Instruction.resource.ts';
import { keepInput } from './keepInput.ts';
import type { ApiInput, NodeOperation } from './node.type.ts';
import { mapLimit } from './pool.ts';
import { isMarkedForReview, routing } from './review.ts';
import * as task from './task/Task.resource.ts';
import * as template from './template/Template.resource.ts';

export const resources = { account, agent, document, field, folder, instruction, task, template };

export const allOperations: NodeOperation[] = Object.values(resources).flatMap((r) => r.operations);

/** The plain call: JSON answers as one item, an empty answer as `{ success: true }` with the IDs sent. */
async function callApi(op: NodeOperation, client: DocexClient, i: number, input: ApiInput) {
  const result: unknown = await client.call(op.api.name as never, input as never);
  if (op.api.output === 'empty' || result === '' || result === undefined) {
    const ids = Object.fromEntries(
      op.api.params
        .filter((p) => p.required && p.kind === 'integer')
        .map((p) => [p.name, Number(input[p.name])]),
    );
    return [jsonItem(i, { success: true, ...ids })];
  }
  return [jsonItem(i, result)];
}

export async function router(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
  const items = this.getInputData();
  const resource = this.getNodeParameter('resource', 0) as string;
  const operation = this.getNodeParameter('operation', 0) as string;
  const op = allOperations.find((o) => o.value === operation && o.resource.toLowerCase() === resource);
  if (!op)
    throw new NodeOperationError(
      this.getNode(),
      `The operation "${operation}" of "${resource}" is not known`,
    );
  const options = this.getNodeParameter('options', 0, {}) as IDataObject;
  const concurrency = Math.min(
    MAX_CONCURRENCY,
    Math.max(1, Math.floor(Number(options.concurrency ?? 1)) || 1),
  );
  const client = await docexClient(this);

  const results = await mapLimit(items, concurrency, async (_item, i) => {
    try {
      const input = await readInput(this, i, op);
      const out = await (op.run ? op.run(this, client, i, input) : callApi(op, client, i, input));
      return op.keepsInput ? keepInput(this, i, out) : out;
    } catch (error) {
      const nodeError = toNodeError(this, error, i);
      if (this.continueOnFail()) return [errorItem(nodeError, i)];
      throw nodeError;
    }
  });
  const all = results.flat();
  if (!(op.reviews && routing(this))) return [all];
  // Two outputs, as declared by the node's outputs expression (review.ts): Done, Needs Review.
  return [all.filter((item) => !isMarkedForReview(item)), all.filter(isMarkedForReview)];
}
