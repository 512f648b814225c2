/**
 * A running n8n driven through the REST API its editor uses, signed in as the owner: what a
 * builder does in the editor (create a credential, import a workflow, Publish, the Run button), in
 * milliseconds where each `n8n import:*` / `n8n execute` command boots a whole n8n (tens of seconds,
 * a minute on a loaded machine).
 *
 * n8n names credentials itself (its API takes no ID), so the credentials are created here and the
 * IDs the tests wrote in their workflows (CREDENTIAL in real-n8n.ts, their own for OpenAI, SMTP...)
 * are mapped to them: `importWorkflow` points every node at the credential created for its ID.
 * Workflows keep their IDs (n8n refuses an ID that exists: files that share an n8n must use IDs
 * of their own).
 */
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { until } from './services.ts';

/** A run's data per node, as n8n keeps it. */
export type RunData = Record<
  string,
  Array<{
    data?: {
      main: Array<
        Array<{
          json: Record<string, unknown>;
          binary?: Record<string, { fileName?: string; mimeType?: string; id?: string }>;
        }>
      >;
    };
    inputOverride?: Record<string, Array<Array<{ json: Record<string, unknown> }>>>;
    error?: { message: string };
  }>
>;

export interface Execution {
  id: string;
  status: string;
  runData: RunData;
  /** The workflow's error, when it failed. */
  error?: string;
}

/** The Docex credential the tests' workflows name; each n8n gets one of its own, mapped to this ID. */
export const CREDENTIAL = { docexApi: { id: 'docexcred0000001', name: 'Docex' } };

export interface CredentialRef {
  id: string;
  name: string;
}

interface WorkflowNode {
  type: string;
  name: string;
  credentials?: Record<string, CredentialRef>;
  [key: string]: unknown;
}

/** How long one execution or one publication may take: a bound for a hang, not a guess of the time. */
const LIMIT_MS = 300_000;

export class N8nRest {
  readonly url: string;
  readonly cookie: string;
  /** n8n's install folder: its own copy of `flatted` reads execution data. */
  private readonly installDir: string;
  /** The test's credential ID → the credential n8n created for it. */
  private readonly credentialsById = new Map<string, CredentialRef>();
  /** What n8n printed last, for failure messages (a server's output, when the caller has it). */
  private readonly logTail: () => string | Promise<string>;

  constructor(
    url: string,
    cookie: string,
    installDir: string,
    logTail: () => string | Promise<string> = () => '',
  ) {
    this.url = url;
    this.cookie = cookie;
    this.installDir = installDir;
    this.logTail = logTail;
  }

  /**
   * One request on a connection of its own: with keep-alive, a request sent just as n8n closes an
   * idle connection fails ("fetch failed", seen in a full run), and a POST cannot be sent again.
   */
  private send(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request(
        `${this.url}/rest${path}`,
        {
          method,
          agent: false,
          headers: {
            cookie: this.cookie,
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** A REST call as the signed-in owner; the answer's `data`, or a failure naming the call and n8n's answer. */
  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    // n8n answers 503 "Database is not ready!" while its database check lags on a loaded machine,
    // before it acts on the request: asked again, as services.ts's setUpOwner does.
    const { status, text } = await until(
      `n8n to answer ${method} /rest${path} (not "Database is not ready")`,
      async () => {
        const answer = await this.send(method, path, body);
        return answer.status === 503 && /Database is not ready/.test(answer.text) ? undefined : answer;
      },
      LIMIT_MS,
    );
    if (status !== 200) throw new Error(`n8n answered ${method} /rest${path} with ${status}: ${text}`);
    return (JSON.parse(text) as { data: T }).data;
  }

  /**
   * Creates a credential (as the credential dialog's Save does) for the test's ID `wanted.id`: the
   * workflows imported afterwards use it wherever they name that ID. The credential n8n created.
   */
  async createCredential(wanted: CredentialRef & { type: string; data: Record<string, unknown> }) {
    const created = await this.call<CredentialRef>('POST', '/credentials', {
      name: wanted.name,
      type: wanted.type,
      data: wanted.data,
    });
    const ref = { id: created.id, name: created.name };
    this.credentialsById.set(wanted.id, ref);
    return ref;
  }

  /** The credential created for the test's ID `wanted` (the ID itself when none was created here). */
  credential(wanted: CredentialRef): CredentialRef {
    return this.credentialsById.get(wanted.id) ?? wanted;
  }

  /** Imports a workflow (as the editor's import, then Save), its nodes pointed at the credentials created here. */
  async importWorkflow(workflow: { id: string; [key: string]: unknown }) {
    const nodes = ((workflow.nodes ?? []) as WorkflowNode[]).map((node) =>
      node.credentials
        ? {
            ...node,
            credentials: Object.fromEntries(
              Object.entries(node.credentials).map(([type, ref]) => [type, this.credential(ref)]),
            ),
          }
        : node,
    );
    // `active` is n8n's to set (Publish); the create call refuses unknown fields of its own.
    const { active: _active, ...rest } = workflow;
    const created = await this.call<{ id: string; versionId: string }>('POST', '/workflows', {
      ...rest,
      nodes,
      settings: workflow.settings ?? {},
    });
    if (created.id !== workflow.id)
      throw new Error(`n8n stored workflow ${workflow.id} as ${created.id}: the tests address it by its ID`);
    return created;
  }

  /**
   * Publishes a workflow (the editor's Publish button) and waits until n8n has activated its
   * triggers: n8n 2.40 activates through a publication queue, after the call answered. Fails with
   * the triggers' errors when the activation failed.
   */
  async publish(workflowId: string): Promise<void> {
    const { versionId } = await this.call<{ versionId: string }>('GET', `/workflows/${workflowId}`);
    await this.call('POST', `/workflows/${workflowId}/activate`, { versionId });
    const status = await until(
      `n8n to publish workflow ${workflowId}`,
      async () => {
        const s = await this.call<{ status: string; triggers: Array<{ errorMessage?: string | null }> }>(
          'GET',
          `/workflows/${workflowId}/publication-status`,
        );
        return s.status === 'in_progress' || s.status === 'not_published' ? undefined : s;
      },
      LIMIT_MS,
    );
    if (status.status !== 'published')
      throw new Error(
        `publishing workflow ${workflowId} ended ${status.status}: ${status.triggers.map((t) => t.errorMessage).join('; ')}\n${await this.logTail()}`,
      );
  }

  /** Unpublishes a workflow (its triggers stop): for a file's clean-up on a shared n8n. */
  async unpublish(workflowId: string): Promise<void> {
    await this.call('POST', `/workflows/${workflowId}/deactivate`, {});
  }

  /** `flatted.parse` of n8n's own copy: n8n keeps execution data in that form. */
  private flatted(text: string) {
    const flatted = createRequire(join(this.installDir, 'node_modules', 'n8n', 'package.json'))(
      'flatted',
    ) as {
      parse(text: string): { resultData: { runData: RunData; error?: { message: string } } };
    };
    return flatted.parse(text);
  }

  /** Waits for an execution's end; its status, run data and error. */
  async execution(executionId: string): Promise<Execution> {
    return await until(
      `execution ${executionId} to end`,
      async () => {
        const response = await this.send('GET', `/executions/${executionId}`);
        if (response.status !== 200) return undefined;
        const { data } = JSON.parse(response.text) as { data: { status: string; data: string } };
        if (['new', 'running', 'waiting'].includes(data.status)) return undefined;
        const parsed = this.flatted(data.data);
        return {
          id: executionId,
          status: data.status,
          runData: parsed.resultData.runData,
          error: parsed.resultData.error?.message,
        };
      },
      LIMIT_MS,
      () => '',
    );
  }

  /** Runs an imported workflow as the editor does (its Run button, or a trigger's Fetch Test Event) and waits for its end. */
  async run(workflowId: string, body: Record<string, unknown>): Promise<Execution> {
    const started = await this.call<{ executionId?: string }>('POST', `/workflows/${workflowId}/run`, body);
    if (!started.executionId)
      throw new Error(`n8n started no execution of ${workflowId}: ${JSON.stringify(started)}`);
    return await this.execution(started.executionId);
  }

  /**
   * Imports a workflow and runs it from its manual trigger (the Run button); fails on a workflow
   * error, with n8n's last output. The run data per node.
   */
  async execute(workflow: { id: string; [key: string]: unknown }): Promise<RunData> {
    await this.importWorkflow(workflow);
    const start = ((workflow.nodes ?? []) as WorkflowNode[]).find(
      (n) => n.type === 'n8n-nodes-base.manualTrigger',
    );
    if (!start) throw new Error(`workflow ${workflow.id} has no manual trigger to run it from`);
    const execution = await this.run(workflow.id, { triggerToStartFrom: { name: start.name } });
    if (execution.error !== undefined || execution.status !== 'success')
      throw new Error(
        `workflow ${workflow.id} ended ${execution.status}: ${execution.error ?? ''}\n${JSON.stringify(
          Object.fromEntries(
            Object.entries(execution.runData).flatMap(([node, runs]) =>
              runs.flatMap((r) => (r.error ? [[node, r.error.message]] : [])),
            ),
          ),
        )}\n${await this.logTail()}`,
      );
    return execution.runData;
  }
}
