import { resourceProperties } from '../common.descriptions.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Field');

export const description = resourceProperties('Field', operations);
