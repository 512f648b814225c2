import {
  NodeConnectionTypes,
  type IDataObject,
  type INodeExecutionData,
  type INodeType,
  type INodeTypeDescription,
  type IPollFunctions,
} from 'n8n-workflow';
import { OPERATIONS, type ParamSpec } from '../../shared/src/core/index.ts';
import { paramProperty } from '../Docex/actions/common.descriptions.ts';
import { inTimeZone, locatorValue, toNodeError } from '../Docex/actions/common.execute.ts';
import { listSearch } from '../Docex/methods/index.ts';
import { docexClient } from '../Docex/transport/index.ts';
import { DEFAULT_MARGIN_MS, pollChanges, recentDocuments, type TriggerState } from './poll.ts';

/** The folder and template filters of fetch_documents, as the action node shows them (not required here). */
const filter = (name: string) =>
  paramProperty(OPERATIONS.fetch_documents.params.find((p) => p.name === name) as ParamSpec, false);

const idOf = (value: unknown): number | undefined => {
  const v = locatorValue(value);
  const n = typeof v === 'string' ? Number(v.trim()) : typeof v === 'number' ? v : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
};

export class DocexTrigger implements INodeType {
  description: INodeTypeDescription = {
    displayName: 'Document Extraction Trigger',
    name: 'docexTrigger',
    icon: { light: 'file:docex.svg', dark: 'file:docex.dark.svg' },
    group: ['trigger'],
    version: 1,
    subtitle: 'Documents created or changed',
    description: 'Starts the workflow when documents are extracted or change (new uploads, reruns)',
    defaults: { name: 'Document Extraction Trigger' },
    polling: true,
    inputs: [],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: 'docexApi', required: true }],
    properties: [
      {
        displayName:
          'Emits every document created or changed since the last check, at least once. A document that changes again is emitted again.',
        name: 'notice',
        type: 'notice',
        default: '',
      },
      filter('folder_id'),
      filter('template_id'),
      {
        displayName: 'IDs Only',
        name: 'idsOnly',
        type: 'boolean',
        default: false,
        description: "Whether to emit only each document's ID instead of its extracted data",
      },
      {
        displayName: 'Start From',
        name: 'startTime',
        type: 'dateTime',
        default: '',
        description:
          'On first activation, also emit documents changed since this time; leave empty to start with changes from now on',
      },
      {
        displayName: 'Options',
        name: 'options',
        type: 'collection',
        placeholder: 'Add Option',
        default: {},
        options: [
          {
            displayName: 'Clock Skew Margin (Seconds)',
            name: 'marginSeconds',
            type: 'number',
            typeOptions: { minValue: 0 },
            default: 120,
            description:
              'How far each check reaches back before the previous one, to cover a clock difference between n8n and the service',
          },
          {
            displayName: 'Test Limit',
            name: 'limit',
            type: 'number',
            typeOptions: { minValue: 1 },
            default: 50,
            description: 'Max number of results to return',
          },
        ],
      },
    ],
  };

  methods = { listSearch };

  async poll(this: IPollFunctions): Promise<INodeExecutionData[][] | null> {
    const now = new Date();
    const options = this.getNodeParameter('options', {}) as IDataObject;
    const startTime = String(this.getNodeParameter('startTime', '') ?? '').trim();
    const common = {
      folderId: idOf(this.getNodeParameter('folder_id', '')),
      templateId: idOf(this.getNodeParameter('template_id', '')),
      idsOnly: this.getNodeParameter('idsOnly', false) === true,
      startTime: startTime ? inTimeZone(startTime, this.getTimezone()) : undefined,
    };
    try {
      const client = await docexClient(this);
      if (this.getMode() === 'manual') {
        const docs = await recentDocuments(client, { ...common, limit: Number(options.limit ?? 50) });
        return docs.length > 0 ? [this.helpers.returnJsonArray(docs as IDataObject[])] : null;
      }
      const state = this.getWorkflowStaticData('node') as TriggerState;
      const marginMs = Math.max(0, Number(options.marginSeconds ?? DEFAULT_MARGIN_MS / 1000)) * 1000;
      const docs = await pollChanges(client, state, { ...common, marginMs, now });
      return docs ? [this.helpers.returnJsonArray(docs as IDataObject[])] : null;
    } catch (error) {
      throw toNodeError(this, error);
    }
  }
}
