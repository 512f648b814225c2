/** rerun_documents rules 1–5. */
import { beforeAll, describe, expect, it } from 'vitest';
import { catalog, upload, useApi } from './helpers.ts';

let cat: Awaited<ReturnType<typeof catalog>>;
const api = useApi();
beforeAll(async () => {
  cat = await catalog(api);
});
const rerun = (json: unknown, key?: string) => api.call('POST', '/v1/rerun_documents/', { json, key });

describe('rerun_documents', () => {
  it('1. doc_ids has 1 to 500 items', async () => {
    expect((await rerun({ doc_ids: [] })).body.detail[0]).toMatchObject({
      type: 'too_short',
      loc: ['body', 'doc_ids'],
    });
    expect(
      (await rerun({ doc_ids: Array.from({ length: 501 }, (_, i) => i + 1) })).body.detail[0],
    ).toMatchObject({ type: 'too_long' });
    expect((await rerun({})).body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'doc_ids'] });
    expect((await rerun({ doc_ids: Array.from({ length: 500 }, (_, i) => 100000 + i) })).status).toBe(200);
  });

  it('2–3. re-extracts with the current template, never re-runs OCR; override affects extraction only', async () => {
    const { results } = await upload(api, `?template_id=${cat.template.id}`, [
      ['r.txt', 'Invoice number: R-1\nTotal: 5'],
    ]);
    const id = results[0].document_id;
    const before = (await api.call('GET', `/v1/fetch_raw_text/?document_id=${id}`)).body.raw_text;
    await api.call('POST', '/v1/create_field/', {
      json: { template_id: cat.template.id, name: 'Currency', type: 'General fields', format: 'text' },
    });
    const r = await rerun({ doc_ids: [id] });
    expect(r.body).toMatchObject({ rerun: 1, not_rerun: 0, rerun_doc_ids: [id], errors: [] });
    const data = (await api.call('GET', `/v1/fetch_document_data/?document_id=${id}`)).body;
    expect(Object.keys(data.General_fields)).toContain('Currency');
    expect((await api.call('GET', `/v1/fetch_raw_text/?document_id=${id}`)).body.raw_text).toBe(before);
  });

  it('4–5. counts, rerun_doc_ids, and one error per ineligible, foreign or missing document', async () => {
    const mine = (await upload(api, `?template_id=${cat.template.id}`, [['m.txt', 'Invoice number: M']]))
      .results[0].document_id;
    const theirs = (
      await upload(api, `?template_id=${(await catalog(api, api.B)).template.id}`, [['t.txt', 'x']], api.B)
    ).results[0].document_id;
    const r = await rerun({ doc_ids: [mine, theirs, 999999] });
    expect(r.body.rerun).toBe(0);
    expect(r.body.not_rerun).toBe(3);
    expect(
      r.body.errors.map((e: { id: number; error_code: string; id_type: string }) => [
        e.id,
        e.error_code,
        e.id_type,
      ]),
    ).toEqual([
      [mine, 'RERUN_NOT_NEEDED', 'document_id'],
      [theirs, 'DOCUMENT_PERMISSION_DENIED', 'document_id'],
      [999999, 'DOCUMENT_NOT_FOUND', 'document_id'],
    ]);
    expect((await rerun({ doc_ids: [mine], override_extraction: true })).body).toMatchObject({
      rerun: 1,
      rerun_doc_ids: [mine],
    });
    expect((await rerun({ doc_ids: [theirs] }, api.B)).body.errors[0].error_code).toBe('RERUN_NOT_NEEDED');
  });

  it('a template change (an instruction, the template itself) makes documents eligible again', async () => {
    const id = (await upload(api, `?template_id=${cat.template.id}`, [['i.txt', 'Invoice number: I']]))
      .results[0].document_id;
    expect((await rerun({ doc_ids: [id] })).body.rerun).toBe(0);
    await api.call('POST', '/v1/create_instruction/', {
      json: { template_id: cat.template.id, content: 'c', type: 'General fields' },
    });
    expect((await rerun({ doc_ids: [id] })).body.rerun).toBe(1);
    await api.call('PUT', `/v1/update_template/?template_id=${cat.template.id}`, { json: { desc: 'new' } });
    expect((await rerun({ doc_ids: [id] })).body.rerun).toBe(1);
  });
});
