import { OPERATIONS, type DocumentData } from '@docex/shared';
import { resourceProperties } from '../common.descriptions.ts';
import { jsonItem } from '../common.execute.ts';
import type { NodeOperation } from '../node.type.ts';
import { fromTable } from '../resource.ts';
import { itemRules, markForReview, needsFraud, reasonsFor, routing, withFraud } from '../review.ts';
import { INCLUDE_CONFIDENCE, SIMPLIFY, simplifyDocument } from '../simplify.ts';
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
  sources: true,
  keepsInput: true,
  reviews: true,
  extraProperties: extract.properties,
  options: extract.options,
  run: extract.run,
  runAll: extract.runAll,
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
      options: [INCLUDE_CONFIDENCE],
      keepsInput: true,
      reviews: true,
      run: async (ctx, client, i, input) => {
        const data = (await client.call('fetch_document_data', input as never)) as DocumentData;
        const opts = ctx.getNodeParameter('options', i, {}) as { includeConfidence?: boolean };
        const simplify = ctx.getNodeParameter('simplify', i, true) === true;
        const rules = routing(ctx) ? itemRules(ctx, i) : undefined;
        // The verdict is on the document's task result: read only when a rule needs it.
        const reviewed = rules && needsFraud(rules) ? await withFraud(client, data) : data;
        const item = jsonItem(
          i,
          simplify
            ? simplifyDocument(reviewed as DocumentData, { includeConfidence: opts.includeConfidence })
            : data,
        );
        return [rules ? markForReview(item, reasonsFor(reviewed, rules)) : item];
      },
    },
    fetch_file: { extraProperties: download.properties, keepsInput: true, run: download.run('fetch_file') },
    fetch_files_batch: {
      extraProperties: download.properties,
      keepsInput: true,
      run: download.run('fetch_files_batch'),
    },
    rerun_documents: {
      action: 'Rerun documents with their current template',
      description: 'Re-extract documents with their current template (any number of IDs; OCR is not re-run)',
      run: rerun.run,
    },
  }),
];

export const description = resourceProperties('Document', operations);
