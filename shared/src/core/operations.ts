/**
 * The one table of the service's operations. The client, the n8n node's parameters and the tests
 * are all driven from it; an operation is spelled out here and nowhere else.
 */
import * as S from './schemas.ts';

export const RESOURCES = [
  'Account',
  'Task',
  'Agent',
  'Folder',
  'Template',
  'Field',
  'Instruction',
  'Document',
] as const;
export type Resource = (typeof RESOURCES)[number];

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';
export type ParamLocation = 'query' | 'body' | 'path' | 'form';
export type ParamKind =
  | 'integer'
  | 'string'
  | 'boolean'
  | 'date'
  | 'datetime'
  | 'integer[]'
  | 'string[]'
  | 'metadata'
  | 'file'
  | 'file[]';

export interface ParamSpec {
  readonly name: string;
  readonly in: ParamLocation;
  readonly kind: ParamKind;
  readonly required?: boolean;
  /** null is a meaningful value (sent as JSON null, e.g. to clear a field on update). */
  readonly nullable?: boolean;
  /** Allowed values for a string parameter. */
  readonly values?: readonly string[];
  readonly default?: string | number | boolean;
  readonly minItems?: number;
  readonly maxItems?: number;
  /** Also sent as a query parameter: the API document places it in both (see docs/decisions.md). */
  readonly alsoInQuery?: boolean;
  readonly label: string;
  readonly description: string;
}

export type OutputKind = 'json' | 'empty' | 'binary';

export interface OperationSpec {
  readonly name: string;
  readonly resource: Resource;
  /** What the n8n node shows in its Operation list. */
  readonly action: string;
  readonly method: HttpMethod;
  readonly path: string;
  /** The path-segment form of the instruction endpoints, e.g. /v1/fetch_instruction/{instruction_id}. */
  readonly pathForm?: string;
  readonly params: readonly ParamSpec[];
  readonly output: OutputKind;
  readonly schema?: S.AnySchema;
  /**
   * Safe to repeat: a retry cannot change the outcome. Unsafe operations are only retried where the
   * server cannot have acted on the first attempt (429, connection refused).
   */
  readonly idempotent: boolean;
  readonly exactlyOneOf?: readonly string[];
  readonly atLeastOneOf?: readonly string[];
  readonly description: string;
}

export const FIELD_TYPES = ['General fields', 'Line fields'] as const;
export const LOCALES = ['EU', 'US'] as const;
export const PARAMETER_FORMATS = [
  'text',
  'number',
  'date',
  'invoice_date',
  'invoice_number',
  'code',
  'label',
  'unit_price',
  'total_price',
  'quantity',
  'quantity_unit',
  'empty',
  'default',
  'multiple_choice',
  'boolean',
  'unit',
  'invoice_amount',
  'document_name',
  'fraud_verdict',
] as const;
export type FieldType = (typeof FIELD_TYPES)[number];
export type Locale = (typeof LOCALES)[number];
export type ParameterFormat = (typeof PARAMETER_FORMATS)[number];

/** number_locale and date_locale, the same on template create and update. */
const LOCALE_PARAMS = [
  {
    name: 'number_locale',
    in: 'body',
    kind: 'string',
    values: LOCALES,
    nullable: true,
    label: 'Number Locale',
    description: 'How numbers are read: EU (1.234,56) or US (1,234.56)',
  },
  {
    name: 'date_locale',
    in: 'body',
    kind: 'string',
    values: LOCALES,
    nullable: true,
    label: 'Date Locale',
    description: 'How dates are read: EU (day first) or US (month first)',
  },
] as const;

/** A required integer id. Generic in the name, so InputOf keeps the literal key (not `[x: string]`). */
const id = <const N extends string>(
  name: N,
  label: string,
  description: string,
  where: ParamLocation = 'query',
) => ({ name, in: where, kind: 'integer', required: true, label, description }) as const;

/** An optional body text that may be sent as null ("no value"), like a folder's name or description. */
const text = <const N extends string>(name: N, label: string, description: string) =>
  ({ name, in: 'body', kind: 'string', nullable: true, label, description }) as const;

/** The `type` of a field or an instruction: General fields or Line fields. */
const FIELD_TYPE = { name: 'type', in: 'body', kind: 'string', values: FIELD_TYPES, label: 'Type' } as const;

export const OPERATIONS = {
  check_api_key: {
    name: 'check_api_key',
    resource: 'Account',
    action: 'Check API Key',
    method: 'POST',
    path: '/v1/check_api_key/',
    params: [],
    output: 'json',
    schema: S.ApiKeyCheck,
    idempotent: true,
    description: 'Check that the API key is valid',
  },
  upload_file: {
    name: 'upload_file',
    resource: 'Task',
    action: 'Upload',
    method: 'POST',
    path: '/v1/upload_file/',
    params: [
      {
        name: 'files',
        in: 'form',
        kind: 'file[]',
        required: true,
        label: 'Files',
        description: 'One or more files; each becomes a document and a task',
      },
      {
        name: 'folder_id',
        in: 'query',
        kind: 'integer',
        label: 'Folder ID',
        description: 'Folder whose template extracts the files',
      },
      {
        name: 'template_id',
        in: 'query',
        kind: 'integer',
        label: 'Template ID',
        description: 'Template that extracts the files',
      },
      {
        name: 'doc_id',
        in: 'query',
        kind: 'integer',
        label: 'Document ID',
        description: 'Existing document whose file this upload replaces',
      },
      {
        name: 'metadata',
        in: 'form',
        kind: 'metadata',
        nullable: true,
        label: 'Metadata',
        description: 'Free text stored with the upload (an object is sent as JSON)',
      },
    ],
    output: 'json',
    schema: S.UploadResult,
    idempotent: false,
    description: 'Upload files for extraction; answers with task IDs to poll',
  },
  fetch_tasks_results: {
    name: 'fetch_tasks_results',
    resource: 'Task',
    action: 'Get Result',
    method: 'GET',
    path: '/v1/fetch_tasks_results/',
    params: [
      {
        name: 'task_id',
        in: 'query',
        kind: 'string',
        required: true,
        label: 'Task ID',
        description: 'Task ID returned by an upload',
      },
    ],
    output: 'json',
    schema: S.TaskResult,
    idempotent: true,
    description: 'Get the status and extraction result of a task',
  },
  upload_csv: {
    name: 'upload_csv',
    resource: 'Agent',
    action: 'Upload CSV',
    method: 'POST',
    path: '/v1/datatable_match_agents/{agent_id}/upload_csv/',
    params: [
      id('agent_id', 'Agent ID', 'Datatable match agent that receives the CSV', 'path'),
      {
        name: 'file',
        in: 'form',
        kind: 'file',
        required: true,
        label: 'CSV File',
        description: 'The CSV datatable',
      },
    ],
    output: 'json',
    schema: S.AnyJson,
    idempotent: false,
    description: 'Upload a CSV datatable to a datatable match agent',
  },
  fetch_all_folders: {
    name: 'fetch_all_folders',
    resource: 'Folder',
    action: 'Get Many',
    method: 'GET',
    path: '/v1/fetch_all_folders/',
    params: [],
    output: 'json',
    schema: S.FolderList,
    idempotent: true,
    description: 'List all folders with their templates',
  },
  fetch_folder: {
    name: 'fetch_folder',
    resource: 'Folder',
    action: 'Get',
    method: 'GET',
    path: '/v1/fetch_folder/',
    params: [id('folder_id', 'Folder ID', 'Folder to get')],
    output: 'json',
    schema: S.Folder,
    idempotent: true,
    description: 'Get a folder',
  },
  create_folder: {
    name: 'create_folder',
    resource: 'Folder',
    action: 'Create',
    method: 'POST',
    path: '/v1/create_folder/',
    params: [text('name', 'Name', 'Folder name'), text('desc', 'Description', 'Folder description')],
    output: 'json',
    schema: S.Folder,
    idempotent: false,
    description: 'Create a folder',
  },
  update_folder: {
    name: 'update_folder',
    resource: 'Folder',
    action: 'Update',
    method: 'PUT',
    path: '/v1/update_folder/',
    params: [
      id('folder_id', 'Folder ID', 'Folder to update'),
      text('name', 'Name', 'New name'),
      text('desc', 'Description', 'New description'),
    ],
    output: 'json',
    schema: S.Folder,
    idempotent: true,
    description: 'Update a folder',
  },
  delete_folder: {
    name: 'delete_folder',
    resource: 'Folder',
    action: 'Delete',
    method: 'DELETE',
    path: '/v1/delete_folder/',
    params: [
      id('folder_id', 'Folder ID', 'Folder to delete'),
      {
        name: 'override',
        in: 'query',
        kind: 'boolean',
        default: false,
        label: 'Override',
        description: 'Delete the folder even when it still holds templates',
      },
    ],
    output: 'json',
    schema: S.AnyJson,
    idempotent: true,
    description: 'Delete a folder',
  },
  fetch_template: {
    name: 'fetch_template',
    resource: 'Template',
    action: 'Get',
    method: 'GET',
    path: '/v1/fetch_template/',
    params: [id('template_id', 'Template ID', 'Template to get')],
    output: 'json',
    schema: S.Template,
    idempotent: true,
    description: 'Get a template',
  },
  create_template: {
    name: 'create_template',
    resource: 'Template',
    action: 'Create',
    method: 'POST',
    path: '/v1/create_template/',
    params: [
      {
        name: 'folder_id',
        in: 'body',
        kind: 'integer',
        required: true,
        alsoInQuery: true,
        label: 'Folder ID',
        description: 'Folder the template belongs to',
      },
      {
        name: 'name',
        in: 'body',
        kind: 'string',
        required: true,
        label: 'Name',
        description: 'Template name (unique)',
      },
      text('desc', 'Description', 'Template description'),
      ...LOCALE_PARAMS,
      {
        name: 'template_id',
        in: 'query',
        kind: 'integer',
        label: 'Source Template ID',
        description: 'Existing template to start from',
      },
      {
        name: 'with_agents',
        in: 'query',
        kind: 'boolean',
        default: false,
        label: 'With Agents',
        description: 'Also create a datatable match agent linked to the template',
      },
    ],
    output: 'json',
    schema: S.Template,
    idempotent: false,
    description: 'Create a template',
  },
  update_template: {
    name: 'update_template',
    resource: 'Template',
    action: 'Update',
    method: 'PUT',
    path: '/v1/update_template/',
    params: [
      id('template_id', 'Template ID', 'Template to update'),
      {
        name: 'folder_id',
        in: 'body',
        kind: 'integer',
        nullable: true,
        label: 'Folder ID',
        description: 'Move the template to this folder',
      },
      text('name', 'Name', 'New name'),
      text('desc', 'Description', 'New description'),
      ...LOCALE_PARAMS,
    ],
    output: 'json',
    schema: S.Template,
    idempotent: true,
    description: 'Update a template',
  },
  delete_template: {
    name: 'delete_template',
    resource: 'Template',
    action: 'Delete',
    method: 'DELETE',
    path: '/v1/delete_template/',
    params: [
      id('template_id', 'Template ID', 'Template to delete'),
      {
        name: 'override',
        in: 'query',
        kind: 'boolean',
        default: false,
        label: 'Delete Documents Too',
        description: 'Also delete the documents extracted with this template',
      },
    ],
    output: 'empty',
    idempotent: true,
    description: 'Delete a template',
  },
  fetch_field: {
    name: 'fetch_field',
    resource: 'Field',
    action: 'Get',
    method: 'GET',
    path: '/v1/fetch_field/',
    params: [id('field_id', 'Field ID', 'Field to get')],
    output: 'json',
    schema: S.Field,
    idempotent: true,
    description: 'Get a field',
  },
  create_field: {
    name: 'create_field',
    resource: 'Field',
    action: 'Create',
    method: 'POST',
    path: '/v1/create_field/',
    params: [
      {
        name: 'template_id',
        in: 'body',
        kind: 'integer',
        required: true,
        alsoInQuery: true,
        label: 'Template ID',
        description: 'Template the field belongs to',
      },
      {
        name: 'name',
        in: 'body',
        kind: 'string',
        required: true,
        label: 'Name',
        description: 'Field name, as the extracted data will name it',
      },
      {
        ...FIELD_TYPE,
        required: true,
        description: 'Extracted once per document (General) or once per line (Line)',
      },
      {
        name: 'format',
        in: 'body',
        kind: 'string',
        values: PARAMETER_FORMATS,
        required: true,
        label: 'Format',
        description: 'Kind of value to extract',
      },
      text('desc', 'Description', 'What the field holds; guides extraction'),
      {
        name: 'position',
        in: 'body',
        kind: 'integer',
        nullable: true,
        label: 'Position',
        description: 'Display order',
      },
    ],
    output: 'json',
    schema: S.Field,
    idempotent: false,
    description: 'Create a field in a template',
  },
  update_field: {
    name: 'update_field',
    resource: 'Field',
    action: 'Update',
    method: 'PUT',
    path: '/v1/update_field/',
    params: [
      id('field_id', 'Field ID', 'Field to update'),
      text('name', 'Name', 'New name'),
      {
        ...FIELD_TYPE,
        nullable: true,
        description: 'Extracted once per document (General) or once per line (Line)',
      },
      text('desc', 'Description', 'New description'),
      {
        name: 'format',
        in: 'body',
        kind: 'string',
        values: PARAMETER_FORMATS,
        nullable: true,
        label: 'Format',
        description: 'Kind of value to extract',
      },
      {
        name: 'position',
        in: 'body',
        kind: 'integer',
        nullable: true,
        label: 'Position',
        description: 'Display order',
      },
    ],
    output: 'json',
    schema: S.Field,
    idempotent: true,
    description: 'Update a field',
  },
  delete_field: {
    name: 'delete_field',
    resource: 'Field',
    action: 'Delete',
    method: 'DELETE',
    path: '/v1/delete_field/',
    params: [id('field_id', 'Field ID', 'Field to delete')],
    output: 'empty',
    idempotent: true,
    description: 'Delete a field',
  },
  fetch_instruction: {
    name: 'fetch_instruction',
    resource: 'Instruction',
    action: 'Get',
    method: 'GET',
    path: '/v1/fetch_instruction/',
    pathForm: '/v1/fetch_instruction/{instruction_id}',
    params: [id('instruction_id', 'Instruction ID', 'Instruction to get')],
    output: 'json',
    schema: S.Instruction,
    idempotent: true,
    description: 'Get an instruction',
  },
  create_instruction: {
    name: 'create_instruction',
    resource: 'Instruction',
    action: 'Create',
    method: 'POST',
    path: '/v1/create_instruction/',
    params: [
      {
        name: 'template_id',
        in: 'body',
        kind: 'integer',
        required: true,
        label: 'Template ID',
        description: 'Template the instruction belongs to',
      },
      {
        name: 'content',
        in: 'body',
        kind: 'string',
        required: true,
        label: 'Content',
        description: 'Guidance for the extraction',
      },
      { ...FIELD_TYPE, required: true, description: 'Whether it guides general fields or line fields' },
    ],
    output: 'json',
    schema: S.Instruction,
    idempotent: false,
    description: 'Create an instruction in a template',
  },
  update_instruction: {
    name: 'update_instruction',
    resource: 'Instruction',
    action: 'Update',
    method: 'PUT',
    path: '/v1/update_instruction/',
    pathForm: '/v1/update_instruction/{instruction_id}',
    params: [
      id('instruction_id', 'Instruction ID', 'Instruction to update'),
      text('content', 'Content', 'New guidance'),
      { ...FIELD_TYPE, nullable: true, description: 'Whether it guides general fields or line fields' },
    ],
    output: 'json',
    schema: S.Instruction,
    idempotent: true,
    description: 'Update an instruction',
  },
  delete_instruction: {
    name: 'delete_instruction',
    resource: 'Instruction',
    action: 'Delete',
    method: 'DELETE',
    path: '/v1/delete_instruction/',
    pathForm: '/v1/delete_instruction/{instruction_id}',
    params: [id('instruction_id', 'Instruction ID', 'Instruction to delete')],
    output: 'empty',
    idempotent: true,
    description: 'Delete an instruction',
  },
  fetch_documents: {
    name: 'fetch_documents',
    resource: 'Document',
    action: 'Get Many',
    method: 'GET',
    path: '/v1/fetch_documents/',
    params: [
      {
        name: 'start_date',
        in: 'query',
        kind: 'date',
        label: 'Created From',
        description: 'Documents created on or after this date (YYYY-MM-DD, inclusive)',
      },
      {
        name: 'end_date',
        in: 'query',
        kind: 'date',
        label: 'Created Until',
        description: 'Documents created on or before this date (YYYY-MM-DD, inclusive)',
      },
      {
        name: 'folder_id',
        in: 'query',
        kind: 'integer',
        label: 'Folder ID',
        description: 'Documents whose template belongs to this folder',
      },
      {
        name: 'template_id',
        in: 'query',
        kind: 'integer',
        label: 'Template ID',
        description: 'Documents extracted with this template',
      },
      {
        name: 'updated_since',
        in: 'query',
        kind: 'datetime',
        label: 'Updated Since',
        description: 'Documents created or modified at or after this time (no offset means UTC)',
      },
    ],
    output: 'json',
    schema: S.DocumentIds,
    idempotent: true,
    description: 'List document IDs, optionally filtered',
  },
  fetch_document_data: {
    name: 'fetch_document_data',
    resource: 'Document',
    action: 'Get Data',
    method: 'GET',
    path: '/v1/fetch_document_data/',
    params: [id('document_id', 'Document ID', 'Document whose extracted data to get')],
    output: 'json',
    schema: S.DocumentData,
    idempotent: true,
    description: 'Get the extracted data of a document',
  },
  fetch_file: {
    name: 'fetch_file',
    resource: 'Document',
    action: 'Download File',
    method: 'GET',
    path: '/v1/fetch_file/',
    params: [
      {
        name: 'document_id',
        in: 'query',
        kind: 'integer',
        label: 'Document ID',
        description: 'Document whose original file to download (or give a task ID)',
      },
      {
        name: 'task_id',
        in: 'query',
        kind: 'string',
        label: 'Task ID',
        description: 'Task whose original file to download (or give a document ID)',
      },
    ],
    exactlyOneOf: ['document_id', 'task_id'],
    output: 'binary',
    idempotent: true,
    description: 'Download the original file of a document',
  },
  fetch_raw_text: {
    name: 'fetch_raw_text',
    resource: 'Document',
    action: 'Get Raw Text',
    method: 'GET',
    path: '/v1/fetch_raw_text/',
    params: [
      {
        name: 'document_id',
        in: 'query',
        kind: 'integer',
        label: 'Document ID',
        description: 'Document whose OCR text to get (or give a task ID)',
      },
      {
        name: 'task_id',
        in: 'query',
        kind: 'string',
        label: 'Task ID',
        description: 'Task whose OCR text to get (or give a document ID)',
      },
    ],
    exactlyOneOf: ['document_id', 'task_id'],
    output: 'json',
    schema: S.RawText,
    idempotent: true,
    description: 'Get the raw (OCR) text of a document',
  },
  fetch_files_batch: {
    name: 'fetch_files_batch',
    resource: 'Document',
    action: 'Download ZIP',
    method: 'POST',
    path: '/v1/fetch_files_batch/',
    params: [
      {
        name: 'document_ids',
        in: 'body',
        kind: 'integer[]',
        nullable: true,
        label: 'Document IDs',
        description: 'Documents whose files to put in the ZIP',
      },
      {
        name: 'task_ids',
        in: 'body',
        kind: 'string[]',
        nullable: true,
        label: 'Task IDs',
        description: 'Tasks whose files to put in the ZIP',
      },
    ],
    atLeastOneOf: ['document_ids', 'task_ids'],
    output: 'binary',
    idempotent: true,
    description: 'Download several original files as one ZIP archive',
  },
  delete_doc: {
    name: 'delete_doc',
    resource: 'Document',
    action: 'Delete',
    method: 'DELETE',
    path: '/v1/delete_doc/',
    params: [
      id('doc_id', 'Document ID', 'Document to delete'),
      {
        name: 'delete_file',
        in: 'query',
        kind: 'boolean',
        default: false,
        label: 'Delete File Too',
        description: 'Also delete the underlying original file',
      },
    ],
    output: 'empty',
    idempotent: true,
    description: 'Delete a document',
  },
  rerun_documents: {
    name: 'rerun_documents',
    resource: 'Document',
    action: 'Rerun',
    method: 'POST',
    path: '/v1/rerun_documents/',
    params: [
      {
        name: 'doc_ids',
        in: 'body',
        kind: 'integer[]',
        required: true,
        minItems: 1,
        maxItems: 500,
        label: 'Document IDs',
        description: 'Documents to re-extract with their current template (1 to 500)',
      },
      {
        name: 'override_extraction',
        in: 'body',
        kind: 'boolean',
        default: false,
        label: 'Override Extraction',
        description: 'Re-extract even when nothing in the template changed',
      },
    ],
    output: 'json',
    schema: S.RerunResult,
    idempotent: false,
    description: 'Re-extract documents with their current template (OCR is not re-run)',
  },
} as const satisfies Record<string, OperationSpec>;

export type Operations = typeof OPERATIONS;
export type OperationName = keyof Operations;
export const OPERATION_NAMES = Object.keys(OPERATIONS) as OperationName[];

export function getOperation(name: string): OperationSpec | undefined {
  return Object.hasOwn(OPERATIONS, name) ? (OPERATIONS as Record<string, OperationSpec>)[name] : undefined;
}
