/**
 * Document > Get Many: fetch_documents with its five filters, one item per document with its
 * extracted data (simplified by default), or only its ID (Options > IDs Only). With a limit, the
 * most recent documents (highest IDs) are kept, newest first.
 */
import type { IDataObject, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { documentsData, type InputOf } from '@docex/shared';
import { RETURN_ALL } from '../common.descriptions.ts';
import { jsonItem, limitOf } from '../common.execute.ts';
import { SIMPLIFY, simplifyDocument } from '../simplify.ts';
import type { Runner } from '../node.type.ts';

export const options: INodeProperties[] = [
  {
    displayName: 'IDs Only',
    name: 'idsOnly',
    type: 'boolean',
    default: false,
    description: "Whether to return only each document's ID, without reading its data",
  },
];

export const properties: INodeProperties[] = [...RETURN_ALL, SIMPLIFY];

export const run: Runner = async (ctx, client, i, input) => {
  let ids = await client.fetchDocuments(input as InputOf<'fetch_documents'>);
  const limit = limitOf(ctx, i);
  if (limit !== undefined) ids = [...new Set(ids)].sort((a, b) => b - a).slice(0, limit);
  if ((ctx.getNodeParameter('options', i, {}) as IDataObject).idsOnly === true)
    return ids.map((document_id) => jsonItem(i, { document_id }));
  const simplify = ctx.getNodeParameter('simplify', i, true) === true;
  // Documents deleted since they were listed are left out.
  return (await documentsData(client, ids)).map((d): INodeExecutionData =>
    jsonItem(i, simplify ? simplifyDocument(d) : (d as IDataObject)),
  );
};
