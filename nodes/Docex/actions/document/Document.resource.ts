import { OPERATIONS, type DocumentData } from '@docex/shared';
import { resourceProperties } from '../common.descriptions.ts';
import { jsonItem } from '../common.execute.ts';
import type { NodeOperation } from '../node.type.ts';
import { fromTable } from '../resource.ts';
import { SIMPLIFY, simplifyDocument } from '../simplify.ts';
import * as download from './download.operation.ts';
import * as extract from './extract.operation.ts';
import * as getMany from './getMany.operation.ts';
import * as rerun from './rerun.operation.ts';

const extractOperation: NodeOperation = {
  value: 'extract',
  resource: 'Document',
  name: 'Extract',
  action: 'Extract data from a file',
  description: 'Upload files, wait until the service has extracted them and return the data of each',
  api: OPERATIONS.upload_file,
  required: ['template_id'],
  extraProperties: extract.properties,
  options: extract.options,
  run: extract.run,
};

export const operations: NodeOperation[] = [
  extractOperation,
  ...fromTable('Document', {
    fetch_documents: {
      extraProperties: getMany.properties,
      options: getMany.options,
      run: getMany.run,
    },
    fetch_document_data: {
      extraProperties: [SIMPLIFY],
      run: async (ctx, client, i, input) => {
        const data = (await client.call('fetch_document_data', input as never)) as DocumentData;
        return [jsonItem(i, ctx.getNodeParameter('simplify', i, true) ? simplifyDocument(data) : data)];
      },
    },
    fetch_file: { extraProperties: download.properties, run: download.run('fetch_file') },
    fetch_files_batch: { extraProperties: download.properties, run: download.run('fetch_files_batch') },
    rerun_documents: {
      action: 'Rerun documents with their current template',
      description: 'Re-extract documents with their current template (any number of IDs; OCR is not re-run)',
      run: rerun.run,
    },
  }),
];

export const description = resourceProperties('Document', operations);
