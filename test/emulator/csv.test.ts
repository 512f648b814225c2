/** The four rules of the CSV upload to a datatable match agent. */
import { describe, expect, it } from 'vitest';
import { catalog, form, upload, useApi } from './helpers.ts';

const api = useApi();

describe('CSV upload to a datatable match agent', () => {
  const csv = (text: string, name = 'table.csv') => form([[name, text]], 'file');
  it('with_agents creates a datatable_match agent; a CSV is accepted', async () => {
    const { folder } = await catalog(api);
    const t = (
      await api.call('POST', '/v1/create_template/?with_agents=true', {
        json: { folder_id: folder.id, name: 'with agent' },
      })
    ).body;
    expect(t.agent_ids).toHaveLength(1);
    const r = await api.call('POST', `/v1/datatable_match_agents/${t.agent_ids[0]}/upload_csv/`, {
      form: csv('code,label\nA,1\nB,2\n'),
    });
    expect(r.body).toMatchObject({ agent_id: t.agent_ids[0], rows: 2, columns: ['code', 'label'] });
  });
  it('1. the agent must be of type datatable_match', async () => {
    const { template } = await catalog(api);
    const agent = api.emu.createAgent(api.A, { type: 'classifier', templateIds: [template.id] });
    expect(
      (await api.call('POST', `/v1/datatable_match_agents/${agent.id}/upload_csv/`, { form: csv('a\n1\n') }))
        .status,
    ).toBe(400);
  });
  it('2. the agent must be linked to exactly one template', async () => {
    const a = await catalog(api);
    const b = await catalog(api);
    const two = api.emu.createAgent(api.A, { templateIds: [a.template.id, b.template.id] });
    const none = api.emu.createAgent(api.A, { templateIds: [] });
    for (const agent of [two, none])
      expect(
        (
          await api.call('POST', `/v1/datatable_match_agents/${agent.id}/upload_csv/`, {
            form: csv('a\n1\n'),
          })
        ).status,
      ).toBe(400);
  });
  it('3–4. active status preserved; documents already extracted are not flagged for rerun; non-CSV refused', async () => {
    const { template } = await catalog(api);
    const agent = api.emu.createAgent(api.A, { templateIds: [template.id], active: false });
    const doc = (await upload(api, `?template_id=${template.id}`, [['x.txt', 'Invoice number: X']]))
      .results[0].document_id;
    expect(
      (
        await api.call('POST', `/v1/datatable_match_agents/${agent.id}/upload_csv/`, {
          form: csv('k,v\n1,2\n'),
        })
      ).status,
    ).toBe(200);
    expect(api.emu.agent(agent.id)!.active).toBe(false);
    expect((await api.call('POST', '/v1/rerun_documents/', { json: { doc_ids: [doc] } })).body.rerun).toBe(0);
    const png = await api.call('POST', `/v1/datatable_match_agents/${agent.id}/upload_csv/`, {
      form: form([['img.png', new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0])]], 'file'),
    });
    expect(png.status).toBe(422);
    expect(
      (
        await api.call('POST', `/v1/datatable_match_agents/${agent.id}/upload_csv/`, {
          form: csv('a\n1\n'),
          key: api.B,
        })
      ).status,
    ).toBe(404);
  });
});
