/**
 * Document > Get Many: fetch_documents with its five filters, one item per document, either its ID
 * or (Return Document Data) its extracted data. With a limit, the most recent documents (highest
 * IDs) are kept, newest first.
 */
import type { IDataObject, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import type { DocumentData, InputOf } from '../../../../shared/src/core/index.ts';
import { jsonItem } from '../common.execute.ts';
import type { Runner } from '../node.type.ts';
import { mapLimit, unlessMissing } from '../pool.ts';

/** Documents whose data is fetched at the same time. */
const DATA_CONCURRENCY = 4;

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
  const data = await mapLimit(ids, DATA_CONCURRENCY, async (document_id) =>
    // Deleted since it was listed: no longer one of the documents.
    unlessMissing(client.fetchDocumentData({ document_id })),
  );
  return data
    .filter((d): d is DocumentData => d !== undefined)
    .map((d): INodeExecutionData => jsonItem(i, d as IDataObject));
};
