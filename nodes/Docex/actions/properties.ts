/** The Docex node's parameters: one Resource list, then each resource's operations and their parameters. */
import type { INodeProperties } from 'n8n-workflow';
import { RESOURCES } from '@docex/shared';
import { resourceValue } from './common.descriptions.ts';
import { allOperations, resources } from './router.ts';

const resourceOptions = [...RESOURCES]
  .sort((a, b) => a.localeCompare(b))
  .map((r) => ({ name: r, value: resourceValue(r) }));

export const properties: INodeProperties[] = [
  {
    displayName: 'Resource',
    name: 'resource',
    type: 'options',
    noDataExpression: true,
    options: resourceOptions,
    default: 'document',
  },
  ...Object.values(resources).flatMap((r) => r.description),
];

/** "Document: Extract" under the node on the canvas, from the labels (not the saved values). */
const subtitleLabels = Object.fromEntries(
  allOperations.map((op) => [`${op.resource.toLowerCase()}:${op.value}`, `${op.resource}: ${op.name}`]),
);
export const subtitle = `={{ (${JSON.stringify(subtitleLabels)})[$parameter["resource"] + ":" + $parameter["operation"]] }}`;
