/** Authentication rules 1–3: the bearer credential, check_api_key, company scoping everywhere. */
import { describe, expect, it } from 'vitest';
import { catalog, upload, useApi } from './helpers.ts';

const api = useApi();

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
