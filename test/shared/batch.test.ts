/**
 * Batched uploads and the shared completion check (extractMany, planBatches, pairChildren,
 * followTasks) against a scripted service (nock) on a fake clock: what each file ends with, and
 * how many requests that took.
 */
import nock from 'nock';
import { describe, expect, test } from 'vitest';
import { DocexServerError, pairChildren, planBatches, type FileInput, type TaskResult } from '@docex/shared';
import { BASE, fakeTimeClient } from '../support/client.ts';
import { offlineNock } from './helpers-nock.ts';
import { fakeClock } from './helpers-poll.ts';

offlineNock();

const file = (name: string, text = name): FileInput => ({
  data: new TextEncoder().encode(text),
  fileName: name,
});

interface ScriptedTask {
  /** When (fake ms since the clock's start) it is final. */
  doneAt: number;
  status?: 'DONE' | 'FAILED' | 'DUPLICATE';
  documentId?: number;
  documentName?: string | null;
}

/**
 * A service: upload_file answers the next scripted tasks (children listed in `order`), tasks become
 * final at their time, and fetch_documents lists the documents of DONE tasks by updated_since.
 */
function service(options: {
  clock: ReturnType<typeof fakeClock>;
  tasks: Record<string, ScriptedTask>;
  uploads: Array<number | string[] | { task_id: string } | 'refuse' | 'lose' | 'unauthorized'>;
  listing?: 'ok' | 'refused' | 'blind';
}) {
  const requests: string[] = [];
  const uploadedNames: string[][] = [];
  const uploads = [...options.uploads];
  const answer = (id: string): TaskResult => {
    const t = options.tasks[id]!;
    const final = options.clock.elapsed() >= t.doneAt;
    const status = final ? (t.status ?? 'DONE') : 'IN PROGRESS';
    return {
      status,
      status_message: final ? `${status} message of ${id}` : 'working',
      task_id: id,
      document_id: final && status !== 'FAILED' ? (t.documentId ?? null) : null,
      document_name: final ? (t.documentName ?? null) : null,
      General_fields: final && status === 'DONE' ? { total: { value: id, confidence: 0.9 } } : null,
    } as TaskResult;
  };
  nock(BASE)
    .persist()
    .post('/v1/upload_file/')
    .query(true)
    .reply(async (req: Request) => {
      requests.push('upload_file');
      const body = await req.text();
      uploadedNames.push([...body.matchAll(/filename="([^"]+)"/g)].map((m) => m[1]!));
      const next = uploads.shift();
      if (next === 'refuse')
        return [422, { detail: [{ loc: ['body', 'files', 1], msg: 'not a document', type: 'value_error' }] }];
      if (next === 'lose') return [500, { detail: 'internal error' }];
      if (next === 'unauthorized') return [401, { detail: 'Invalid API key' }];
      if (typeof next === 'number') return [200, { task_id: `t${next}` }];
      if (Array.isArray(next)) return [200, { task_id: 'parent', child_task_ids: next }];
      return [200, next];
    })
    .get('/v1/fetch_tasks_results/')
    .query(true)
    .reply((req: Request) => {
      requests.push('fetch_tasks_results');
      const id = new URL(req.url).searchParams.get('task_id')!;
      if (!options.tasks[id]) return [404, { detail: 'Task not found' }];
      return [200, answer(id)];
    })
    .get('/v1/fetch_documents/')
    .query(true)
    .reply(() => {
      requests.push('fetch_documents');
      if (options.listing === 'refused')
        return [
          422,
          { detail: [{ loc: ['query', 'updated_since'], msg: 'extra', type: 'extra_forbidden' }] },
        ];
      if (options.listing === 'blind') return [200, []];
      const ids = Object.values(options.tasks)
        .filter((t) => options.clock.elapsed() >= t.doneAt && (t.status ?? 'DONE') === 'DONE')
        .map((t) => t.documentId!);
      return [200, [7, ...ids]]; // 7: someone else's document, changed lately
    });
  const count = (op: string) => requests.filter((r) => r === op).length;
  return { requests, uploadedNames, count };
}

function clockClient() {
  const clock = fakeClock();
  const client = fakeTimeClient({ now: clock.now, sleep: clock.sleep });
  return { client, clock };
}

const outcomeOf = (o: unknown) =>
  o && typeof o === 'object' && 'results' in o
    ? (o as { results: TaskResult[] }).results.map((r) => `${r.status} ${r.task_id}`).join(',')
    : `error ${(o as { error: Error }).error.constructor.name}`;

describe('planBatches', () => {
  test('groups in order up to maxFiles and maxBytes, a repeated name starts a new upload, streams and paths go alone', () => {
    const stream: FileInput = { stream: (async function* () {})(), fileName: 's.pdf' };
    const files = [
      file('a'),
      file('b'),
      file('a'),
      stream,
      file('c'),
      { path: '/x/d.pdf' },
      file('e'),
      file('f'),
      file('g'),
    ];
    expect(planBatches(files, { maxFiles: 2 })).toEqual([[0, 1], [2], [3], [4], [5], [6, 7], [8]]);
    expect(planBatches([file('a', 'xx'), file('b', 'yy'), file('c', 'zz')], { maxBytes: 4 })).toEqual([
      [0, 1],
      [2],
    ]);
    expect(planBatches([file('a', 'xxxxx'), file('b')], { maxBytes: 4 })).toEqual([[0], [1]]);
  });

  test('a path whose size the caller knows (it stat-ed the file) shares an upload like data', () => {
    const paths: FileInput[] = [
      { path: '/x/a.pdf', size: 3 },
      { path: '/x/b.pdf', size: 3 },
      { path: '/x/c.pdf', size: 3 },
      { path: '/x/d.pdf' },
    ];
    expect(planBatches(paths, { maxFiles: 2 })).toEqual([[0, 1], [2], [3]]);
    expect(planBatches(paths, { maxBytes: 7 })).toEqual([[0, 1], [2], [3]]);
  });
});

describe('pairChildren', () => {
  const end = (status: string, name: string | null, extra: Partial<TaskResult> = {}) =>
    ({ status, status_message: status, document_name: name, ...extra }) as TaskResult;

  test('by name, whatever order the children come in', () => {
    expect(pairChildren(['a', 'b', 'c'], [end('DONE', 'c'), end('DONE', 'a'), end('DONE', 'b')])).toEqual([
      1, 2, 0,
    ]);
  });
  test('by order once the batch names show it is kept; by elimination for the last one', () => {
    // A DUPLICATE names the document the service already held, a FAILED task no document at all.
    const children = [
      end('DONE', 'a'),
      end('DUPLICATE', 'older.pdf'),
      end('FAILED', null, { status_message: 'x' }),
      end('DONE', 'd'),
    ];
    expect(pairChildren(['a', 'b', 'c', 'd'], children)).toEqual([0, 1, 2, 3]);
    expect(pairChildren(['a', 'b'], [end('DUPLICATE', 'older.pdf'), end('DONE', 'a')])).toEqual([1, 0]);
  });
  test('children that say the same are interchangeable; different ones without evidence stay unpaired', () => {
    const failed = end('FAILED', null, { status_message: 'unreadable' });
    expect(pairChildren(['a', 'b'], [failed, { ...failed }])).toEqual([0, 1]);
    // The named pair contradicts the order: the other two cannot be placed.
    const crossed = [
      end('DONE', 'b'),
      end('DUPLICATE', 'x', { document_id: 1 }),
      end('DUPLICATE', 'y', { document_id: 2 }),
    ];
    expect(pairChildren(['a', 'b', 'c'], crossed)).toEqual([undefined, 0, undefined]);
  });
});

describe('extractMany', () => {
  test('one upload for many files, one listing per round, about one poll per file; results paired by name', async () => {
    const { client, clock } = clockClient();
    const tasks: Record<string, ScriptedTask> = {};
    const names = Array.from({ length: 10 }, (_, i) => `f${i}.pdf`);
    names.forEach(
      (name, i) => (tasks[`c${i}`] = { doneAt: 9_000 + i * 100, documentId: 100 + i, documentName: name }),
    );
    // The service lists the children in reverse: only the names tell which is which.
    const svc = service({ clock, tasks, uploads: [names.map((_, i) => `c${i}`).reverse()] });
    const { files, stats } = await client.extractMany(
      names.map((n) => file(n)),
      { template_id: 3 },
      { intervalMs: 2000 },
    );
    expect(files.map(outcomeOf)).toEqual(names.map((_, i) => `DONE c${i}`));
    expect(svc.uploadedNames).toEqual([names]);
    expect(svc.count('upload_file')).toBe(1);
    // One poll per file, and at most two found still running per round (4 rounds).
    expect(svc.count('fetch_tasks_results')).toBeLessThanOrEqual(10 + 2 * 4);
    expect(stats.polls).toBe(svc.count('fetch_tasks_results'));
    // 2, 5, 9.5, 16.25 s: four rounds.
    expect(svc.count('fetch_documents')).toBe(4);
  });

  test('a FAILED file (no document for the listing to show) and a DUPLICATE are found and given to their own files', async () => {
    const { client, clock } = clockClient();
    const svc = service({
      clock,
      tasks: {
        c0: { doneAt: 3000, documentId: 10, documentName: 'a.pdf' },
        c1: { doneAt: 1000, status: 'FAILED' },
        c2: { doneAt: 1000, status: 'DUPLICATE', documentId: 5, documentName: 'first-upload.pdf' },
        c3: { doneAt: 3000, documentId: 11, documentName: 'd.pdf' },
      },
      uploads: [['c0', 'c1', 'c2', 'c3']],
    });
    const { files } = await client.extractMany([file('a.pdf'), file('b.pdf'), file('c.pdf'), file('d.pdf')]);
    expect(files.map(outcomeOf)).toEqual(['DONE c0', 'FAILED c1', 'DUPLICATE c2', 'DONE c3']);
    expect(svc.count('upload_file')).toBe(1);
  });

  test('a batch refused as a whole goes file by file, and only the bad file fails', async () => {
    const { client, clock } = clockClient();
    const svc = service({
      clock,
      tasks: {
        t1: { doneAt: 0, documentId: 1, documentName: 'a.pdf' },
        t3: { doneAt: 0, documentId: 3, documentName: 'c.pdf' },
      },
      uploads: ['refuse', 1, 'refuse', 3],
    });
    const { files, stats } = await client.extractMany([file('a.pdf'), file('b.pdf'), file('c.pdf')]);
    expect(files.map(outcomeOf)).toEqual(['DONE t1', 'error DocexValidationError', 'DONE t3']);
    expect(svc.uploadedNames).toEqual([['a.pdf', 'b.pdf', 'c.pdf'], ['a.pdf'], ['b.pdf'], ['c.pdf']]);
    expect(stats.batchesRefused).toBe(1);
  });

  test('a refused key is not the files\' fault: the batch is not sent again file by file', async () => {
    const { client, clock } = clockClient();
    const svc = service({ clock, tasks: {}, uploads: ['unauthorized', 'unauthorized'] });
    const { files, stats } = await client.extractMany([file('a.pdf'), file('b.pdf'), file('c.pdf')], {}, {
      batch: { maxFiles: 2 },
    });
    expect(files.map(outcomeOf)).toEqual([
      'error DocexAuthenticationError',
      'error DocexAuthenticationError',
      'error DocexAuthenticationError',
    ]);
    expect(svc.uploadedNames).toEqual([['a.pdf', 'b.pdf'], ['c.pdf']]);
    expect(stats.batchesRefused).toBe(0);
  });

  test('a lost answer is never followed by a second upload: each file of the batch reports the error', async () => {
    const { client, clock } = clockClient();
    const svc = service({ clock, tasks: {}, uploads: ['lose'] });
    const { files } = await client.extractMany([file('a.pdf'), file('b.pdf')]);
    expect(files.map((f) => ('error' in f ? f.error : undefined))).toEqual([
      expect.any(DocexServerError),
      expect.any(DocexServerError),
    ]);
    expect(svc.count('upload_file')).toBe(1);
  });

  test('a service that ignores the array: the file its one task names is done, the others go alone', async () => {
    const { client, clock } = clockClient();
    const svc = service({
      clock,
      tasks: {
        t1: { doneAt: 0, documentId: 1, documentName: 'b.pdf' },
        t2: { doneAt: 0, documentId: 2, documentName: 'a.pdf' },
        t3: { doneAt: 0, documentId: 3, documentName: 'c.pdf' },
      },
      uploads: [1, 2, 3],
    });
    const { files, stats } = await client.extractMany([file('a.pdf'), file('b.pdf'), file('c.pdf')]);
    expect(files.map(outcomeOf)).toEqual(['DONE t2', 'DONE t1', 'DONE t3']);
    expect(svc.uploadedNames).toEqual([['a.pdf', 'b.pdf', 'c.pdf'], ['a.pdf'], ['c.pdf']]);
    expect(stats.arraysIgnored).toBe(1);
  });

  test('an old deployment that refuses updated_since: every task polled each round, as before', async () => {
    const { client, clock } = clockClient();
    const svc = service({
      clock,
      tasks: {
        c0: { doneAt: 4000, documentId: 1, documentName: 'a.pdf' },
        c1: { doneAt: 4000, documentId: 2, documentName: 'b.pdf' },
      },
      uploads: [['c0', 'c1']],
      listing: 'refused',
    });
    const { files, stats } = await client.extractMany(
      [file('a.pdf'), file('b.pdf')],
      {},
      { intervalMs: 2000 },
    );
    expect(files.map(outcomeOf)).toEqual(['DONE c0', 'DONE c1']);
    expect(stats.listingOff).toBe(true);
    expect(svc.count('fetch_documents')).toBe(1);
    // Rounds at 2 s (both in progress) and 5 s (both done).
    expect(svc.count('fetch_tasks_results')).toBe(4);
  });

  test('a listing that never shows the documents: every task is still found, by the safety net of maxIntervalMs', async () => {
    const { client, clock } = clockClient();
    const svc = service({
      clock,
      tasks: {
        c0: { doneAt: 3000, documentId: 1, documentName: 'a.pdf' },
        c1: { doneAt: 3000, documentId: 2, documentName: 'b.pdf' },
      },
      uploads: [['c0', 'c1']],
      listing: 'blind',
    });
    const { files, stats } = await client.extractMany(
      [file('a.pdf'), file('b.pdf')],
      {},
      { intervalMs: 2000 },
    );
    expect(files.map(outcomeOf)).toEqual(['DONE c0', 'DONE c1']);
    expect(stats.listingOff).toBe(false);
    // Nothing polled until the tasks were 15 s unasked (rounds 2, 5, 9.5, 16.25 s), then each once.
    expect(svc.count('fetch_tasks_results')).toBe(2);
    expect(clock.elapsed()).toBe(16_250);
  });

  test('a task still running at the deadline times out alone; the others keep their results', async () => {
    const { client, clock } = clockClient();
    service({
      clock,
      tasks: {
        c0: { doneAt: 1000, documentId: 1, documentName: 'a.pdf' },
        c1: { doneAt: 10 ** 9, documentId: 2, documentName: 'b.pdf' },
      },
      uploads: [['c0', 'c1']],
    });
    const { files } = await client.extractMany([file('a.pdf'), file('b.pdf')], {}, { timeoutMs: 60_000 });
    expect(files.map(outcomeOf)).toEqual(['DONE c0', 'error DocexTaskTimeoutError']);
  });
});
