/**
 * A burst of webhook executions against an emulator with a rate limit, as issue #43 measured it in a
 * real n8n: a workflow "Webhook (files) -> Extract" (Extract's default options) called `executions`
 * times at once, each call carrying `filesPerExecution` files of its own. Shared by
 * test/e2e/burst.test.ts (which asserts the outcome) and bench/burst.bench.ts (which prints it).
 *
 * What is counted, and how:
 * - an execution succeeded when the webhook answered 200 with one extracted document per file;
 * - requests and 429s are the emulator's own counts (its statistics, reset when the burst starts);
 * - an orphan document is one the emulator holds for the burst's template that no successful
 *   execution returned (an upload whose execution failed later: retrying it meets DUPLICATE);
 * - the bound is the files per second the rate allows for the requests a file needed in this run
 *   (answered requests / files): `ratioToBound` = answered requests per second / the rate, i.e. how
 *   much of the rate the burst used for useful work, from the first call to the last answer.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { createNodeClient } from '@docex/shared/node';
import { createInvoiceTemplate } from './invoices.ts';
import { CREDENTIAL, tail, type RealN8n } from './real-n8n.ts';
import { n8nReady, startN8n, until } from './services.ts';

export interface BurstOptions {
  executions?: number;
  filesPerExecution?: number;
  /** The emulator's limit: above this many requests in any one second it answers 429. */
  perSecond?: number;
  /** Environment for `n8n start` (e.g. N8N_LOG_LEVEL). */
  env?: NodeJS.ProcessEnv;
}

export interface BurstFigures {
  executions: number;
  succeeded: number;
  /** The failed executions' answers, by message, with how many gave each. */
  failures: Record<string, number>;
  requests: number;
  refused: number;
  /** refused / requests. */
  refusedShare: number;
  maxRequestsInOneSecond: number;
  documents: number;
  orphans: number[];
  files: number;
  seconds: number;
  filesPerSecond: number;
  answeredRequestsPerFile: number;
  /** The files per second `perSecond` allows at answeredRequestsPerFile. */
  boundFilesPerSecond: number;
  ratioToBound: number;
  perSecond: number;
}

const WORKFLOW_ID = 'wfburstextract01';
const PATH = 'docex-burst';

export const burstWorkflow = (templateId: number) => ({
  id: WORKFLOW_ID,
  name: 'burst extract',
  active: false,
  nodes: [
    {
      parameters: {
        httpMethod: 'POST',
        path: PATH,
        responseMode: 'lastNode',
        responseData: 'allEntries',
        options: {},
      },
      id: 'hook',
      name: 'Webhook',
      type: 'n8n-nodes-base.webhook',
      typeVersion: 2,
      position: [0, 0],
      webhookId: randomUUID(),
    },
    {
      // Extract with its default options; every file the webhook received.
      parameters: {
        resource: 'document',
        operation: 'extract',
        binaryPropertyName: '*',
        templateId: { __rl: true, mode: 'id', value: String(templateId) },
      },
      id: 'extract',
      name: 'Extract',
      type: 'n8n-nodes-docex.docex',
      typeVersion: 1,
      position: [200, 0],
      credentials: CREDENTIAL,
    },
  ],
  connections: { Webhook: { main: [[{ node: 'Extract', type: 'main', index: 0 }]] } },
  settings: {},
});

/** A POST over node:http: no client-side time limit (fetch gives up on headers after 300 s). */
async function post(url: string, form: FormData): Promise<{ status: number; body: string }> {
  const encoded = new Request(url, { method: 'POST', body: form });
  const body = Buffer.from(await encoded.arrayBuffer());
  return await new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        headers: { 'content-type': encoded.headers.get('content-type')!, 'content-length': body.length },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const invoiceForm = (execution: number, files: number) => {
  const form = new FormData();
  for (let f = 0; f < files; f++) {
    const number = `B-${execution}-${f}`;
    // Each file its own bytes: the service takes a file it already holds for a DUPLICATE.
    form.append(
      'data',
      new Blob([`Invoice number: ${number}\nTotal: ${execution},${f}0\n`], { type: 'text/plain' }),
      `${number}.txt`,
    );
  }
  return form;
};

/** What an execution's answer says went wrong (n8n's answer for a failed "last node" webhook). */
function failureOf(answer: { status: number; body: string }): string {
  try {
    const parsed = JSON.parse(answer.body) as { message?: unknown };
    if (typeof parsed.message === 'string') return `HTTP ${answer.status}: ${parsed.message}`;
  } catch {
    // not JSON: the text itself
  }
  return `HTTP ${answer.status}: ${answer.body.slice(0, 200)}`;
}

/**
 * Starts `n8n start` on the prepared n8n, publishes the burst workflow, calls it `executions` times
 * at once with the emulator limited to `perSecond`, and stops n8n again.
 */
export async function measureBurst(n8n: RealN8n, options: BurstOptions = {}): Promise<BurstFigures> {
  const { executions = 50, filesPerExecution = 4, perSecond = 10 } = options;
  const templateId = await createInvoiceTemplate(n8n.emulator, `burst ${randomUUID()}`);
  await n8n.importWorkflow(burstWorkflow(templateId));
  const published = await n8n.run(['publish:workflow', `--id=${WORKFLOW_ID}`]);
  if (published.code !== 0) throw new Error(`publish:workflow failed:\n${tail(published)}`);
  const server = await startN8n(n8n, options.env);
  try {
    await n8nReady(server);
    const url = `${server.url}/webhook/${PATH}`;
    // Registered once n8n answers its CORS preflight (an OPTIONS runs no execution): 404 until then.
    await until(
      'the burst webhook to be registered',
      async () => {
        if (server.process.exitCode !== null) throw new Error(`n8n exited:\n${server.output().slice(-3000)}`);
        const response = await fetch(url, {
          method: 'OPTIONS',
          headers: { origin: 'http://127.0.0.1', 'access-control-request-method': 'POST' },
        }).catch(() => undefined);
        return response && response.status !== 404 && response.status < 500 ? true : undefined;
      },
      600_000,
      () => server.output().slice(-3000),
    );

    n8n.emulator.faults.set({ rateLimit: { perSecond } });
    n8n.emulator.resetStats();
    const forms = Array.from({ length: executions }, (_, e) => invoiceForm(e, filesPerExecution));
    const started = performance.now();
    const answers = await Promise.all(forms.map((form) => post(url, form)));
    const seconds = (performance.now() - started) / 1000;
    const stats = n8n.emulator.stats();
    n8n.emulator.faults.clear();

    const returned = new Set<number>();
    const failures: Record<string, number> = {};
    let succeeded = 0;
    for (const answer of answers) {
      let documents: Array<{ document_id?: unknown }> | undefined;
      try {
        const parsed = JSON.parse(answer.body) as unknown;
        documents = Array.isArray(parsed) ? (parsed as Array<{ document_id?: unknown }>) : undefined;
      } catch {
        documents = undefined;
      }
      const ids = (documents ?? []).map((d) => d.document_id).filter((id) => typeof id === 'number');
      if (answer.status === 200 && ids.length === filesPerExecution) {
        succeeded++;
        for (const id of ids) returned.add(id);
      } else {
        const why = failureOf(answer);
        failures[why] = (failures[why] ?? 0) + 1;
      }
    }
    const client = createNodeClient({ baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0]! });
    const held = await client.fetchDocuments({ template_id: templateId });
    const orphans = held.filter((id) => !returned.has(id));
    const refused = stats.answersByStatus['429'] ?? 0;
    const requests = stats.totalRequests;
    const files = succeeded * filesPerExecution;
    const answeredRequestsPerFile = files > 0 ? (requests - refused) / files : Infinity;
    const boundFilesPerSecond = perSecond / answeredRequestsPerFile;
    const filesPerSecond = files / seconds;
    return {
      executions,
      succeeded,
      failures,
      requests,
      refused,
      refusedShare: requests > 0 ? refused / requests : 0,
      maxRequestsInOneSecond: stats.maxRequestsInOneSecond,
      documents: held.length,
      orphans,
      files,
      seconds,
      filesPerSecond,
      answeredRequestsPerFile,
      boundFilesPerSecond,
      ratioToBound: filesPerSecond / boundFilesPerSecond,
      perSecond,
    };
  } finally {
    n8n.emulator.faults.clear();
    await server.stop();
  }
}

/** The figures in a few lines, for a failure message or a report. */
export const describeBurst = (f: BurstFigures) =>
  [
    `${f.succeeded}/${f.executions} executions succeeded`,
    ...Object.entries(f.failures).map(([why, n]) => `  ${n} x ${why}`),
    `${f.refused} of ${f.requests} requests answered 429 (${(f.refusedShare * 100).toFixed(1)} %), at most ${f.maxRequestsInOneSecond} in one second (limit ${f.perSecond})`,
    `${f.documents} documents on the service, ${f.orphans.length} not returned by any successful execution`,
    `${f.files} files in ${f.seconds.toFixed(1)} s = ${f.filesPerSecond.toFixed(2)} files/s; ` +
      `bound ${f.boundFilesPerSecond.toFixed(2)} files/s (${f.perSecond} req/s, ${f.answeredRequestsPerFile.toFixed(2)} answered requests per file): ratio ${f.ratioToBound.toFixed(2)}`,
  ].join('\n');
