/**
 * When a poll's answer stands for the document's data (daemon/src/domain/task-data.ts, issue #42),
 * as a pure function: only a DONE answer of a named template that carries the document's id and
 * name and every general field and line cell with a confidence, and never where the watch asks
 * for the document's data always. What the results then hold: test/daemon/pipeline/task-data.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { TaskResult } from '@docex/shared';
import { dataFromTask } from '../../../daemon/src/domain/task-data.ts';

const done: TaskResult = {
  status: 'DONE',
  status_message: 'ok',
  task_id: 'task-1',
  document_id: 7,
  document_name: 'R-1.pdf',
  General_fields: {
    'Invoice number': { value: 'R-1', confidence: 0.98 },
    Total: { value: 12.5, confidence: 0.9 },
  },
  Line_fields: { Description: [{ value: 'Bolt', confidence: 0.8 }] },
  Fraud_verdict: 'clean',
};
const json = { formats: ['json', 'csv'] as const, document_data: 'when_needed' as const };

describe('dataFromTask', () => {
  it('a complete DONE answer stands for the document: its own fields, the template its upload named', () => {
    expect(dataFromTask(done, json, 3)).toEqual({
      document_id: 7,
      template_id: 3,
      document_name: 'R-1.pdf',
      General_fields: done.General_fields,
      Line_fields: done.Line_fields,
      task_id: 'task-1',
    });
    // CSV only, as before.
    expect(dataFromTask(done, { formats: ['csv'] }, 3)?.document_id).toBe(7);
  });

  it('document_data: always reads the document, whatever the answer carries', () => {
    expect(dataFromTask(done, { ...json, document_data: 'always' }, 3)).toBeUndefined();
    expect(dataFromTask(done, { formats: ['csv'], document_data: 'always' }, 3)).toBeUndefined();
  });

  it('falls back to the document data when the answer lacks anything the results need', () => {
    const lacking: Array<[string, TaskResult | null, number | undefined]> = [
      ['no answer', null, 3],
      ['no template named (the service chose one)', done, undefined],
      ["a DUPLICATE: another upload's document", { ...done, status: 'DUPLICATE' }, 3],
      ['no document id', { ...done, document_id: null }, 3],
      ['no document name', { ...done, document_name: null }, 3],
      ['no general fields', { ...done, General_fields: null }, 3],
      ['empty general fields', { ...done, General_fields: {} }, 3],
      ['a general field without a confidence', { ...done, General_fields: { Total: 12.5 } }, 3],
      ['no line fields', { ...done, Line_fields: null }, 3],
      ['a line cell without a confidence', { ...done, Line_fields: { Description: [{ value: 'Bolt' }] } }, 3],
    ];
    for (const [why, task, template] of lacking)
      expect(dataFromTask(task, json, template), why).toBeUndefined();
  });
});
