/** Paths (with and without the trailing slash, both instruction forms) and the catalog's own rules. */
import { describe, expect, it } from 'vitest';
import { catalog, upload, useApi } from './helpers.ts';

const api = useApi();

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
