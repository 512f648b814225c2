import { resourceProperties } from '../common.descriptions.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Agent');

export const description = resourceProperties('Agent', operations);
