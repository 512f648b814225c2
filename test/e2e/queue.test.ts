/**
 * n8n-nodes-docex in n8n in queue mode, as builders run it at scale: a main instance (editor,
 * webhooks, triggers), two `n8n worker` processes that run the executions, Redis and PostgreSQL
 * (Debian's packages, installed by the set-up when missing, on free loopback ports). The packed
 * package is installed into each instance's own user folder; binary data stays in n8n's default mode
 * for queue mode (`database`), since n8n does not support `filesystem` there.
 *
 * - A webhook on main receives two files; a worker extracts them and main answers with the result.
 * - The New Document trigger polls on main while documents arrive in batches (and a known document
 *   is rerun); its executions run on the workers; every document is emitted exactly once.
 *
 * The credential and the workflows go in through main's REST API once it runs (the editor's calls:
 * no n8n boot each), and the waits for n8n's minute polls end on what the polls did (an execution,
 * a committed cursor), not after a fixed time.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { triggerWorkflow } from './workflows.ts';
import type { N8nRest } from './n8n-rest.ts';
import { CREDENTIAL, prepareN8n, type RealN8n } from './real-n8n.ts';
import { oneTimeInstallsDone, SHARED_N8N_WAIT_MS } from './shared.ts';
import {
  freePort,
  n8nReady,
  startN8n,
  startPostgres,
  startProcess,
  startRedis,
  until,
  type Service,
} from './services.ts';
import { templateWithField } from '../support/templates.ts';

let n8n: RealN8n;
let redis: Service | undefined;
let postgres: Service | undefined;
let main: Service | undefined;
const workers: Service[] = [];
const workerHomes: string[] = [];
let mainUrl = '';
let rest: N8nRest;

const EXTRACT_WORKFLOW = 'wfqueueextract1';
const TRIGGER_WORKFLOW = 'wfqueuetrigger1';
const TRIGGER_NAME = 'When a Document Is Extracted';
/**
 * How often a wait on n8n's minute polls reads the executions from PostgreSQL (each read parses
 * every execution's data): a poll comes once a minute, so 2 s adds little to a wait, and makes 30
 * reads a minute where services.ts' default 250 ms made 240.
 */
const POLL_WAIT_PROBE_MS = 2_000;

interface Pg {
  query(sql: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  end(): Promise<void>;
}
let db: Pg | undefined;

/** Throws when an n8n process has exited: waiting on it is pointless. */
function assertRunning(): void {
  const gone = [main, ...workers].find((s) => s && s.process.exitCode !== null);
  if (gone) throw new Error(`an n8n process exited (code ${gone.process.exitCode}):\n${logs()}`);
}

/** Everything n8n printed, for failure messages. */
const logs = () =>
  [main, ...workers]
    .map((s, i) => `--- ${i === 0 ? 'main' : `worker ${i}`}\n${s?.output().slice(-2500)}`)
    .join('\n');

/** Execution IDs a worker ran ("Worker finished execution 7 (job 3)"), per worker. */
const finishedBy = () =>
  workers.map((w) => new Set([...w.output().matchAll(/Worker finished execution (\d+)/g)].map((m) => m[1]!)));

interface Execution {
  id: string;
  status: string;
  emitted: Array<Record<string, unknown>>;
}

async function executions(workflowId: string, nodeName: string): Promise<Execution[]> {
  const flatted = createRequire(join(n8n.installDir, 'node_modules', 'n8n', 'package.json'))('flatted') as {
    parse(text: string): unknown;
  };
  const { rows } = await db!.query(
    `SELECT e.id, e.status, d.data FROM execution_entity e JOIN execution_data d ON d."executionId" = e.id
     WHERE e."workflowId" = $1 AND e.finished = true ORDER BY e.id`,
    [workflowId],
  );
  return rows.map((row) => {
    const data = flatted.parse(String(row.data)) as {
      resultData: { runData: Record<string, Array<{ data?: { main: Array<Array<{ json: object }>> } }>> };
    };
    const items = data.resultData.runData[nodeName]?.[0]?.data?.main[0] ?? [];
    return {
      id: String(row.id),
      status: String(row.status),
      emitted: items.map((i) => i.json as Record<string, unknown>),
    };
  });
}

beforeAll(async () => {
  // Redis and PostgreSQL come from Debian's packages, which the e2e global set-up installs once.
  await oneTimeInstallsDone();
  redis = await startRedis();
  const pg = await startPostgres('n8n');
  postgres = pg;
  const queueEnv: NodeJS.ProcessEnv = {
    EXECUTIONS_MODE: 'queue',
    QUEUE_BULL_REDIS_HOST: '127.0.0.1',
    QUEUE_BULL_REDIS_PORT: String((redis as Service & { port: number }).port),
    QUEUE_HEALTH_CHECK_ACTIVE: 'false',
    DB_TYPE: 'postgresdb',
    DB_POSTGRESDB_HOST: '127.0.0.1',
    DB_POSTGRESDB_PORT: String(pg.port),
    DB_POSTGRESDB_DATABASE: 'n8n',
    DB_POSTGRESDB_USER: 'postgres',
    DB_POSTGRESDB_PASSWORD: '',
    // One key for all instances: each decrypts the credential main stored.
    N8N_ENCRYPTION_KEY: randomBytes(24).toString('hex'),
    N8N_LOG_LEVEL: 'info',
  };
  n8n = await prepareN8n({ taskDelayMs: 20 }, { env: queueEnv });
  const { Client } = createRequire(join(n8n.installDir, 'node_modules', 'n8n', 'package.json'))('pg') as {
    Client: new (config: object) => Pg & { connect(): Promise<void> };
  };
  const client = new Client({ host: '127.0.0.1', port: pg.port, user: 'postgres', database: 'n8n' });
  await client.connect();
  db = client;

  // Main first: it migrates the empty database, which the workers then find ready.
  const started = await startN8n(n8n);
  main = started;
  mainUrl = started.url;
  await n8nReady(started);
  rest = await n8n.signIn(started);

  // Each worker has its own user folder with the package installed, as on separate machines.
  for (let w = 0; w < 2; w++) {
    const home = await mkdtemp(join(tmpdir(), 'docex-n8n-worker-'));
    workerHomes.push(home);
    await cp(join(n8n.home, '.n8n', 'nodes'), join(home, '.n8n', 'nodes'), { recursive: true });
    workers.push(
      startProcess(n8n.bin, ['worker', '--concurrency=2'], {
        ...n8n.env,
        N8N_USER_FOLDER: home,
        // Every instance runs a task broker for Code nodes (default port 5679): one port each.
        N8N_RUNNERS_BROKER_PORT: String(await freePort()),
      }),
    );
  }
  await until(
    'the workers to be ready',
    () => {
      assertRunning();
      return workers.every((w) => /n8n worker is now ready/.test(w.output())) ? true : undefined;
    },
    // Only a bound for a hung start, as for main's readiness.
    600_000,
    logs,
  );
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await main?.stop();
  await Promise.all(workers.map((w) => w.stop()));
  await db?.end();
  await n8n?.cleanup();
  await postgres?.stop();
  await redis?.stop();
  await Promise.all(workerHomes.map((home) => rm(home, { recursive: true, force: true })));
});

describe('n8n-nodes-docex in n8n queue mode (main, two workers, Redis, PostgreSQL)', () => {
  it('a worker extracts files a webhook received on main; the trigger polls on main and its executions run on workers, each document once', async () => {
    const client = createNodeClient({ baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0]! });
    const folder = await client.createFolder({ name: 'queue e2e' });
    const template = async (name: string) => (await templateWithField(client, folder.id, name)).id;
    const extractTemplate = await template('Webhook invoices');
    const triggerTemplate = await template('Polled invoices');

    await rest.importWorkflow({
      id: EXTRACT_WORKFLOW,
      name: 'queue extract',
      active: false,
      nodes: [
        {
          parameters: {
            httpMethod: 'POST',
            path: 'docex-extract',
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
          parameters: {
            resource: 'document',
            operation: 'extract',
            binaryPropertyName: '*',
            templateId: { __rl: true, mode: 'id', value: String(extractTemplate) },
            options: { pollInterval: 0.2, waitTimeout: 120 },
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
    await rest.importWorkflow(
      triggerWorkflow(TRIGGER_WORKFLOW, TRIGGER_NAME, {
        event: 'newDocument',
        templateId: { __rl: true, mode: 'id', value: String(triggerTemplate) },
        idsOnly: true,
      }),
    );
    await Promise.all([EXTRACT_WORKFLOW, TRIGGER_WORKFLOW].map((id) => rest.publish(id)));
    // 1. Two files to a webhook on main; main answers with what the worker extracted.
    const form = new FormData();
    form.append('data', new Blob(['Invoice number: Q-1\nTotal: 1,00\n'], { type: 'text/plain' }), 'q1.txt');
    form.append('data', new Blob(['Invoice number: Q-2\nTotal: 2,00\n'], { type: 'text/plain' }), 'q2.txt');
    const answer = await until(
      'the webhook to answer',
      async () => {
        assertRunning();
        const response = await fetch(`${mainUrl}/webhook/docex-extract`, {
          method: 'POST',
          body: form,
        }).catch(() => undefined);
        // Not listening yet, or the webhook not registered yet: nothing was run, try again.
        if (!response || response.status === 404 || response.status === 503) return undefined;
        return { status: response.status, body: await response.text() };
      },
      300_000,
      logs,
    );
    expect(answer.status, answer.body).toBe(200);
    const extracted = JSON.parse(answer.body) as Array<Record<string, unknown>>;
    expect(extracted.map((d) => [d.document_name, d['Invoice number']]).sort()).toEqual([
      ['q1.txt', 'Q-1'],
      ['q2.txt', 'Q-2'],
    ]);
    // n8n's binary data mode for queue mode (database): the files main received are in PostgreSQL.
    const { rows: files } = await db!.query('SELECT "fileName" FROM binary_data');
    expect(files.map((f) => f.fileName)).toEqual(expect.arrayContaining(['q1.txt', 'q2.txt']));
    const [webhookRun] = await executions(EXTRACT_WORKFLOW, 'Extract');
    expect(webhookRun?.status).toBe('success');
    expect(
      finishedBy().some((ran) => ran.has(webhookRun!.id)),
      `execution ${webhookRun!.id} ran on a worker\n${logs()}`,
    ).toBe(true);

    // 2. The trigger: activation (on main) knows what exists; then documents come in batches.
    const upload = async (names: string[]) => {
      const { tasks } = await client.uploadAndWait(
        {
          files: names.map((n) => ({
            data: new TextEncoder().encode(`Invoice number: ${n}\n`),
            fileName: `${n}.txt`,
          })),
          template_id: triggerTemplate,
        },
        { intervalMs: 20 },
      );
      return tasks.map((t) => t.document_id!);
    };
    // The activation poll lists all documents, then the window; what it sees counts as existing.
    // It has ended: n8n publishes a workflow (rest.publish waited for it) once its activation poll
    // returned.
    await until(
      'the activation poll',
      () => ((n8n.emulator.stats().requestsByOperation.fetch_documents ?? 0) >= 2 ? true : undefined),
      180_000,
      logs,
    );
    const expected = await upload(['P-1', 'P-2', 'P-3']);
    // At least one scheduled poll in between: the one that emits the first batch.
    await until(
      'a scheduled poll to emit the first batch',
      async () => {
        assertRunning();
        const ids = new Set(
          (await executions(TRIGGER_WORKFLOW, TRIGGER_NAME)).flatMap((e) =>
            e.emitted.map((d) => d.document_id),
          ),
        );
        return expected.every((id) => ids.has(id)) ? true : undefined;
      },
      300_000,
      logs,
      POLL_WAIT_PROBE_MS,
    );
    expected.push(...(await upload(['P-4', 'P-5', 'P-6'])));
    // A rerun of a document already emitted is a change, not a new document.
    await client.rerunDocuments({ doc_ids: [expected[0]!], override_extraction: true });

    const runs = await until(
      'the trigger to emit every new document',
      async () => {
        assertRunning();
        const all = await executions(TRIGGER_WORKFLOW, TRIGGER_NAME);
        const ids = new Set(all.flatMap((e) => e.emitted.map((d) => d.document_id)));
        return expected.every((id) => ids.has(id)) ? all : undefined;
      },
      300_000,
      logs,
      POLL_WAIT_PROBE_MS,
    );
    // One more scheduled poll: nothing may come twice. Each scheduled poll asks the service once
    // (fetch_documents, with what it knows); two more asks mean that the first of them has ended
    // (the next comes a minute later), so whatever it emitted is an execution by then.
    const polled = n8n.emulator.stats().requestsByOperation.fetch_documents ?? 0;
    await until(
      'two more scheduled polls',
      () => {
        assertRunning();
        return (n8n.emulator.stats().requestsByOperation.fetch_documents ?? 0) >= polled + 2
          ? true
          : undefined;
      },
      300_000,
      logs,
    );
    await until(
      'the executions of the last poll to end',
      async () => {
        assertRunning();
        const { rows } = await db!.query(
          'SELECT count(*) AS running FROM execution_entity WHERE "workflowId" = $1 AND finished = false',
          [TRIGGER_WORKFLOW],
        );
        return Number(rows[0]!.running) === 0 ? true : undefined;
      },
      300_000,
      logs,
      POLL_WAIT_PROBE_MS,
    );
    const final = await executions(TRIGGER_WORKFLOW, TRIGGER_NAME);
    expect(final.length).toBeGreaterThanOrEqual(runs.length);
    const emitted = final.flatMap((e) => e.emitted.map((d) => d.document_id as number));
    expect(emitted.sort((a, b) => a - b)).toEqual([...expected].sort((a, b) => a - b));
    expect(final.every((e) => e.status === 'success')).toBe(true);
    const ranOnWorkers = finishedBy();
    for (const e of final)
      expect(
        ranOnWorkers.some((ran) => ran.has(e.id)),
        `trigger execution ${e.id} ran on a worker\n${logs()}`,
      ).toBe(true);
    expect(main!.output()).not.toMatch(/Worker finished execution/);
  });
});
