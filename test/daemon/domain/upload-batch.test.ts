/** The pure decisions of batched uploads (daemon/src/domain/upload-batch.ts, task-data.ts). */
import { describe, expect, it } from 'vitest';
import { DocexApiError, type TaskResult } from '@docex/shared';
import {
  decodeBatch,
  encodeBatch,
  groupUploads,
  placeInBatch,
  refusedWhole,
  type UploadBatch,
} from '../../../daemon/src/domain/upload-batch.ts';
import { dataFromTask } from '../../../daemon/src/domain/task-data.ts';

const done = (name: string | null, extra: Partial<TaskResult> = {}): TaskResult =>
  ({ status: 'DONE', status_message: '', document_name: name, document_id: 1, ...extra }) as TaskResult;
const running: TaskResult = { status: 'IN PROGRESS', status_message: '' } as TaskResult;
const batch = (index: number, tasks: string[] | null = ['t0', 't1', 't2']): UploadBatch => ({
  names: ['a.pdf', 'b.pdf', 'c.pdf'],
  index,
  tasks,
});

describe('groupUploads', () => {
  const file = (id: number, target = 'w', name = `f${id}`, size = 10, alone = false) => ({
    id,
    target,
    name,
    size,
    alone,
  });
  it('groups by target, at most maxFiles and maxBytes, names unique, a marked or large file alone', () => {
    const groups = groupUploads(
      [
        file(1),
        file(2),
        file(3, 'v'),
        file(4, 'w', 'f1'),
        file(5, 'w', 'x', 10, true),
        file(6, 'w', 'big', 500),
        file(7),
      ],
      { maxFiles: 3, maxBytes: 100 },
    );
    expect([...groups].sort((a, b) => a[0]! - b[0]!)).toEqual([[1, 2], [3], [4, 7], [5], [6]]);
  });
});

describe('placeInBatch', () => {
  it('its own child by name; by the order its named siblings showed; waits while evidence is missing', () => {
    const ends = new Map([['t1', done('b.pdf')]]);
    expect(placeInBatch(batch(1), { taskId: 't1', result: done('b.pdf') }, ends)).toMatchObject({
      kind: 'own',
      taskId: 't1',
    });
    // A DUPLICATE names another document: placed by the order b.pdf's child showed.
    const dup = done('held.pdf', { status: 'DUPLICATE' });
    expect(
      placeInBatch(batch(0), { taskId: 't0', result: dup }, new Map([...ends, ['t0', dup]])),
    ).toMatchObject({
      kind: 'own',
      taskId: 't0',
    });
    // Alone with its unnamed answer: no evidence yet.
    expect(placeInBatch(batch(0), { taskId: 't0', result: dup }, new Map([['t0', dup]]))).toEqual({
      kind: 'wait',
    });
  });

  it('children in another order: the named child is taken, whatever position it has', () => {
    const ends = new Map([
      ['t0', done('c.pdf')],
      ['t1', done('b.pdf')],
      ['t2', done('a.pdf')],
    ]);
    expect(placeInBatch(batch(0), { taskId: 't0', result: done('c.pdf') }, ends)).toMatchObject({
      kind: 'own',
      taskId: 't2',
    });
  });

  it('all final and two unnamed out of order: unplaced, with a message that says what to do', () => {
    const f = (n: number) =>
      ({ status: 'FAILED', status_message: `bad ${n}`, document_name: null }) as TaskResult;
    const ends = new Map([
      ['t0', f(0)],
      ['t1', f(1)],
      ['t2', done('a.pdf')],
    ]);
    const placed = placeInBatch(batch(1), { taskId: 't1', result: f(1) }, ends);
    expect(placed.kind).toBe('unplaced');
    if (placed.kind === 'unplaced') expect(placed.error.message).toMatch(/look the file up.*batch_files: 1/);
  });

  it('one task for the request: its children, or the file its name shows; the others were not taken', () => {
    const parent = { ...running, child_task_ids: ['c0', 'c1', 'c2'] } as TaskResult;
    expect(placeInBatch(batch(2, ['p']), { taskId: 'p', result: parent }, new Map())).toEqual({
      kind: 'children',
      tasks: ['c0', 'c1', 'c2'],
    });
    expect(placeInBatch(batch(0, ['p']), { taskId: 'p', result: done('a.pdf') }, new Map())).toMatchObject({
      kind: 'own',
    });
    expect(placeInBatch(batch(1, ['p']), { taskId: 'p', result: done('a.pdf') }, new Map())).toEqual({
      kind: 'not-taken',
    });
    expect(placeInBatch(batch(1, ['p']), { taskId: 'p', result: running }, new Map())).toEqual({
      kind: 'wait',
    });
  });

  it('the record round-trips; a lone or marked row has none', () => {
    expect(decodeBatch(encodeBatch(batch(1)))).toEqual(batch(1));
    expect(decodeBatch(null)).toBeUndefined();
    expect(decodeBatch('{"alone":true}')).toBeUndefined();
  });
});

describe('refusedWhole', () => {
  it('a 4xx that took nothing, but the key, the target, time-outs and the rate', () => {
    const e = (status: number) =>
      new DocexApiError({ operation: 'upload_file', status, headers: {}, body: null, serverMessage: 'x' });
    expect([400, 413, 415, 422].map((s) => refusedWhole(e(s)))).toEqual([true, true, true, true]);
    expect([401, 403, 404, 408, 429, 500, 503].some((s) => refusedWhole(e(s)))).toBe(false);
  });
});

describe('dataFromTask', () => {
  const fields = { General_fields: { Total: { value: 5, confidence: 0.9 } }, Line_fields: {} };
  const json = { formats: ['json', 'csv'] };
  it('a watch that named its template, a DONE answer with every confidence (more: task-data.test.ts)', () => {
    expect(dataFromTask(done('a.pdf', fields), { formats: ['csv'] }, 7)).toMatchObject({
      document_id: 1,
      template_id: 7,
    });
    expect(dataFromTask(done('a.pdf', fields), json, 7)).toMatchObject({ document_id: 1, template_id: 7 });
    expect(dataFromTask(done('a.pdf', fields), { ...json, document_data: 'always' }, 7)).toBeUndefined();
    expect(dataFromTask(done('a.pdf', fields), json, undefined)).toBeUndefined();
    expect(dataFromTask(done('a.pdf', { ...fields, status: 'DUPLICATE' }), json, 7)).toBeUndefined();
    expect(dataFromTask(done('a.pdf', { ...fields, General_fields: { Total: 5 } }), json, 7)).toBeUndefined();
  });
});
