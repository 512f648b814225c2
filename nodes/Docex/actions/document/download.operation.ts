/** Download File (fetch_file) and Download ZIP (fetch_files_batch): the answer as binary output. */
import type { IDataObject, INodeProperties } from 'n8n-workflow';
import type { BinaryResult, OperationName } from '@docex/shared';
import { binaryItem } from '../common.execute.ts';
import type { Runner } from '../node.type.ts';

export const properties: INodeProperties[] = [
  {
    displayName: 'Put Output File in Field',
    name: 'binaryPropertyOutput',
    type: 'string',
    default: 'data',
    hint: 'The name of the output binary field to put the file in',
    description: 'Name of the binary field of the output item that receives the downloaded file',
  },
];

export const run =
  (operation: OperationName & ('fetch_file' | 'fetch_files_batch')): Runner =>
  async (ctx, client, i, input) => {
    const result = (await client.call(operation, input as never)) as BinaryResult;
    const fallback =
      operation === 'fetch_files_batch'
        ? 'documents.zip'
        : `document-${String(input.document_id ?? input.task_id ?? 'file')}`;
    return [await binaryItem(ctx, i, result, fallback, input as IDataObject)];
  };
