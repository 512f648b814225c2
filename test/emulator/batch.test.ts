/** fetch_files_batch rules 1–4 and its error table, row by row. */
import yauzl from 'yauzl';
import { beforeAll, describe, expect, it } from 'vitest';
import { catalog, form, upload, useApi } from './helpers.ts';

let tpl = 0;
const entries = (bytes: Uint8Array) =>
  new Promise<string[]>((resolve, reject) =>
    yauzl.fromBuffer(Buffer.from(bytes), { lazyEntries: true }, (e, zip) => {
      if (e || !zip) return reject(e);
      const names: string[] = [];
      zip
        .on('entry', (x: yauzl.Entry) => (names.push(x.fileName), zip.readEntry()))
        .on('end', () => resolve(names.sort()))
        .on('error', reject);
      zip.readEntry();
    }),
  );

const api = useApi();
/** Its tasks stay IN PROGRESS, so "not done yet" does not depend on the machine's load. */
const slow = useApi({ taskDelayMs: 600_000 });
beforeAll(async () => {
  tpl = (await catalog(api)).template.id;
});
const batch = (json: unknown, key?: string) => api.call('POST', '/v1/fetch_files_batch/', { json, key });

describe('fetch_files_batch', () => {
  it('1–2. document ids and task ids, combined; task ids resolve to their documents', async () => {
    const { answer, results } = await upload(api, `?template_id=${tpl}`, [
      ['one.txt', 'x: 1'],
      ['two.txt', 'x: 2'],
    ]);
    const r = await batch({ document_ids: [results[0].document_id], task_ids: [answer.child_task_ids[1]] });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/zip');
    expect(await entries(r.bytes)).toEqual(['one.txt', 'two.txt']);
  });

  it('3. a file referenced by several documents appears once', async () => {
    // Two documents share one file when a document's file is replaced (doc_id) with bytes another already has.
    const first = await upload(api, `?template_id=${tpl}`, [['same.txt', 'same bytes']]);
    const second = await upload(api, `?template_id=${tpl}`, [['other.txt', 'other bytes']]);
    await upload(api, `?doc_id=${second.results[0].document_id}`, [['same.txt', 'same bytes']]);
    const r = await batch({
      document_ids: [first.results[0].document_id, second.results[0].document_id],
      task_ids: [first.answer.task_id],
    });
    expect(await entries(r.bytes)).toEqual(['same.txt']);
  });

  it('4. fails as a whole on the first error (no partial archive)', async () => {
    const ok = await upload(api, `?template_id=${tpl}`, [['ok.txt', 'fine']]);
    const r = await batch({ document_ids: [ok.results[0].document_id, 987654] });
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toContain('application/json');
  });

  it('the error table, row by row', async () => {
    const done = await upload(api, `?template_id=${tpl}`, [['t.txt', 'table']]);
    const failed = await upload(api, `?template_id=${tpl}`, [['empty.txt', '']]);
    const foreign = await upload(
      api,
      `?template_id=${(await catalog(api, api.B)).template.id}`,
      [['b.txt', 'theirs']],
      api.B,
    );
    const gone = await upload(api, `?template_id=${tpl}`, [['gone.txt', 'gone']]);
    await api.call('DELETE', `/v1/delete_doc/?doc_id=${gone.results[0].document_id}&delete_file=true`);
    const shared = await upload(api, `?template_id=${tpl}`, [['keep.txt', 'kept']]);
    const expectError = async (
      json: unknown,
      status: number,
      error_code: string,
      error_type: string,
      id_type: string | null,
    ) => {
      const r = await batch(json);
      expect(r.status, error_code).toBe(status);
      expect(r.body).toMatchObject({ error_code, error_type, id_type, message: expect.any(String) });
    };
    await expectError({}, 400, 'BATCH_INVALID_INPUT', 'validation', null);
    await expectError({ document_ids: null, task_ids: [] }, 400, 'BATCH_INVALID_INPUT', 'validation', null);
    await expectError({ task_ids: ['no-such-task'] }, 404, 'TASK_NOT_FOUND', 'invalid_id', 'task_id');
    const slowTemplate = (await catalog(slow)).template.id;
    const pending = await slow.call('POST', `/v1/upload_file/?template_id=${slowTemplate}`, {
      form: form([['slow.txt', 'pending']]),
    });
    const pendingBatch = await slow.call('POST', '/v1/fetch_files_batch/', {
      json: { task_ids: [pending.body.task_id] },
    });
    expect(pendingBatch.status).toBe(422);
    expect(pendingBatch.body).toMatchObject({
      error_code: 'TASK_NOT_DONE',
      error_type: 'validation',
      id_type: 'task_id',
    });
    await expectError({ task_ids: [failed.answer.task_id] }, 422, 'TASK_NOT_DONE', 'validation', 'task_id');
    const dup = await upload(api, `?template_id=${tpl}`, [['t-again.txt', 'table']]);
    expect(dup.results[0].status).toBe('DUPLICATE');
    await expectError({ task_ids: [dup.answer.task_id] }, 422, 'TASK_NOT_DONE', 'validation', 'task_id');
    const removed = await upload(api, `?template_id=${tpl}`, [['removed.txt', 'removed later']]);
    await api.call('DELETE', `/v1/delete_doc/?doc_id=${removed.results[0].document_id}`);
    await expectError(
      { task_ids: [removed.answer.task_id] },
      422,
      'TASK_NO_DOCUMENT',
      'fetch_failed',
      'task_id',
    );
    await expectError({ document_ids: [424242] }, 404, 'DOCUMENT_NOT_FOUND', 'invalid_id', 'document_id');
    await expectError(
      { document_ids: [foreign.results[0].document_id] },
      403,
      'BATCH_PERMISSION_DENIED',
      'permission',
      'document_id',
    );
    await expectError(
      { task_ids: [foreign.answer.task_id] },
      403,
      'BATCH_PERMISSION_DENIED',
      'permission',
      'task_id',
    );
    api.emu.faults.set({ failBatchFetch: true });
    await expectError(
      { document_ids: [done.results[0].document_id] },
      500,
      'BATCH_FILE_FETCH_FAILED',
      'fetch_failed',
      null,
    );
    api.emu.faults.clear();
    // DOCUMENT_NO_FILE: two documents share one file (doc_id replaced with the same bytes); one is deleted with its file.
    const x = await upload(api, `?template_id=${tpl}`, [['x.txt', 'shared file']]);
    await upload(api, `?doc_id=${shared.results[0].document_id}`, [['x.txt', 'shared file']]);
    await api.call('DELETE', `/v1/delete_doc/?doc_id=${x.results[0].document_id}&delete_file=true`);
    await expectError(
      { document_ids: [shared.results[0].document_id] },
      404,
      'DOCUMENT_NO_FILE',
      'invalid_id',
      'document_id',
    );
    await expectError({ document_ids: [424243] }, 404, 'DOCUMENT_NOT_FOUND', 'invalid_id', 'document_id');
    expect((await batch({ document_ids: ['x'] })).status).toBe(422);
  });
});
