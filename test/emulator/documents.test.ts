/** fetch_documents rules 1–6 and fetch_file / fetch_raw_text. */
import { beforeAll, describe, expect, it } from 'vitest';
import { catalog, upload, useApi } from './helpers.ts';

let now = Date.UTC(2026, 0, 10, 12, 0, 0);
let c1: Awaited<ReturnType<typeof catalog>>;
let c2: Awaited<ReturnType<typeof catalog>>;
const docs: Record<string, number> = {};

const api = useApi({ now: () => now });
beforeAll(async () => {
  c1 = await catalog(api);
  c2 = await catalog(api);
  now = Date.UTC(2026, 0, 10, 12, 0, 0);
  docs.jan10 = (
    await upload(api, `?template_id=${c1.template.id}`, [['a.txt', 'Invoice number: A']])
  ).results[0].document_id;
  now = Date.UTC(2026, 0, 11, 23, 59, 59);
  docs.jan11 = (
    await upload(api, `?template_id=${c2.template.id}`, [['b.txt', 'Invoice number: B']])
  ).results[0].document_id;
  now = Date.UTC(2026, 0, 12, 0, 0, 0);
  docs.jan12 = (
    await upload(api, `?template_id=${c1.template.id}`, [['c.txt', 'Invoice number: C']])
  ).results[0].document_id;
  await upload(
    api,
    `?template_id=${(await catalog(api, api.B)).template.id}`,
    [['other.txt', 'Invoice number: other']],
    api.B,
  );
});

const ids = async (query: string) => {
  const r = await api.call('GET', `/v1/fetch_documents/${query}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as number[];
};

describe('fetch_documents filters', () => {
  it('1. start_date keeps documents created on or after the date (inclusive)', async () => {
    expect(await ids('?start_date=2026-01-11')).toEqual([docs.jan11, docs.jan12]);
  });
  it('2. end_date keeps documents created on or before the date (inclusive)', async () => {
    expect(await ids('?end_date=2026-01-11')).toEqual([docs.jan10, docs.jan11]);
  });
  it('3. folder_id keeps documents whose template belongs to that folder', async () => {
    expect(await ids(`?folder_id=${c2.folder.id}`)).toEqual([docs.jan11]);
  });
  it('4. template_id keeps documents extracted with that template', async () => {
    expect(await ids(`?template_id=${c1.template.id}`)).toEqual([docs.jan10, docs.jan12]);
  });
  it('5. updated_since: created or modified at or after; no offset is UTC; an offset is honoured', async () => {
    expect(await ids('?updated_since=2026-01-11T23:59:59')).toEqual([docs.jan11, docs.jan12]);
    expect(await ids('?updated_since=2026-01-11T23:59:59.001Z')).toEqual([docs.jan12]);
    expect(await ids(`?updated_since=${encodeURIComponent('2026-01-12T01:59:59+02:00')}`)).toEqual([
      docs.jan11,
      docs.jan12,
    ]);
    expect(await ids('?updated_since=2026-01-12')).toEqual([docs.jan12]);
    now = Date.UTC(2026, 0, 20);
    await api.call('POST', '/v1/rerun_documents/', {
      json: { doc_ids: [docs.jan10], override_extraction: true },
    });
    expect(await ids('?updated_since=2026-01-19T00:00:00Z')).toEqual([docs.jan10]);
    const raw = await api.call('GET', '/v1/fetch_documents/?updated_since=2026-01-12T01:59:59+02:00');
    expect(raw.status).toBe(422);
    expect(raw.body.detail[0].loc).toEqual(['query', 'updated_since']);
  });
  it("6. without filters: every id of the caller's company, not another's", async () => {
    expect(await ids('')).toEqual([docs.jan10, docs.jan11, docs.jan12]);
  });
  it('malformed dates are 422 with loc and msg', async () => {
    for (const q of ['?start_date=2026-13-01', '?end_date=yesterday', '?updated_since=2026-01-01T25:00:00']) {
      const r = await api.call('GET', `/v1/fetch_documents/${q}`);
      expect(r.status).toBe(422);
      expect(r.body.detail[0]).toMatchObject({
        loc: ['query', q.slice(1, q.indexOf('='))],
        type: expect.any(String),
        msg: expect.any(String),
      });
    }
  });
});

describe('fetch_file and fetch_raw_text: document_id or task_id, not both, one needed', () => {
  it('serves the original bytes and the raw text by either id', async () => {
    const { answer, results } = await upload(api, `?template_id=${c1.template.id}`, [
      ['é x.txt', 'Invoice number: RAW-1\n'],
    ]);
    const byDoc = await api.call('GET', `/v1/fetch_file/?document_id=${results[0].document_id}`);
    expect(new TextDecoder().decode(byDoc.bytes)).toBe('Invoice number: RAW-1\n');
    expect(byDoc.headers.get('content-disposition')).toContain("filename*=UTF-8''%C3%A9%20x.txt");
    expect((await api.call('GET', `/v1/fetch_file/?task_id=${answer.task_id}`)).status).toBe(200);
    expect((await api.call('GET', `/v1/fetch_raw_text/?task_id=${answer.task_id}`)).body.raw_text).toBe(
      'Invoice number: RAW-1\n',
    );
    for (const q of ['', `?document_id=${results[0].document_id}&task_id=${answer.task_id}`]) {
      expect((await api.call('GET', `/v1/fetch_file/${q}`)).status).toBe(422);
      expect((await api.call('GET', `/v1/fetch_raw_text/${q}`)).status).toBe(422);
    }
  });
});
