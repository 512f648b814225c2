/**
 * Keep the input: the input item's JSON fields and binary files carried over to the output items, so
 * a workflow can extract a file and then archive or mail the same file without a Merge node. Named
 * after n8n's Set / Edit Fields options ("Include Other Input Fields", "Include Binary File"). Off by
 * default: saved workflows keep today's output. The node's own keys and output binary win a clash.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';

export const keepInputOptions: INodeProperties[] = [
  {
    displayName: 'Include Other Input Fields',
    name: 'includeOtherFields',
    type: 'boolean',
    default: false,
    description:
      "Whether to pass the input item's fields through to the output; a field the node puts out itself keeps the node's value",
  },
  {
    displayName: 'Include Input Binary Files',
    name: 'includeBinary',
    type: 'boolean',
    default: false,
    description:
      "Whether to pass the input item's binary files (such as the uploaded document) through to the output",
  },
];

/** The output items of item `i` with its input fields and/or binary added, as the options say. */
export function keepInput(
  ctx: IExecuteFunctions,
  i: number,
  items: INodeExecutionData[],
): INodeExecutionData[] {
  const opts = ctx.getNodeParameter('options', i, {}) as IDataObject;
  const fields = opts.includeOtherFields === true;
  const binary = opts.includeBinary === true;
  if (!fields && !binary) return items;
  const input = ctx.getInputData()[i];
  if (!input) return items;
  for (const item of items) {
    // In place: the item may be marked for the review output (review.ts keeps it by identity).
    if (fields) item.json = Object.assign({}, input.json, item.json);
    if (binary && input.binary && Object.keys(input.binary).length > 0) {
      item.binary = { ...input.binary, ...(item.binary ?? {}) };
    }
  }
  return items;
}
