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
import type { ApiInput, BatchRunner, ItemEnd, NodeOperation } from './node.type.ts';
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

/**
 * All items at once (Extract): every item's input is read first, the operation runs them together,
 * and the ends are settled in item order, so the first failing item (without Continue On Fail)
 * stops the run with its own error, as one at a time it would.
 */
async function runTogether(
  ctx: IExecuteFunctions,
  op: NodeOperation,
  runAll: BatchRunner,
  client: DocexClient,
  count: number,
  concurrency: number,
  settle: (i: number, end: ItemEnd) => INodeExecutionData[],
) {
  const read = await mapLimit(
    Array.from({ length: count }, (_, i) => i),
    concurrency,
    async (i): Promise<{ i: number; input: ApiInput } | { i: number; error: unknown }> => {
      try {
        return { i, input: await readInput(ctx, i, op) };
      } catch (error) {
        return { i, error };
      }
    },
  );
  const entries = read.filter((r): r is { i: number; input: ApiInput } => 'input' in r);
  const ran = await runAll(ctx, client, entries);
  const ends = new Map<number, ItemEnd>(read.filter((r) => 'error' in r).map((r) => [r.i, r as ItemEnd]));
  entries.forEach((entry, k) => ends.set(entry.i, ran[k]!));
  return Array.from({ length: count }, (_, i) => settle(i, ends.get(i)!));
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

  const settle = (i: number, end: ItemEnd) => {
    if ('items' in end) return op.keepsInput ? keepInput(this, i, end.items) : end.items;
    const nodeError = toNodeError(this, end.error, i);
    if (this.continueOnFail()) return [errorItem(nodeError, i)];
    throw nodeError;
  };
  const results = op.runAll
    ? await runTogether(this, op, op.runAll, client, items.length, concurrency, settle)
    : await mapLimit(items, concurrency, async (_item, i) => {
        try {
          const input = await readInput(this, i, op);
          const out = await (op.run ? op.run(this, client, i, input) : callApi(op, client, i, input));
          return settle(i, { items: out });
        } catch (error) {
          return settle(i, { error });
        }
      });
  const all = results.flat();
  if (!(op.reviews && routing(this))) return [all];
  // Two outputs, as declared by the node's outputs expression (review.ts): Done, Needs Review.
  return [all.filter((item) => !isMarkedForReview(item)), all.filter(isMarkedForReview)];
}
