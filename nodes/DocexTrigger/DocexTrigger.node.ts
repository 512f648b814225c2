import {
  NodeConnectionTypes,
  type IDataObject,
  type INode,
  type INodeExecutionData,
  type INodeType,
  type INodeTypeDescription,
  type IPollFunctions,
} from 'n8n-workflow';
import { DOCUMENTATION_URL } from '../../credentials/DocexApi.credentials.ts';
import { OPERATIONS, type DocumentData, type ParamSpec } from '@docex/shared';
import { paramProperty } from '../Docex/actions/common.descriptions.ts';
import { inTimeZone, locatorId, locatorValue, toNodeError } from '../Docex/actions/common.execute.ts';
import { SIMPLIFY, simplifyDocument } from '../Docex/actions/simplify.ts';
import { listSearch } from '../Docex/methods/index.ts';
import { docexClient } from '../Docex/transport/index.ts';
import { REASONS_KEY, rulesFrom } from '../Docex/actions/review.ts';
import { EMIT_ONLY, filterProperties, filterRules, flagged, type EmitOnly } from './filter.ts';
import { pollNewDocuments, type NewDocumentsState } from './newDocuments.ts';
import { DEFAULT_MARGIN_MS, pollChanges, recentDocuments, type Emitted } from './poll.ts';

/** The folder and template filters of fetch_documents, as the action node shows them (not required here). */
const filterSpec = (name: 'folder_id' | 'template_id') =>
  OPERATIONS.fetch_documents.params.find((p) => p.name === name) as ParamSpec;
const filter = (name: 'folder_id' | 'template_id') => paramProperty(filterSpec(name), false);

/** The review reasons a filter added, kept next to the simplified data. */
const reasonsOf = (d: Emitted) =>
  REASONS_KEY in d ? { [REASONS_KEY]: (d as IDataObject)[REASONS_KEY] } : {};

/** A filter's ID; none when the field is empty. An ID that is not one fails the poll, never widens it. */
function filterId(node: INode, name: 'folder_id' | 'template_id', value: unknown): number | undefined {
  const v = locatorValue(value);
  if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) return undefined;
  const id = Number(locatorId(node, filterSpec(name), String(v)));
  return id > 0 ? id : undefined;
}

export class DocexTrigger implements INodeType {
  /** Frozen like the action node's (test/n8n/interface.test.ts): a saved-name change needs a new version. */
  description: INodeTypeDescription = {
    displayName: 'Document Extraction Trigger',
    name: 'docexTrigger',
    icon: { light: 'file:docex.svg', dark: 'file:docex.dark.svg' },
    group: ['trigger'],
    version: [1],
    subtitle: '={{ $parameter["event"] === "newDocument" ? "New document" : "New or changed document" }}',
    // n8n's node panel merges this trigger with the action node into one app entry and shows THIS
    // description for it, in the trigger and in the action panel alike (n8n 2.40.7 editor,
    // generateMergedNodesAndActions: `description = trigger.description`): it describes the app.
    description:
      'Extract data from invoices, receipts and other documents (PDF, scans), and start workflows when documents are extracted or change',
    documentationUrl: `${DOCUMENTATION_URL}#trigger`,
    defaults: { name: 'When a Document Is Extracted' },
    polling: true,
    inputs: [],
    outputs: [NodeConnectionTypes.Main],
    credentials: [{ name: 'docexApi', required: true }],
    properties: [
      {
        // "Trigger On" is the name n8n's node creator lists a trigger's actions from.
        displayName: 'Trigger On',
        name: 'event',
        type: 'options',
        noDataExpression: true,
        options: [
          {
            name: 'New Document',
            value: 'newDocument',
            action: 'On new document',
            description: 'A file was extracted into a document the trigger has not seen before',
          },
          {
            name: 'New or Changed Document',
            value: 'newOrChangedDocument',
            action: 'On new or changed document',
            description: 'A document was extracted, or its data changed (a rerun, an edit)',
          },
        ],
        default: 'newDocument',
      },
      {
        displayName:
          'Each document is emitted at least once. With "New or Changed Document", a document that changes again is emitted again.',
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
      { ...SIMPLIFY, displayOptions: { show: { idsOnly: [false] } } },
      ...filterProperties,
      {
        displayName: 'Start From',
        name: 'startTime',
        type: 'dateTime',
        default: '',
        description:
          'On first activation, also emit documents extracted or changed since this time; leave empty to start with events from now on',
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
      folderId: filterId(this.getNode(), 'folder_id', this.getNodeParameter('folderId', '')),
      templateId: filterId(this.getNode(), 'template_id', this.getNodeParameter('templateId', '')),
      idsOnly: this.getNodeParameter('idsOnly', false) === true,
      startTime: startTime ? inTimeZone(startTime, this.getTimezone()) : undefined,
    };
    const simplify = !common.idsOnly && this.getNodeParameter('simplify', true) === true;
    const rules = filterRules(this.getNodeParameter(EMIT_ONLY, 'all') as EmitOnly, () =>
      rulesFrom((name, fallback) => this.getNodeParameter(name, fallback)),
    );
    // A filter needs each document's data, even when only IDs are emitted.
    const idsOnly = common.idsOnly;
    if (rules) common.idsOnly = false;
    const client = await docexClient(this).catch((error: unknown) => {
      throw toNodeError(this, error);
    });
    const emit = async (found: Emitted[] | null) => {
      let docs = found ?? [];
      if (rules && docs.length > 0) {
        const kept = await flagged(client, docs as DocumentData[], rules);
        docs = idsOnly ? kept.map((d) => ({ document_id: d.document_id })) : kept;
      }
      return docs.length > 0
        ? [
            this.helpers.returnJsonArray(
              docs.map((d) => (simplify ? { ...simplifyDocument(d), ...reasonsOf(d) } : d)) as IDataObject[],
            ),
          ]
        : null;
    };
    try {
      if (this.getMode() === 'manual') {
        return await emit(await recentDocuments(client, { ...common, limit: Number(options.limit ?? 50) }));
      }
      const state = this.getWorkflowStaticData('node') as NewDocumentsState;
      const marginMs = Math.max(0, Number(options.marginSeconds ?? DEFAULT_MARGIN_MS / 1000)) * 1000;
      const pollOptions = { ...common, marginMs, now };
      const newOnly = this.getNodeParameter('event', 'newDocument') === 'newDocument';
      // The poll moves the state on; a filter that fails afterwards (reading a verdict) must not
      // lose the documents of this poll, so the state goes back and the next poll sees them again.
      const before = JSON.stringify(state);
      const found = newOnly
        ? await pollNewDocuments(client, state, pollOptions)
        : await pollChanges(client, state, pollOptions);
      try {
        return await emit(found);
      } catch (error) {
        for (const key of Object.keys(state)) delete (state as IDataObject)[key];
        Object.assign(state, JSON.parse(before) as NewDocumentsState);
        throw toNodeError(this, error);
      }
    } catch (error) {
      throw toNodeError(this, error);
    }
  }
}
