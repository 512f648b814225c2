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
 *   much of the rate the burst used for useful work, from the first call to the last answer;
 *   `ratioWhileFlowing` is the same from the first request's arrival at the service to the last
 *   one's, without the time n8n itself takes to start the executions and to answer the calls.
 * - when executions fail, the reasons come from n8n's own records (its SQLite database);
 * - the timeline says where the time went, in seconds from the first call on the wall clock: when
 *   n8n created and started the first execution and began its Extract (its records), when the first
 *   and last request reached the service (the emulator's clock, the same wall clock), and when the
 *   last Extract ended, the last execution stopped and the last call was answered;
 * - `ratioOnceStarted` is the rate used from the moment n8n had begun every execution's Extract to
 *   the last arrival: the pacing's own figure, without n8n's slow start of 50 executions at once.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createNodeClient } from '@docex/shared/node';
import { createInvoiceTemplate } from './invoices.ts';
import { N8nRest } from './n8n-rest.ts';
import { CREDENTIAL, type RealN8n } from './real-n8n.ts';
import { n8nReady, setUpOwner, startN8n, until } from './services.ts';
import { templateFromList } from './workflows.ts';

export interface BurstOptions {
  executions?: number;
  filesPerExecution?: number;
  /** The emulator's limit: above this many requests in any one second it answers 429. */
  perSecond?: number;
  /** The credential's Requests per Second (default: none saved, as in a credential made before the setting). */
  credentialRequestsPerSecond?: number;
  /** Environment for `n8n start` (e.g. N8N_LOG_LEVEL). */
  env?: NodeJS.ProcessEnv;
}

export interface BurstFigures {
  executions: number;
  succeeded: number;
  /** The failed executions' answers, by message, with how many gave each. */
  failures: Record<string, number>;
  /** Why n8n says the executions that did not succeed failed (its execution records), with how many. */
  executionErrors: Record<string, number>;
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
  /**
   * From the first request's arrival at the service to the last one's: the burst without n8n's own
   * start (webhooks received, executions begun) and end (executions saved, webhooks answered).
   */
  requestSpanSeconds: number;
  /** Answered requests per second within that span / the rate: how much of the rate the pacing used. */
  ratioWhileFlowing: number;
  perSecond: number;
  timeline: BurstTimeline;
  /**
   * Requests per second at the service / the rate, from the moment n8n had begun every execution's
   * Extract to the last arrival: the pacing's own share of the rate, once n8n is no longer busy
   * taking the calls and starting executions (on a loaded machine that takes it seconds).
   */
  ratioOnceStarted: number;
  /** The requests that arrived in that time, and how long it was. */
  requestsOnceStarted: number;
  secondsOnceStarted: number;
}

/** Each measure in one n8n has its own workflow and webhook path (a published one stays published). */
let measures = 0;

export const burstWorkflow = (id: string, path: string, templateId: number) => ({
  id,
  name: 'burst extract',
  active: false,
  nodes: [
    {
      parameters: {
        httpMethod: 'POST',
        path,
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
      // Extract with its default options; every file the webhook received. The template as picked
      // from the list: n8n checks a "By ID" value with a regular expression it stops after 250 ms,
      // which failed one of 50 executions at a load average of 10-16 (docs/decisions.md, issue #43).
      parameters: {
        resource: 'document',
        operation: 'extract',
        binaryPropertyName: '*',
        templateId: templateFromList(templateId),
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

const invoiceForm = (measure: number, execution: number, files: number) => {
  const form = new FormData();
  for (let f = 0; f < files; f++) {
    const number = `B${measure}-${execution}-${f}`;
    // Each file its own bytes, in every measure: the service takes a file it holds for a DUPLICATE.
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
 * The owner's session on each prepared n8n: set up on its first start, and still valid on the next
 * (the same folder, the same signing key), so that a second measure on the same n8n signs in again.
 */
const sessions = new WeakMap<RealN8n, string>();

/**
 * Signs in to the running n8n, creates the burst's Docex credential (`requestsPerSecond` when given)
 * and publishes the burst workflow, through the REST API as the editor does: the n8n CLI commands
 * boot an n8n each (tens of seconds), and this test proves the rate limit, not the CLI.
 */
async function publishBurst(
  n8n: RealN8n,
  server: { url: string; output(): string },
  workflow: { id: string; [key: string]: unknown },
  requestsPerSecond: number | undefined,
): Promise<void> {
  let cookie = sessions.get(n8n);
  if (!cookie) {
    cookie = await setUpOwner(server.url);
    sessions.set(n8n, cookie);
  }
  const rest = new N8nRest(server.url, cookie, n8n.installDir, () => server.output().slice(-3000));
  const data: Record<string, unknown> = { baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0] };
  if (requestsPerSecond !== undefined) data.requestsPerSecond = requestsPerSecond;
  await rest.createCredential({
    ...CREDENTIAL.docexApi,
    name: `Docex (${workflow.id})`,
    type: 'docexApi',
    data,
  });
  await rest.importWorkflow(workflow);
  await rest.publish(workflow.id);
}

interface Sqlite {
  Database: new (
    file: string,
    mode: number,
  ) => {
    all(
      sql: string,
      params: unknown[],
      done: (error: Error | null, rows: Array<Record<string, unknown>>) => void,
    ): void;
    close(): void;
  };
  OPEN_READONLY: number;
}

/** One execution as n8n recorded it: its status, the times it kept (ms, wall clock) and its error. */
interface ExecutionRecord {
  status: string;
  createdAt: number;
  startedAt: number | undefined;
  stoppedAt: number | undefined;
  /** When the Extract node began and ended (n8n's run data). */
  extractStart: number | undefined;
  extractEnd: number | undefined;
  error: string | undefined;
}

/** n8n's SQLite keeps its dates as UTC text ("2026-11-28 06:40:07.123"). */
const sqliteDate = (value: unknown): number | undefined =>
  typeof value === 'string' && value !== '' ? Date.parse(`${value.replace(' ', 'T')}Z`) : undefined;

/**
 * The workflow's executions as n8n recorded them (its SQLite database; the webhook's answer only
 * says "Error in workflow"): when each was created, started and stopped, when its Extract ran, and
 * the message of the error n8n kept.
 */
async function executionRecords(n8n: RealN8n, workflowId: string): Promise<ExecutionRecord[]> {
  const fromN8n = createRequire(join(n8n.installDir, 'node_modules', 'n8n', 'package.json'));
  const sqlite = fromN8n('sqlite3') as Sqlite;
  const flatted = fromN8n('flatted') as { parse(text: string): unknown };
  const db = new sqlite.Database(join(n8n.home, '.n8n', 'database.sqlite'), sqlite.OPEN_READONLY);
  try {
    const rows = await new Promise<Array<Record<string, unknown>>>((resolve, reject) =>
      db.all(
        `SELECT e.status, e."createdAt", e."startedAt", e."stoppedAt", d.data
         FROM execution_entity e JOIN execution_data d ON d."executionId" = e.id
         WHERE e."workflowId" = ?`,
        [workflowId],
        (error, found) => (error ? reject(error) : resolve(found)),
      ),
    );
    return rows.map((row) => {
      const data = flatted.parse(String(row.data)) as {
        resultData?: {
          error?: { message?: string };
          runData?: Record<string, Array<{ startTime?: number; executionTime?: number }>>;
        };
      };
      const extract = data.resultData?.runData?.Extract?.[0];
      return {
        status: String(row.status),
        createdAt: sqliteDate(row.createdAt) ?? Number.NaN,
        startedAt: sqliteDate(row.startedAt),
        stoppedAt: sqliteDate(row.stoppedAt),
        extractStart: extract?.startTime,
        extractEnd:
          extract?.startTime !== undefined && extract.executionTime !== undefined
            ? extract.startTime + extract.executionTime
            : undefined,
        error:
          row.status === 'success' ? undefined : (data.resultData?.error?.message ?? 'no error recorded'),
      };
    });
  } finally {
    db.close();
  }
}

/** Why the executions that did not succeed failed, with how many gave each reason. */
function errorsOf(records: ExecutionRecord[]): Record<string, number> {
  const errors: Record<string, number> = {};
  for (const record of records.filter((r) => r.status !== 'success')) {
    const why = `${record.status}: ${record.error}`;
    errors[why] = (errors[why] ?? 0) + 1;
  }
  return errors;
}

/**
 * Where the burst's time went, in seconds from the first call sent (wall clock): the start (n8n
 * taking the calls and starting executions, then the node's work before its first request reaches
 * the service), the flow, and the tail (after the last request's arrival until the last answer).
 */
export interface BurstTimeline {
  firstExecutionCreated: number;
  firstExecutionStarted: number;
  /** When the first execution's Extract began (n8n's run data). */
  firstExtractStarted: number;
  /** When the last execution's Extract began: n8n started every execution by then. */
  lastExtractStarted: number;
  firstArrival: number;
  lastArrival: number;
  lastExtractEnded: number;
  lastExecutionStopped: number;
  lastAnswer: number;
}

function timelineOf(
  records: ExecutionRecord[],
  startedWallMs: number,
  arrivals: { first: number | null; last: number | null },
  lastAnswerWallMs: number,
): BurstTimeline {
  const at = (ms: number | undefined | null) => (ms == null ? Number.NaN : (ms - startedWallMs) / 1000);
  const times = (pick: (r: ExecutionRecord) => number | undefined) =>
    records.map(pick).filter((t): t is number => t !== undefined && Number.isFinite(t));
  const first = (pick: (r: ExecutionRecord) => number | undefined) => at(Math.min(...times(pick)));
  const last = (pick: (r: ExecutionRecord) => number | undefined) => at(Math.max(...times(pick)));
  return {
    firstExecutionCreated: first((r) => r.createdAt),
    firstExecutionStarted: first((r) => r.startedAt),
    firstExtractStarted: first((r) => r.extractStart),
    lastExtractStarted: last((r) => r.extractStart),
    firstArrival: at(arrivals.first),
    lastArrival: at(arrivals.last),
    lastExtractEnded: last((r) => r.extractEnd),
    lastExecutionStopped: last((r) => r.stoppedAt),
    lastAnswer: at(lastAnswerWallMs),
  };
}

/**
 * Starts `n8n start` on the prepared n8n, publishes the burst workflow, calls it `executions` times
 * at once with the emulator limited to `perSecond`, and stops n8n again.
 */
export async function measureBurst(n8n: RealN8n, options: BurstOptions = {}): Promise<BurstFigures> {
  const { executions = 50, filesPerExecution = 4, perSecond = 10 } = options;
  const measure = ++measures;
  const workflowId = `wfburstextract${String(measure).padStart(2, '0')}`;
  const path = `docex-burst-${measure}`;
  const templateId = await createInvoiceTemplate(n8n.emulator, `burst ${randomUUID()}`);
  const server = await startN8n(n8n, options.env);
  try {
    await n8nReady(server);
    await publishBurst(
      n8n,
      server,
      burstWorkflow(workflowId, path, templateId),
      options.credentialRequestsPerSecond,
    );
    const url = `${server.url}/webhook/${path}`;
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
    const forms = Array.from({ length: executions }, (_, e) => invoiceForm(measure, e, filesPerExecution));
    const started = performance.now();
    const startedWallMs = Date.now();
    let lastAnswerWallMs = startedWallMs;
    const answers = await Promise.all(
      forms.map(async (form) => {
        const answer = await post(url, form);
        lastAnswerWallMs = Math.max(lastAnswerWallMs, Date.now());
        return answer;
      }),
    );
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
    const records = await executionRecords(n8n, workflowId);
    const whyFailed = errorsOf(records);
    const timeline = timelineOf(
      records,
      startedWallMs,
      { first: stats.firstArrivalMs, last: stats.lastArrivalMs },
      lastAnswerWallMs,
    );
    const client = createNodeClient({ baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0]! });
    const held = await client.fetchDocuments({ template_id: templateId });
    const orphans = held.filter((id) => !returned.has(id));
    const refused = stats.answersByStatus['429'] ?? 0;
    const span = ((stats.lastArrivalMs ?? 0) - (stats.firstArrivalMs ?? 0)) / 1000;
    const allStarted = startedWallMs + timeline.lastExtractStarted * 1000;
    const onceStarted = stats.arrivalsMs.filter((ms) => ms >= allStarted);
    const secondsOnceStarted =
      onceStarted.length > 1 ? (onceStarted.at(-1)! - onceStarted[0]!) / 1000 : Number.NaN;
    const requests = stats.totalRequests;
    const files = succeeded * filesPerExecution;
    const answeredRequestsPerFile = files > 0 ? (requests - refused) / files : Infinity;
    const boundFilesPerSecond = perSecond / answeredRequestsPerFile;
    const filesPerSecond = files / seconds;
    return {
      executions,
      succeeded,
      failures,
      executionErrors: whyFailed,
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
      requestSpanSeconds: span,
      ratioWhileFlowing: span > 0 ? (requests - refused) / span / perSecond : 0,
      perSecond,
      timeline,
      // Between the first and the last of them: one interval fewer than requests.
      ratioOnceStarted: (onceStarted.length - 1) / secondsOnceStarted / perSecond,
      requestsOnceStarted: onceStarted.length,
      secondsOnceStarted,
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
    ...Object.entries(f.executionErrors).map(([why, n]) => `  n8n's record: ${n} x ${why}`),
    `${f.refused} of ${f.requests} requests answered 429 (${(f.refusedShare * 100).toFixed(1)} %), at most ${f.maxRequestsInOneSecond} in one second (limit ${f.perSecond})`,
    `${f.documents} documents on the service, ${f.orphans.length} not returned by any successful execution`,
    `${f.files} files in ${f.seconds.toFixed(1)} s = ${f.filesPerSecond.toFixed(2)} files/s; ` +
      `bound ${f.boundFilesPerSecond.toFixed(2)} files/s (${f.perSecond} req/s, ${f.answeredRequestsPerFile.toFixed(2)} answered requests per file): ratio ${f.ratioToBound.toFixed(2)}`,
    `requests flowed for ${f.requestSpanSeconds.toFixed(1)} s of them, at ${f.ratioWhileFlowing.toFixed(2)} of the rate`,
    `once n8n had begun every execution's Extract: ${f.requestsOnceStarted} requests in ${f.secondsOnceStarted.toFixed(1)} s, at ${f.ratioOnceStarted.toFixed(2)} of the rate`,
    `timeline (s from the first call): ${describeTimeline(f.timeline)}`,
  ].join('\n');

const describeTimeline = (t: BurstTimeline) =>
  [
    `first execution created ${t.firstExecutionCreated.toFixed(2)}, started ${t.firstExecutionStarted.toFixed(2)}`,
    `first Extract ${t.firstExtractStarted.toFixed(2)}, last Extract began ${t.lastExtractStarted.toFixed(2)}`,
    `first request arrived ${t.firstArrival.toFixed(2)}, last ${t.lastArrival.toFixed(2)}`,
    `last Extract ended ${t.lastExtractEnded.toFixed(2)}, last execution stopped ${t.lastExecutionStopped.toFixed(2)}`,
    `last answer ${t.lastAnswer.toFixed(2)}`,
  ].join('; ');
