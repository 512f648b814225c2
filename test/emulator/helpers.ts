/** Plain HTTP against the emulator: the rules are checked as the service's users would see them. */
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../emulator/index.ts';

export interface Api {
  emu: Emulator;
  call(
    method: string,
    path: string,
    options?: { key?: string | null; json?: unknown; form?: FormData },
  ): Promise<{ status: number; body: any; headers: Headers; bytes: Uint8Array }>;
  A: string;
  B: string;
}

/** One emulator for the whole file: started before its tests, stopped after them. */
export function useApi(options: EmulatorOptions = {}): Api {
  const api = {} as Api;
  beforeAll(async () => {
    Object.assign(api, await openApi(options));
  });
  afterAll(async () => api.emu.stop());
  return api;
}

async function openApi(options: EmulatorOptions = {}): Promise<Api> {
  const emu = await startEmulator({ port: 0, taskDelayMs: 20, ...options });
  const [A, B] = emu.keys as [string, string];
  return {
    emu,
    A,
    B,
    async call(method, path, { key = A, json, form } = {}) {
      const headers: Record<string, string> = {};
      if (key) headers.authorization = `Bearer ${key}`;
      if (json !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${emu.url}${path}`, {
        method,
        headers,
        body: form ?? (json === undefined ? undefined : JSON.stringify(json)),
      });
      const bytes = new Uint8Array(await response.arrayBuffer());
      const text = new TextDecoder().decode(bytes);
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : '';
      } catch {
        /* binary or text */
      }
      return { status: response.status, body, headers: response.headers, bytes };
    },
  };
}

/** A folder, a template with an invoice number, a total and two line fields. */
export async function catalog(
  api: Api,
  key = api.A,
  locale: { number_locale?: string; date_locale?: string } = {},
) {
  const folder = (await api.call('POST', '/v1/create_folder/', { key, json: { name: `f-${Math.random()}` } }))
    .body;
  const template = (
    await api.call('POST', '/v1/create_template/', {
      key,
      json: { folder_id: folder.id, name: `t-${Math.random()}`, ...locale },
    })
  ).body;
  const field = (name: string, type: string, format: string, position: number) =>
    api.call('POST', '/v1/create_field/', {
      key,
      json: { template_id: template.id, name, type, format, position },
    });
  const fields = [
    (await field('Invoice number', 'General fields', 'invoice_number', 1)).body,
    (await field('Total', 'General fields', 'total_price', 2)).body,
    (await field('Invoice date', 'General fields', 'invoice_date', 3)).body,
    (await field('Description', 'Line fields', 'text', 1)).body,
    (await field('Amount', 'Line fields', 'total_price', 2)).body,
  ];
  return { folder, template, fields };
}

export function form(
  files: Array<[string, string | Uint8Array]>,
  field = 'files',
  extra: Record<string, string> = {},
) {
  const data = new FormData();
  for (const [name, content] of files) data.append(field, new Blob([content]), name);
  for (const [k, v] of Object.entries(extra)) data.append(k, v);
  return data;
}

/** Uploads and waits for every file task; answers the final task results. */
export async function upload(
  api: Api,
  query: string,
  files: Array<[string, string | Uint8Array]>,
  key = api.A,
) {
  const answer = await api.call('POST', `/v1/upload_file/${query}`, { key, form: form(files) });
  if (answer.status !== 200) throw new Error(`upload ${answer.status} ${JSON.stringify(answer.body)}`);
  const ids: string[] = answer.body.child_task_ids ?? [answer.body.task_id];
  const results = [];
  for (const id of ids) {
    for (;;) {
      const r = await api.call('GET', `/v1/fetch_tasks_results/?task_id=${id}`, { key });
      if (r.body.status !== 'IN PROGRESS') {
        results.push(r.body);
        break;
      }
      await delay(10);
    }
  }
  return { answer: answer.body, results };
}
