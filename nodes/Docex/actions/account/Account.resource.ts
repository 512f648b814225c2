import { resourceProperties } from '../common.descriptions.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Account');

export const description = resourceProperties('Account', operations);
