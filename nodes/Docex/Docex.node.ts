import {
  NodeConnectionTypes,
  type IExecuteFunctions,
  type INodeExecutionData,
  type INodeType,
  type INodeTypeDescription,
  type UsableAsToolDescription,
} from 'n8n-workflow';
import { DOCUMENTATION_URL } from '../../credentials/DocexApi.credentials.ts';
import { properties, subtitle } from './actions/properties.ts';
import { outputsExpression } from './actions/review.ts';
import { toolDescriptionProperties } from './actions/tool.ts';
import { allOperations, router } from './actions/router.ts';
import { listSearch } from './methods/index.ts';

const NODE_DESCRIPTION =
  'Extract data from invoices, receipts and other documents (PDF, scans) with the Document Extraction Service';

export class Docex implements INodeType {
  /**
   * Parameter names and types are saved in users' workflows, so this interface is frozen by
   * test/n8n/interface.test.ts: a change to a saved name, type or default goes with a new entry in
   * `version` (as n8n's Airtable v2 does, [2, 2.1]) and code that still reads the older one.
   */
  description: INodeTypeDescription = {
    displayName: 'Document Extraction',
    name: 'docex',
    icon: { light: 'file:docex.svg', dark: 'file:docex.dark.svg' },
    group: ['transform'],
    version: [1],
    subtitle,
    description: NODE_DESCRIPTION,
    documentationUrl: DOCUMENTATION_URL,
    defaults: { name: 'Document Extraction' },
    // The tool variant gets hand-written descriptions for the model (actions/tool.ts). n8n spreads
    // `replacements` over the whole description, properties included, though its type names fewer keys.
    usableAsTool: {
      replacements: {
        properties: [...toolDescriptionProperties(NODE_DESCRIPTION), ...properties],
      } as UsableAsToolDescription['replacements'],
    },
    inputs: [NodeConnectionTypes.Main],
    // One output; two ("Done", "Needs Review") when Route for Review is on (actions/review.ts).
    outputs: outputsExpression(
      allOperations
        .filter((op) => op.reviews)
        .map((op) => ({ resource: op.resource.toLowerCase(), operation: op.value })),
    ),
    credentials: [{ name: 'docexApi', required: true }],
    properties,
  };

  methods = { listSearch };

  async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
    return await router.call(this);
  }
}
