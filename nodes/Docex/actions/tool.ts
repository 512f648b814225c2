/**
 * What an AI agent reads about the node when it is connected as a tool. n8n's generated tool
 * description is the operation's action plus " in Document Extraction" ("Extract data from a file in
 * Document Extraction"): too thin for a model to know it may pass a link or a document ID. The tool
 * variant of the node (n8n builds it from `usableAsTool`, replacing parts of the description) gets a
 * "Description" parameter of its own, one per operation an agent would use, pre-filled with the
 * text below and editable like n8n's own. n8n adds its generic one only when the node has none, so
 * every other operation gets one too, pre-filled with the node's description.
 */
import type { INodeProperties } from 'n8n-workflow';

/** Hand-written for the model: what the tool does, what to pass, what comes back. */
export const TOOL_DESCRIPTIONS: Record<string, string> = {
  'document:extract':
    'Extract the data of an invoice, receipt or other document (PDF or image). Pass the link (URL) of the file; ' +
    'the tool downloads it, waits until the service has read it (seconds to minutes) and returns the document_id, ' +
    'each extracted field as a plain value, line_items and the fraud verdict.',
  'document:getData':
    'Get the extracted data of a document the service already holds, by its document_id: each field as a plain ' +
    'value, line_items and the document name.',
  'document:getAll':
    'List the documents the service holds, newest first, as document IDs; can be narrowed to a folder, a template or ' +
    "a period. Use the IDs with the tool that gets a document's data.",
  'document:rerun':
    'Extract one or more documents again with their current template (after the template or its fields changed). ' +
    'Pass the document IDs; returns the new task IDs.',
};

const toolDescription = (description: string, show: Record<string, string[]>): INodeProperties => ({
  displayName: 'Description',
  name: 'toolDescription',
  type: 'string',
  default: description,
  required: true,
  typeOptions: { rows: 3 },
  description:
    'Explain to the LLM what this tool does, a good, specific description would allow LLMs to produce expected results much more often',
  displayOptions: { show },
});

/** The "Description" parameters of the tool variant: one per described operation, one for the rest. */
export function toolDescriptionProperties(nodeDescription: string): INodeProperties[] {
  const described = Object.keys(TOOL_DESCRIPTIONS).map((key) => key.split(':') as [string, string]);
  const own = described.map(([resource, operation]) =>
    toolDescription(TOOL_DESCRIPTIONS[`${resource}:${operation}`]!, {
      resource: [resource],
      operation: [operation],
    }),
  );
  // The rest: every resource but document, and the document operations without their own text.
  const rest: INodeProperties[] = [
    { ...toolDescription(nodeDescription, {}), displayOptions: { hide: { resource: ['document'] } } },
    {
      ...toolDescription(nodeDescription, { resource: ['document'] }),
      displayOptions: {
        show: { resource: ['document'] },
        hide: { operation: described.map(([, operation]) => operation) },
      },
    },
  ];
  return [...own, ...rest];
}
