/**
 * The Document Extraction Trigger inside a real, running n8n (the run's shared n8n,
 * test/e2e/shared.ts): the workflow is published, n8n polls on its own schedule (activation, then
 * every minute), and what each execution emitted is read back from n8n's database. This is the path n8n's own cursor staging takes
 * (static data committed with the execution), which the unit tests' PollContext does not run.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { triggerWorkflow } from './workflows.ts';
import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
import { templateWithField } from '../support/templates.ts';

let n8n: SharedN8n;

interface Execution {
  id: number;
  status: string;
  emitted: Array<Record<string, unknown>>;
}

/** The finished executions of a workflow, with the items the trigger node emitted in each. */
function executions(workflowId: string, triggerName: string): Execution[] {
  const file = join(n8n.home, '.n8n', 'database.sqlite');
  if (!existsSync(file)) return [];
  // n8n keeps execution data in `flatted` form: its own copy of the library reads it.
  const flatted = createRequire(join(n8n.installDir, 'node_modules', 'n8n', 'package.json'))('flatted') as {
    parse(text: string): unknown;
  };
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(
        `SELECT e.id, e.status, d.data FROM execution_entity e JOIN execution_data d ON d.executionId = e.id
         WHERE e.workflowId = ? AND e.finished = 1 ORDER BY e.id`,
      )
      .all(workflowId) as Array<{ id: number; status: string; data: string }>;
    return rows.map((row) => {
      const data = flatted.parse(row.data) as {
        resultData: { runData: Record<string, Array<{ data?: { main: Array<Array<{ json: object }>> } }>> };
      };
      const items = data.resultData.runData[triggerName]?.[0]?.data?.main[0] ?? [];
      return { id: row.id, status: row.status, emitted: items.map((i) => i.json as Record<string, unknown>) };
    });
  } catch (error) {
    // n8n creates its tables at start: until then there is nothing to read.
    if (/no such table/.test(String(error))) return [];
    throw error;
  } finally {
    db.close();
  }
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${await n8n.log()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  n8n = await sharedN8n({ taskDelayMs: 20 });
}, SHARED_N8N_WAIT_MS);

afterAll(async () => {
  await n8n?.cleanup();
});

describe('the trigger in a running n8n', () => {
  it('emits what changed since Start From on activation, then only new and changed documents, each once', async () => {
    const client = createNodeClient({ baseUrl: n8n.emulator.url, apiKey: n8n.emulator.keys[0]! });
    const folder = await client.createFolder({ name: 'trigger e2e' });
    const template = await templateWithField(client, folder.id, 'Invoices');
    const upload = async (text: string, extra: { doc_id?: number } = {}) => {
      const { tasks } = await client.uploadAndWait(
        {
          files: [{ data: new TextEncoder().encode(text), fileName: 'invoice.txt' }],
          template_id: template.id,
          ...extra,
        },
        { intervalMs: 20 },
      );
      expect(tasks[0]!.status).toBe('DONE');
      return tasks[0]!.document_id!;
    };
    const a = await upload('Invoice number: T-A\n');
    const b = await upload('Invoice number: T-B\n');
    // A document of another template: the trigger's filter must keep it out.
    const other = await client.createTemplate({ folder_id: folder.id, name: 'Other' });
    await client.uploadAndWait(
      {
        files: [{ data: new TextEncoder().encode('Invoice number: T-X\n'), fileName: 'x.txt' }],
        template_id: other.id,
      },
      { intervalMs: 20 },
    );

    const workflowId = 'wftrigger000001';
    const triggerName = 'Docex Trigger';
    await n8n.importWorkflow(
      triggerWorkflow(workflowId, triggerName, {
        event: 'newOrChangedDocument',
        templateId: { __rl: true, mode: 'id', value: String(template.id) },
        simplify: false,
        startTime: new Date(Date.now() - 3_600_000).toISOString(),
      }),
    );
    await n8n.publish(workflowId);

    // Activation polls once: everything of the template changed since Start From.
    const first = await until(
      'the execution of the activation poll',
      () => executions(workflowId, triggerName)[0],
      180_000,
    );
    expect(first.status).toBe('success');
    expect(first.emitted.map((d) => d.document_id).sort()).toEqual([a, b].sort());
    expect(first.emitted[0]).toHaveProperty('General_fields');

    // Changes after the first poll: a new document, and A's file replaced (new data). B is untouched
    // and still inside the trigger's 2-minute overlap window: it must not come again.
    const c = await upload('Invoice number: T-C\n');
    await upload('Invoice number: T-A2\n', { doc_id: a });

    const later = await until(
      'the scheduled polls to emit C and the changed A',
      () => {
        const after = executions(workflowId, triggerName).slice(1);
        const ids = after.flatMap((e) => e.emitted.map((d) => d.document_id));
        return ids.includes(c) && ids.includes(a) ? after : undefined;
      },
      150_000,
    );
    expect(later.every((e) => e.status === 'success')).toBe(true);
    const emitted = later.flatMap((e) => e.emitted);
    expect(emitted.map((d) => d.document_id).sort()).toEqual([a, c].sort());
    const changedA = emitted.find((d) => d.document_id === a) as {
      General_fields: Record<string, { value: unknown }>;
    };
    expect(changedA.General_fields['Invoice number']!.value).toBe('T-A2');
    // n8n asked with updated_since, every time.
    expect(n8n.emulator.stats().requestsByOperation.fetch_documents).toBeGreaterThanOrEqual(2);
  });
});
