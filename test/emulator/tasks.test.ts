/** Tasks (rule 1 of States and transitions), uploads and the deterministic extraction. */
import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { catalog, form, upload, useApi } from './helpers.ts';

const api = useApi();
/** Tasks stay IN PROGRESS for the whole file: what a pending task looks like, whatever the machine's load. */
const slow = useApi({ taskDelayMs: 600_000 });

function pdf(lines: string[]): Uint8Array {
  const content = deflateSync(Buffer.from(['BT', ...lines.map((l) => `(${l}) Tj T*`), 'ET'].join('\n')));
  const head = Buffer.from(
    `%PDF-1.4\n1 0 obj\n<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`,
  );
  return Buffer.concat([head, content, Buffer.from('\nendstream\nendobj\n%%EOF\n')]);
}

describe('tasks', () => {
  it('IN PROGRESS, then DONE with the extraction; several files: a parent with child_task_ids', async () => {
    const pending = await catalog(slow);
    const first = await slow.call('POST', `/v1/upload_file/?template_id=${pending.template.id}`, {
      form: form([['p.txt', 'Invoice number: P']]),
    });
    expect(
      (await slow.call('GET', `/v1/fetch_tasks_results/?task_id=${first.body.task_id}`)).body.status,
    ).toBe('IN PROGRESS');
    const { template } = await catalog(api);
    const many = await upload(api, `?template_id=${template.id}`, [
      ['a.txt', 'Invoice number: A'],
      ['b.txt', 'Invoice number: B'],
    ]);
    expect(many.answer.child_task_ids).toHaveLength(2);
    expect(many.results.map((r) => r.status)).toEqual(['DONE', 'DONE']);
    const parent = (await api.call('GET', `/v1/fetch_tasks_results/?task_id=${many.answer.task_id}`)).body;
    expect(parent).toMatchObject({ status: 'DONE', child_task_ids: many.answer.child_task_ids });
  });

  it('DUPLICATE for the same bytes in the same company (not in another); FAILED for empty or unreadable files', async () => {
    const { template } = await catalog(api);
    const a = await upload(api, `?template_id=${template.id}`, [['d.txt', 'dup bytes']]);
    const b = await upload(api, `?template_id=${template.id}`, [['d2.txt', 'dup bytes']]);
    expect(b.results[0]).toMatchObject({ status: 'DUPLICATE', document_id: a.results[0].document_id });
    const other = await upload(
      api,
      `?template_id=${(await catalog(api, api.B)).template.id}`,
      [['d.txt', 'dup bytes']],
      api.B,
    );
    expect(other.results[0].status).toBe('DONE');
    const bad = await upload(api, `?template_id=${template.id}`, [
      ['e.pdf', ''],
      ['bin.dat', new Uint8Array([0, 159, 146, 150, 0])],
    ]);
    expect(bad.results.map((r) => [r.status, r.status_message])).toEqual([
      ['FAILED', 'Empty file'],
      ['FAILED', expect.stringContaining('Unreadable')],
    ]);
  });

  it('task rule 1: a task not DONE cannot be resolved by the batch fetch (TASK_NOT_DONE)', async () => {
    const { template } = await catalog(slow);
    const t = await slow.call('POST', `/v1/upload_file/?template_id=${template.id}`, {
      form: form([['n.txt', 'not yet']]),
    });
    const r = await slow.call('POST', '/v1/fetch_files_batch/', { json: { task_ids: [t.body.task_id] } });
    expect(r.body.error_code).toBe('TASK_NOT_DONE');
  });

  it('extraction: Label: value, line items by position, EU/US locales, synthetic values, PDF text runs', async () => {
    const eu = await catalog(api, api.A, { number_locale: 'EU', date_locale: 'EU' });
    const us = await catalog(api, api.A, { number_locale: 'US', date_locale: 'US' });
    const text =
      'Invoice number: INV-9\nTotal: 1.234,50\nInvoice date: 03/04/2026\nDescription | Amount\nWidget | 12,00\nGadget | 3,50\n';
    const e = (await upload(api, `?template_id=${eu.template.id}`, [['eu.txt', text]])).results[0];
    expect(e.General_fields['Invoice number']).toEqual({ value: 'INV-9', confidence: 0.95 });
    expect(e.General_fields.Total.value).toBe(1234.5);
    expect(e.General_fields['Invoice date'].value).toBe('2026-04-03');
    expect(e.Line_fields.Description.map((x: { value: string }) => x.value)).toEqual(['Widget', 'Gadget']);
    expect(e.Line_fields.Amount.map((x: { value: number }) => x.value)).toEqual([12, 3.5]);
    const u = (
      await upload(api, `?template_id=${us.template.id}`, [
        ['us.txt', 'Total: 1,234.50\nInvoice date: 03/04/2026\n'],
      ])
    ).results[0];
    expect(u.General_fields.Total.value).toBe(1234.5);
    expect(u.General_fields['Invoice date'].value).toBe('2026-03-04');
    expect(u.General_fields['Invoice number']).toEqual({ value: '', confidence: 0.1 });
    const p = (
      await upload(api, `?template_id=${eu.template.id}`, [
        ['scan.pdf', pdf(['Invoice number: PDF-7', 'Total: 9,90'])],
      ])
    ).results[0];
    expect(p.General_fields['Invoice number'].value).toBe('PDF-7');
    expect(p.Fraud_verdict).toMatch(/_RISK$/);
    expect(typeof p.Fraud_score).toBe('number');
  });
});
