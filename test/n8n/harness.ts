/**
 * Runs the Docex nodes inside n8n-core's real node contexts, as n8n does:
 * - `execute()` through `ExecuteContext` (parameters with their defaults filled in by `Workflow`,
 *   `continueOnFail`, binary data through n8n-core's BinaryDataService in memory mode);
 * - `poll()` through `PollContext` (static data kept on the `Workflow`, as n8n saves it);
 * - `listSearch` methods through `LoadOptionsContext`.
 * `httpRequestWithAuthentication` is n8n-core's own: it asks the credentials helper below to apply the
 * credential's generic `authenticate` (Bearer header) and sends the request with n8n's HTTP client,
 * so every request really goes over HTTP (to the emulator or to nock).
 *
 * n8n-workflow is taken with `require`, the copy n8n-core itself uses; the node sources under test
 * import the ESM copy, which only matters for `instanceof` across the two (the nodes do not rely on it).
 */
import { createRequire } from 'node:module';
import type {
  IAuthenticateGeneric,
  ICredentialDataDecryptedObject,
  IDataObject,
  IHttpRequestOptions,
  INode,
  INodeExecutionData,
  INodeParameters,
  INodeType,
  INodeTypes,
  IPollFunctions,
  IWorkflowExecuteAdditionalData,
  Workflow as WorkflowType,
} from 'n8n-workflow';
import { DocexApi } from '../../credentials/DocexApi.credentials.ts';
import { Docex } from '../../nodes/Docex/Docex.node.ts';
import { DocexTrigger } from '../../nodes/DocexTrigger/DocexTrigger.node.ts';

const require = createRequire(import.meta.url);
const workflowLib = require('n8n-workflow') as typeof import('n8n-workflow');
const core = require('n8n-core') as typeof import('n8n-core');
const { Container } = require('@n8n/di') as typeof import('@n8n/di');

const silent = { error() {}, warn() {}, info() {}, debug() {}, scoped: () => silent };

let prepared = false;
/** The services n8n-core's contexts take from the DI container, set up once per test file. */
function prepareContainer() {
  if (prepared) return;
  prepared = true;
  const { Logger } = require('@n8n/backend-common') as { Logger: new (...a: never[]) => unknown };
  Container.set(Logger as never, silent as never);
  Container.set(core.InstanceSettings, { instanceId: 'docex-test', n8nFolder: '/tmp' } as never);
  // Not initialised: no storage manager, so binary data stays in memory (base64 on the item), as in
  // n8n's "default" mode.
  Container.set(
    core.BinaryDataService,
    new core.BinaryDataService({ mode: 'default' } as never, { error() {} } as never, silent as never),
  );
}

export interface Credentials {
  baseUrl: string;
  apiKey: string;
  requestsPerSecond?: number;
}

/** The part of n8n's CredentialsHelper the HTTP helper uses: decrypted data, generic authenticate. */
function credentialsHelper(credentials: Credentials) {
  const type = new DocexApi();
  return {
    getParentTypes: () => [],
    isCredentialUsableByNode: () => true,
    getCredentialsProperties: () => type.properties,
    preAuthentication: async () => undefined,
    runPreAuthentication: async () => undefined,
    getDecrypted: async () => ({ ...credentials }) as ICredentialDataDecryptedObject,
    async authenticate(data: ICredentialDataDecryptedObject, typeName: string, options: IHttpRequestOptions) {
      if (typeName !== type.name) throw new Error(`unexpected credential type ${typeName}`);
      const auth = type.authenticate as IAuthenticateGeneric;
      const headers: IDataObject = { ...(options.headers ?? {}) };
      // n8n resolves the expressions of `authenticate` against $credentials; these are plain templates.
      for (const [name, template] of Object.entries(auth.properties.headers ?? {}))
        headers[name] = String(template)
          .replace(/^=/, '')
          .replace(/\{\{\s*\$credentials\.(\w+)\s*\}\}/g, (_, key: string) => String(data[key] ?? ''));
      return { ...options, headers };
    },
    getCredentials: async () => {
      throw new Error('not used');
    },
    updateCredentials: async () => {},
    updateCredentialsOauthTokenData: async () => {},
  };
}

function nodeTypes(): INodeTypes {
  const types: Record<string, INodeType> = {
    'n8n-nodes-docex.docex': new Docex(),
    'n8n-nodes-docex.docexTrigger': new DocexTrigger(),
  };
  return {
    getByName: (name: string) => types[name]!,
    getByNameAndVersion: (name: string) => types[name]!,
    getKnownTypes: () => ({}),
  } as INodeTypes;
}

function additionalData(credentials: Credentials): IWorkflowExecuteAdditionalData {
  return {
    credentialsHelper: credentialsHelper(credentials),
    executionId: 'test-execution',
    restApiUrl: 'http://localhost:5678/rest',
    instanceBaseUrl: 'http://localhost:5678/',
    webhookBaseUrl: 'http://localhost:5678/webhook',
    webhookWaitingBaseUrl: 'http://localhost:5678/webhook-waiting',
    webhookTestBaseUrl: 'http://localhost:5678/webhook-test',
    formWaitingBaseUrl: 'http://localhost:5678/form-waiting',
    variables: {},
    userId: 'user',
  } as unknown as IWorkflowExecuteAdditionalData;
}

function makeNode(
  type: 'docex' | 'docexTrigger',
  parameters: INodeParameters,
  extra: Partial<INode> = {},
): INode {
  return {
    id: `${type}-node`,
    name: type === 'docex' ? 'Document Extraction' : 'Document Extraction Trigger',
    type: `n8n-nodes-docex.${type}`,
    typeVersion: 1,
    position: [0, 0],
    parameters,
    credentials: { docexApi: { id: 'cred-1', name: 'Docex' } },
    ...extra,
  };
}

function makeWorkflow(node: INode, staticData?: IDataObject): WorkflowType {
  return new workflowLib.Workflow({
    id: 'wf-test',
    name: 'test',
    nodes: [node],
    connections: {},
    active: false,
    nodeTypes: nodeTypes(),
    staticData,
    settings: { timezone: 'UTC' },
  });
}

export interface RunOptions {
  credentials: Credentials;
  items?: INodeExecutionData[];
  continueOnFail?: boolean;
}

/** One run of the Docex node's execute() in n8n-core's ExecuteContext. Returns its main output. */
export async function runDocex(
  parameters: INodeParameters,
  options: RunOptions,
): Promise<INodeExecutionData[]> {
  return (await runDocexOutputs(parameters, options))[0]!;
}

/** Like runDocex, with every output (Route for Review gives two). */
export async function runDocexOutputs(
  parameters: INodeParameters,
  options: RunOptions,
): Promise<INodeExecutionData[][]> {
  return await new Docex().execute.call(executeContext(parameters, options));
}

/** The ExecuteContext runDocex runs the node in: for tests of the node's transport on its own. */
export function executeContext(parameters: INodeParameters, options: RunOptions) {
  prepareContainer();
  const node = makeNode(
    'docex',
    parameters,
    options.continueOnFail ? { onError: 'continueRegularOutput' } : {},
  );
  const workflow = makeWorkflow(node);
  const items = options.items ?? [{ json: {} }];
  const runExecutionData = workflowLib.createRunExecutionData();
  return new core.ExecuteContext(
    workflow,
    workflow.getNode(node.name)!,
    additionalData(options.credentials),
    'manual',
    runExecutionData,
    0,
    items,
    { main: [items] },
    { node, data: { main: [items] }, source: { main: [{ previousNode: 'Start' }] } },
    [],
  );
}

/** The binary data of an output item, read back through n8n-core. */
export async function binaryBuffer(item: INodeExecutionData, field = 'data'): Promise<Buffer> {
  prepareContainer();
  return await Container.get(core.BinaryDataService).getAsBuffer(item.binary![field]!);
}

/** An input item carrying files as n8n binary data (prepared by n8n-core, as the Read File node does). */
export async function binaryItem(
  files: Record<string, { data: string | Buffer; fileName: string; mimeType?: string }>,
) {
  prepareContainer();
  const binary: INodeExecutionData['binary'] = {};
  for (const [field, f] of Object.entries(files)) {
    const bytes = Buffer.isBuffer(f.data) ? f.data : Buffer.from(f.data);
    binary[field] = await Container.get(core.BinaryDataService).store(
      { type: 'execution', workflowId: 'wf-test', executionId: 'input' },
      bytes,
      { data: '', mimeType: f.mimeType ?? 'text/plain', fileName: f.fileName },
    );
  }
  return { json: {}, binary } satisfies INodeExecutionData;
}

/**
 * A trigger as n8n runs it: one Workflow (whose static data n8n persists between polls) and a fresh
 * PollContext per poll, in 'trigger' mode when active or 'manual' for "Fetch Test Event".
 */
export function pollingTrigger(parameters: INodeParameters, credentials: Credentials) {
  prepareContainer();
  const node = makeNode('docexTrigger', parameters);
  const workflow = makeWorkflow(node);
  const trigger = new DocexTrigger();
  const context = (mode: 'trigger' | 'manual') =>
    new core.PollContext(
      workflow,
      workflow.getNode(node.name)!,
      additionalData(credentials),
      mode,
      mode === 'manual' ? 'manual' : 'activate',
      () => {
        throw new Error('__emit is not used by poll()');
      },
      () => {
        throw new Error('__emitError is not used by poll()');
      },
    ) as unknown as IPollFunctions;
  return {
    workflow,
    /** The node's static data, as n8n would save it. */
    state: () => workflow.getStaticData('node', workflow.getNode(node.name)!) as IDataObject,
    poll: async (mode: 'trigger' | 'manual' = 'trigger') => await trigger.poll.call(context(mode)),
  };
}

/** The listSearch methods through n8n-core's LoadOptionsContext. */
export function loadOptionsContext(credentials: Credentials, parameters: INodeParameters = {}) {
  prepareContainer();
  const node = makeNode('docex', { resource: 'folder', operation: 'fetch_folder', ...parameters });
  const workflow = makeWorkflow(node);
  return new core.LoadOptionsContext(
    workflow,
    workflow.getNode(node.name)!,
    additionalData(credentials),
    'folder_id',
  );
}
