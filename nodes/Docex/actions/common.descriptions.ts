/**
 * The node's parameters, generated from the shared operation table (shared/src/core/operations.ts):
 * nothing about an API operation is typed here again. How a parameter kind looks in n8n:
 *
 * | table kind            | n8n parameter                                                        |
 * | --------------------- | -------------------------------------------------------------------- |
 * | integer               | number (folder_id / template_id: resource locator, list or by ID)    |
 * | boolean               | boolean ("Whether to ...")                                           |
 * | string with values    | options                                                              |
 * | string, metadata      | string (an empty nullable one is sent as null: "clear it")          |
 * | date, datetime        | dateTime                                                             |
 * | integer[], string[]   | string, comma-separated (an expression may give an array)            |
 * | file, file[]          | name(s) of the input binary field(s)                                 |
 *
 * Required parameters are shown at the top; the others go under "Additional Fields" ("Update Fields"
 * for updates, "Filters" for Document > Get Many). A choice of exactly one of two (document_id or
 * task_id) becomes a "Look Up By" selector.
 */
import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';
import type { OperationSpec, ParamSpec, Resource } from '@docex/shared';
import { parameterName } from './naming.ts';
import { keepInputOptions } from './keepInput.ts';
import type { NodeOperation } from './node.type.ts';
import { reviewProperties } from './review.ts';
import { SOURCE, sourceOptions, sourceProperties } from './sources.ts';

export const resourceValue = (resource: Resource) => resource.toLowerCase();

/** Name of the parameter holding the input binary field name(s) of file parameters. */
export const BINARY_PROPERTY = 'binaryPropertyName';
/** Name of the "Look Up By" selector of an exactlyOneOf choice. */
export const LOOK_UP_BY = 'lookUpBy';

/** Where an operation's optional parameters are shown. */
export function collectionOf(api: OperationSpec): { displayName: string; name: string; placeholder: string } {
  if (api.name.startsWith('update_'))
    return { displayName: 'Update Fields', name: 'updateFields', placeholder: 'Add Field' };
  if (api.name === 'fetch_documents')
    return { displayName: 'Filters', name: 'filters', placeholder: 'Add Filter' };
  return { displayName: 'Additional Fields', name: 'additionalFields', placeholder: 'Add Field' };
}

/** Parameters a user picks from a list (fetch_all_folders), or enters by ID (API names). */
const LOCATORS: Record<string, { method: string; what: string }> = {
  folder_id: { method: 'searchFolders', what: 'folder' },
  template_id: { method: 'searchTemplates', what: 'template' },
};
export const isLocator = (param: ParamSpec) => param.kind === 'integer' && param.name in LOCATORS;

/** An enum value as an option name: invoice_date → Invoice Date, General fields → General Fields, EU → EU. */
const titleOf = (value: string) =>
  value
    .split(/[_\s]+/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join(' ');
const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);
const isFile = (param: ParamSpec) => param.kind === 'file' || param.kind === 'file[]';

/** A resource locator's name on the form: the parameter's label without " ID" ("Folder"). */
export const locatorLabel = (param: Pick<ParamSpec, 'label'>) => param.label.replace(/ ID$/, '');

/** How one API parameter looks in n8n (without displayOptions). */
export function paramProperty(param: ParamSpec, required: boolean): INodeProperties {
  const base: INodeProperties = {
    displayName: param.label,
    name: parameterName(param.name),
    type: 'string',
    default: '',
    description: param.description,
  };
  if (required) base.required = true;
  switch (param.kind) {
    case 'integer': {
      const locator = LOCATORS[param.name];
      if (locator) {
        return {
          ...base,
          displayName: locatorLabel(param),
          type: 'resourceLocator',
          default: { mode: 'list', value: '' },
          modes: [
            {
              displayName: 'From List',
              name: 'list',
              type: 'list',
              placeholder: `Select a ${locator.what}...`,
              typeOptions: { searchListMethod: locator.method, searchable: true },
            },
            {
              displayName: 'By ID',
              name: 'id',
              type: 'string',
              placeholder: 'e.g. 42',
              // No `validation` rule: n8n runs a regex rule at every execution and fails the
              // execution when it takes 250 ms on a busy machine; readInput checks the ID instead.
            },
          ],
        };
      }
      return { ...base, type: 'number', default: 0, typeOptions: { minValue: 0, numberPrecision: 0 } };
    }
    case 'boolean':
      return {
        ...base,
        type: 'boolean',
        default: param.default === true,
        description: `Whether to ${lowerFirst(param.description)}`,
      };
    case 'date':
    case 'datetime':
      return { ...base, type: 'dateTime' };
    case 'integer[]':
    case 'string[]':
      return {
        ...base,
        placeholder: param.kind === 'integer[]' ? 'e.g. 12, 15, 16' : 'e.g. 3f1c..., 9a2b...',
        description: `${param.description}, comma-separated`,
      };
    case 'file':
    case 'file[]':
      return {
        ...base,
        displayName: param.kind === 'file' ? 'Input Binary Field' : 'Input Binary Fields',
        name: BINARY_PROPERTY,
        default: 'data',
        hint:
          param.kind === 'file'
            ? 'The name of the input binary field containing the file'
            : 'The names of the input binary fields containing the files, comma-separated; * for all',
        description: param.description,
      };
    case 'metadata':
      return { ...base, typeOptions: { rows: 2 } };
    case 'string':
      if (param.values) {
        return {
          ...base,
          type: 'options',
          options: param.values
            .map((v) => ({ name: titleOf(v), value: v }))
            .sort((a, b) => a.name.localeCompare(b.name)),
          default: param.values[0]!,
        };
      }
      return param.nullable && !required
        ? { ...base, description: `${param.description}; empty clears it` }
        : base;
  }
}

const show = (op: NodeOperation, extra: Record<string, string[]> = {}) => ({
  show: { resource: [resourceValue(op.resource)], operation: [op.value], ...extra },
});

const byDisplayName = (a: { displayName: string }, b: { displayName: string }) =>
  a.displayName.localeCompare(b.displayName);

/** Parameters shown at the top, in the table's order: required ones (by the API or by the node). */
export const isTopLevel = ({ api, required }: Pick<NodeOperation, 'api' | 'required'>, param: ParamSpec) =>
  isRequired({ api, required }, param) ||
  isFile(param) ||
  (api.exactlyOneOf ?? []).includes(param.name) ||
  (api.atLeastOneOf ?? []).includes(param.name);

/** Required by the API, or by this operation of the node (Extract asks for a template). */
export const isRequired = ({ required }: Pick<NodeOperation, 'api' | 'required'>, param: ParamSpec) =>
  param.required === true || (required ?? []).includes(param.name);

/** All the parameters of one operation of the node. */
export function operationProperties(op: NodeOperation): INodeProperties[] {
  const { api } = op;
  const props: INodeProperties[] = [];
  const choice = api.exactlyOneOf ?? [];
  if (choice.length > 0) {
    const first = choice[0];
    const options = choice.map((name) => {
      const param = api.params.find((p) => p.name === name)!;
      return { name: param.label, value: parameterName(name), description: param.description };
    });
    props.push({
      displayName: 'Look Up By',
      name: LOOK_UP_BY,
      type: 'options',
      options: options.sort((a, b) => a.name.localeCompare(b.name)),
      default: parameterName(first!),
      description: `Give one of ${options.map((o) => o.name).join(' or ')}`,
      displayOptions: show(op),
    });
  }
  for (const param of api.params.filter((p) => isTopLevel(op, p))) {
    if (choice.includes(param.name)) {
      props.push({
        ...paramProperty(param, true),
        displayOptions: show(op, { [LOOK_UP_BY]: [parameterName(param.name)] }),
      });
    } else if (isFile(param) && op.sources) {
      // Input Source first; the binary field only for the Binary File source.
      props.push(
        ...sourceProperties.map((p) => ({
          ...p,
          displayOptions: show(op, (p.displayOptions?.show ?? {}) as Record<string, string[]>),
        })),
      );
      props.push({ ...paramProperty(param, true), displayOptions: show(op, { [SOURCE]: ['binary'] }) });
    } else {
      props.push({
        ...paramProperty(param, isRequired(op, param) || isFile(param)),
        displayOptions: show(op),
      });
    }
  }
  props.push(...(op.extraProperties ?? []).map((p) => ({ ...p, displayOptions: show(op) })));
  if (op.reviews) {
    props.push(
      ...reviewProperties.map((p) => ({
        ...p,
        displayOptions: show(op, (p.displayOptions?.show ?? {}) as Record<string, string[]>),
      })),
    );
  }
  const optional = api.params.filter((p) => !isTopLevel(op, p));
  if (optional.length > 0) {
    const collection = collectionOf(api);
    props.push({
      ...collection,
      type: 'collection',
      default: {},
      displayOptions: show(op),
      options: optional.map((p) => paramProperty(p, false)).sort(byDisplayName),
    });
  }
  props.push({
    displayName: 'Options',
    name: 'options',
    type: 'collection',
    placeholder: 'Add Option',
    default: {},
    displayOptions: show(op),
    options: [
      CONCURRENCY,
      ...(op.options ?? []),
      ...(op.sources ? sourceOptions : []),
      ...(op.keepsInput ? keepInputOptions : []),
    ].sort(byDisplayName),
  });
  return props;
}

/** Return All / Limit, as on every n8n "Get Many" (read with limitOf). */
export const RETURN_ALL: INodeProperties[] = [
  {
    displayName: 'Return All',
    name: 'returnAll',
    type: 'boolean',
    default: false,
    description: 'Whether to return all results or only up to a given limit',
  },
  {
    displayName: 'Limit',
    name: 'limit',
    type: 'number',
    typeOptions: { minValue: 1 },
    default: 50,
    description: 'Max number of results to return',
    displayOptions: { show: { returnAll: [false] } },
  },
];

/** Most input items sent to the service at once. */
export const MAX_CONCURRENCY = 10;
const CONCURRENCY: INodeProperties = {
  displayName: 'Items in Parallel',
  name: 'concurrency',
  type: 'number',
  typeOptions: { minValue: 1, maxValue: MAX_CONCURRENCY, numberPrecision: 0 },
  default: 1,
  description: `How many input items are sent to the service at the same time (1 to ${MAX_CONCURRENCY})`,
};

/** What a freshly added node does: never a change, the main thing first (Extract), else a read. */
const DEFAULT_PREFERENCE = ['extract', 'getAll', 'get', 'getResult', 'checkApiKey'];
export function defaultOperation(ops: readonly NodeOperation[]): string {
  const values = ops.map((op) => op.value);
  return DEFAULT_PREFERENCE.find((v) => values.includes(v)) ?? values.sort()[0]!;
}

/** The Operation list of one resource and the parameters of each of its operations. */
export function resourceProperties(resource: Resource, ops: readonly NodeOperation[]): INodeProperties[] {
  const options: INodePropertyOptions[] = ops
    .map((op) => ({ name: op.name, value: op.value, description: op.description, action: op.action }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return [
    {
      displayName: 'Operation',
      name: 'operation',
      type: 'options',
      noDataExpression: true,
      displayOptions: { show: { resource: [resourceValue(resource)] } },
      options,
      default: defaultOperation(ops),
    },
    ...ops.flatMap((op) => operationProperties(op)),
  ];
}
