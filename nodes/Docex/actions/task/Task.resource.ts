import { OPERATIONS } from '../../../../shared/src/core/index.ts';
import { resourceProperties } from '../common.descriptions.ts';
import type { NodeOperation } from '../node.type.ts';
import { fromTable } from '../resource.ts';
import * as uploadAndWait from './uploadAndWait.operation.ts';

export const operations: NodeOperation[] = [
  ...fromTable('Task'),
  {
    value: 'upload_and_wait',
    resource: 'Task',
    name: 'Upload and Wait',
    action: 'Upload files and wait for their extraction',
    description: 'Upload files, wait until the service has extracted them and return each result',
    api: OPERATIONS.upload_file,
    options: uploadAndWait.options,
    run: uploadAndWait.run,
  },
];

export const description = resourceProperties('Task', operations);
