import { resourceProperties } from '../common.descriptions.ts';
import { fromTable } from '../resource.ts';

export const operations = fromTable('Instruction');

export const description = resourceProperties('Instruction', operations);
