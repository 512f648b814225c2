/**
 * Document > Get Many: fetch_documents with its five filters, one item per document, either its ID
 * or (Return Document Data) its extracted data. With a limit, the most recent documents (highest
 * IDs) are kept, newest first.
 */
import type { IDataObject, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { documentsData, type InputOf } from '../../../../shared/src/core/index.ts';
import { jsonItem } from '../common.execute.ts';
import type { Runner } from '../node.type.ts';

export const properties: INodeProperties[] = [
  {
    displayName: 'Return Document Data',
    name: 'returnData',
    type: 'boolean',
    default: false,
    description: "Whether to return each document's extracted data instead of only its ID",
  },
  {
    displayName: 'Return All',
    name: 'returnAll',
    type: 'boolean',
    default: false,
    description: 'Whether to return all results or only up to a given limit',
  },
  {
    displayName: 'Limit',
    name: 'limit',
    type: 'number',
    typeOptions: { minValue: 1 },
    default: 50,
    description: 'Max number of results to return',
    displayOptions: { show: { returnAll: [false] } },
  },
];

export const run: Runner = async (ctx, client, i, input) => {
  let ids = await client.fetchDocuments(input as InputOf<'fetch_documents'>);
  if (!ctx.getNodeParameter('returnAll', i, false)) {
    const limit = Math.max(1, Number(ctx.getNodeParameter('limit', i, 50)));
    ids = [...new Set(ids)].sort((a, b) => b - a).slice(0, limit);
  }
  if (!ctx.getNodeParameter('returnData', i, false))
    return ids.map((document_id) => jsonItem(i, { document_id }));
  // Documents deleted since they were listed are left out.
  return (await documentsData(client, ids)).map((d): INodeExecutionData => jsonItem(i, d as IDataObject));
};
