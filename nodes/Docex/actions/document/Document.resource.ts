import { resourceProperties } from '../common.descriptions.ts';
import { fromTable } from '../resource.ts';
import * as download from './download.operation.ts';
import * as getMany from './getMany.operation.ts';
import * as rerun from './rerun.operation.ts';

export const operations = fromTable('Document', {
  fetch_documents: { extraProperties: getMany.properties, run: getMany.run },
  fetch_file: { extraProperties: download.properties, run: download.run('fetch_file') },
  fetch_files_batch: { extraProperties: download.properties, run: download.run('fetch_files_batch') },
  rerun_documents: {
    action: 'Rerun documents with their current template',
    description: 'Re-extract documents with their current template (any number of IDs; OCR is not re-run)',
    run: rerun.run,
  },
});

export const description = resourceProperties('Document', operations);
