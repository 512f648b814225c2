/** A resource's operations, taken from the shared operation table; conveniences are added by the resource. */
import { OPERATIONS, type OperationSpec, type Resource } from '@docex/shared';
import { operationValue } from './naming.ts';
import type { NodeOperation } from './node.type.ts';

const article = (word: string) => (/^[aeiou]/i.test(word) ? 'an' : 'a');

/** n8n's usual action sentences for the usual verbs; the table's description for the rest. */
function actionOf(api: OperationSpec): string {
  const noun = api.resource.toLowerCase();
  switch (api.action) {
    case 'Create':
    case 'Get':
    case 'Update':
    case 'Delete':
      return `${api.action} ${article(noun)} ${noun}`;
    case 'Get Many':
      return `Get many ${noun}s`;
    default:
      // n8n wants a plain sentence: the table's description without its asides.
      return api.description
        .replace(/\s*\([^)]*\)/g, '')
        .replace(/;.*$/, '')
        .trim();
  }
}

export function fromTable(
  resource: Resource,
  custom: Partial<Record<string, Partial<Omit<NodeOperation, 'value' | 'resource' | 'api'>>>> = {},
): NodeOperation[] {
  return (Object.values(OPERATIONS) as OperationSpec[])
    .filter((api) => api.resource === resource)
    .map((api) => ({
      value: operationValue(api),
      resource,
      name: api.action,
      action: actionOf(api),
      description: api.description,
      api,
      ...custom[api.name],
    }));
}
