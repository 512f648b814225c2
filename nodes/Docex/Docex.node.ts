import {
  NodeConnectionTypes,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeType,
  type INodeTypeDescription,
} from 'n8n-workflow';
import { properties } from './actions/properties.ts';
import { router } from './actions/router.ts';
import { listSearch } from './methods/index.ts';

export class Docex implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Document Extraction',
    name: 'docex',
    icon: { light: 'file:docex.svg', dark: 'file:docex.dark.svg' },
    group: ['transform'],
    version: 1,
    subtitle: '={{$parameter["operation"] + ": " + $parameter["resource"]}}',
    description:
      'Extract structured data from documents: folders, templates, fields, uploads, results and reruns',
    defaults: { name: 'Document Extraction' },
    usableAsTool: true,
    inputs: [NodeConnectionTypes.Main],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: 'docexApi', required: true }],
    properties,
  };

  methods = { listSearch };

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    return await router.call(this);
  }
}
