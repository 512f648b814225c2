/** Authentication rules 1–3, company scoping everywhere, the 422 format, CRUD paths, controls. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../emulator/index.ts';
import { catalog, openApi, upload, type Api } from './helpers.ts';

let api: Api;
beforeAll(async () => {
  api = await openApi({ controls: true });
});
afterAll(async () => api.emu.stop());

describe('authentication', () => {
  it('1. every endpoint needs the bearer credential: missing or wrong → 401 JSON', async () => {
    for (const [method, path] of [
      ['GET', '/v1/fetch_all_folders/'],
      ['POST', '/v1/check_api_key'],
      ['GET', '/v1/fetch_documents'],
    ] as const) {
      const none = await api.call(method, path, { key: null });
      expect(none.status).toBe(401);
      expect(none.body).toEqual({ detail: 'Not authenticated' });
      expect((await api.call(method, path, { key: 'wrong' })).body).toEqual({ detail: 'Invalid API key' });
    }
  });
  it('2. check_api_key checks the key', async () => {
    expect((await api.call('POST', '/v1/check_api_key/')).body).toMatchObject({
      valid: true,
      company_name: 'Acme',
    });
  });
  it("3. data is scoped to the caller's company: single resources answer 404 to another company", async () => {
    const { folder, template, fields } = await catalog(api);
    const instruction = (
      await api.call('POST', '/v1/create_instruction/', {
        json: { template_id: template.id, content: 'c', type: 'Line fields' },
      })
    ).body;
    const { answer, results } = await upload(api, `?template_id=${template.id}`, [['s.txt', 'scoped']]);
    const B = { key: api.B };
    for (const path of [
      `/v1/fetch_folder/?folder_id=${folder.id}`,
      `/v1/fetch_template/?template_id=${template.id}`,
      `/v1/fetch_field/?field_id=${fields[0].id}`,
      `/v1/fetch_instruction/${instruction.id}`,
      `/v1/fetch_tasks_results/?task_id=${answer.task_id}`,
      `/v1/fetch_document_data/?document_id=${results[0].document_id}`,
      `/v1/fetch_file/?document_id=${results[0].document_id}`,
      `/v1/fetch_raw_text/?task_id=${answer.task_id}`,
    ]) {
      expect((await api.call('GET', path, B)).status, path).toBe(404);
    }
    expect(
      (await api.call('PUT', `/v1/update_folder/?folder_id=${folder.id}`, { ...B, json: { name: 'x' } }))
        .status,
    ).toBe(404);
    expect((await api.call('DELETE', `/v1/delete_doc/?doc_id=${results[0].document_id}`, B)).status).toBe(
      404,
    );
    expect(
      (await api.call('GET', '/v1/fetch_all_folders/', B)).body.folders.map((f: { id: number }) => f.id),
    ).not.toContain(folder.id);
  });
});

describe('validation errors (422)', () => {
  it('missing, wrong type, bad enum, invalid JSON: detail entries with loc, msg, type, input', async () => {
    const missing = await api.call('GET', '/v1/fetch_folder/');
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toEqual({
      type: 'missing',
      loc: ['query', 'folder_id'],
      msg: 'Field required',
      input: null,
    });
    expect((await api.call('GET', '/v1/fetch_folder/?folder_id=abc')).body.detail[0]).toMatchObject({
      type: 'int_parsing',
      input: 'abc',
    });
    const { template } = await catalog(api);
    const bad = await api.call('POST', '/v1/create_field/', {
      json: { template_id: template.id, name: 'n', type: 'Other', format: 'nope' },
    });
    expect(bad.body.detail.map((d: { loc: string[]; type: string }) => [d.loc.join('.'), d.type])).toEqual([
      ['body.type', 'enum'],
      ['body.format', 'enum'],
    ]);
    const badLocale = await api.call('POST', '/v1/create_template/', {
      json: { folder_id: template.folder_id, name: 'l', number_locale: 'FR' },
    });
    expect(badLocale.body.detail[0]).toMatchObject({
      loc: ['body', 'number_locale'],
      msg: "Input should be 'EU' or 'US'",
    });
    const broken = await fetch(`${api.emu.url}/v1/create_folder/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.A}`, 'content-type': 'application/json' },
      body: '{"name":',
    });
    expect(broken.status).toBe(422);
    expect(((await broken.json()) as { detail: Array<{ type: string }> }).detail[0]!.type).toBe(
      'json_invalid',
    );
  });
});

describe('catalog paths and rules', () => {
  it('paths with and without the trailing slash; instruction ids in the query or as a path segment', async () => {
    const { template } = await catalog(api);
    const created = (
      await api.call('POST', '/v1/create_instruction', {
        json: { template_id: template.id, content: 'x', type: 'General fields' },
      })
    ).body;
    expect((await api.call('GET', `/v1/fetch_instruction?instruction_id=${created.id}`)).body.id).toBe(
      created.id,
    );
    expect((await api.call('GET', `/v1/fetch_instruction/${created.id}`)).body.id).toBe(created.id);
    expect(
      (await api.call('PUT', `/v1/update_instruction/${created.id}`, { json: { content: 'y' } })).body
        .content,
    ).toBe('y');
    expect((await api.call('DELETE', `/v1/delete_instruction/${created.id}`)).status).toBe(200);
    expect((await api.call('GET', `/v1/fetch_instruction/?instruction_id=${created.id}`)).status).toBe(404);
  });
  it('create_template takes folder_id from the body or the query; template_id copies fields; delete needs override', async () => {
    const { folder, template } = await catalog(api);
    const viaQuery = await api.call(
      'POST',
      `/v1/create_template/?folder_id=${folder.id}&template_id=${template.id}`,
      { json: { name: 'copy' } },
    );
    expect(viaQuery.body).toMatchObject({ folder_id: folder.id });
    expect(viaQuery.body.field_ids).toHaveLength(5);
    await upload(api, `?template_id=${template.id}`, [['k.txt', 'keep me']]);
    expect((await api.call('DELETE', `/v1/delete_template/?template_id=${template.id}`)).status).toBe(409);
    expect((await api.call('DELETE', `/v1/delete_folder/?folder_id=${folder.id}`)).status).toBe(409);
    expect(
      (await api.call('DELETE', `/v1/delete_folder/?folder_id=${folder.id}&override=true`)).body,
    ).toEqual({ deleted: true, folder_id: folder.id });
    expect((await api.call('GET', `/v1/fetch_template/?template_id=${template.id}`)).status).toBe(404);
  });
});

describe('test controls', () => {
  it('faults: injected statuses, 429 with Retry-After above a rate, 413 above a size, dropped connections', async () => {
    api.emu.faults.set({ errorRate: 1, statuses: [503], operations: ['fetch_all_folders'] });
    expect((await api.call('GET', '/v1/fetch_all_folders/')).status).toBe(503);
    expect((await api.call('POST', '/v1/check_api_key/')).status).toBe(200);
    api.emu.faults.set({ rateLimit: { perSecond: 2, retryAfterSeconds: 3 } });
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await api.call('POST', '/v1/check_api_key/'));
    expect(answers.map((a) => a.status)).toContain(429);
    expect(answers.find((a) => a.status === 429)!.headers.get('retry-after')).toBe('3');
    api.emu.faults.set({ dropRate: 1 });
    await expect(fetch(`${api.emu.url}/v1/check_api_key/`, { method: 'POST' })).rejects.toThrow();
    api.emu.faults.set({ maxUploadBytes: 10 });
    const { template } = await catalog(api);
    const big = new FormData();
    big.append('files', new Blob(['x'.repeat(100)]), 'big.txt');
    expect(
      (await api.call('POST', `/v1/upload_file/?template_id=${template.id}`, { form: big })).status,
    ).toBe(413);
    api.emu.faults.clear();
  });
  it('statistics and the HTTP control routes', async () => {
    await fetch(`${api.emu.url}/__emulator/reset-stats`, { method: 'POST' });
    await Promise.all(Array.from({ length: 5 }, () => api.call('POST', '/v1/check_api_key/')));
    const stats = (await (await fetch(`${api.emu.url}/__emulator/stats`)).json()) as {
      requestsByOperation: Record<string, number>;
      maxRequestsInOneSecond: number;
      peakConcurrency: number;
    };
    expect(stats.requestsByOperation.check_api_key).toBe(5);
    expect(stats.maxRequestsInOneSecond).toBeGreaterThanOrEqual(5);
    expect(stats.peakConcurrency).toBeGreaterThanOrEqual(1);
    const plain = await startEmulator({ port: 0 });
    expect((await fetch(`${plain.url}/__emulator/stats`)).status).toBe(404);
    await plain.stop();
  });
  it('a data folder keeps the state across a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'docex-emu-data-'));
    const first = await startEmulator({ port: 0, dataDir, taskDelayMs: 5 });
    const folder = (await (
      await fetch(`${first.url}/v1/create_folder/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${first.keys[0]}`, 'content-type': 'application/json' },
        body: '{"name":"kept"}',
      })
    ).json()) as { id: number };
    await first.stop();
    const second = await startEmulator({ port: 0, dataDir });
    const again = (await (
      await fetch(`${second.url}/v1/fetch_folder/?folder_id=${folder.id}`, {
        headers: { authorization: `Bearer ${second.keys[0]}` },
      })
    ).json()) as { name: string };
    expect(again.name).toBe('kept');
    await second.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
});
