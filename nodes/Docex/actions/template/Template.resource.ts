import { resourceProperties } from '../common.descriptions.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Template');

export const description = resourceProperties('Template', operations);
