/**
 * Compile-time checks of the client's input and output types (`npm run typecheck` runs tsc over
 * test/): every `@ts-expect-error` below must stay an error. The test body only checks that the
 * function exists; it is never called.
 */
import { expect, expectTypeOf, test } from 'vitest';
import type { BinaryResult, Folder, RerunResult, Template, UploadResult } from '@docex/shared';
import { nodeClient } from '../support/client.ts';

test('input and output types', () => {
  const client = nodeClient();
  const signal = new AbortController().signal;
  const compileOnly = async () => {
    await client.updateFolder({ folder_id: 1, name: 'x', desc: null });
    await client.call('update_field', { field_id: 1, position: 2 });
    await client.fetchDocuments({ updated_since: new Date(), start_date: '2024-01-01' });
    await client.fetchDocuments();
    await client.checkApiKey(undefined, { signal });
    await client.fetchInstruction({ instruction_id: 5 }, { instructionIdIn: 'path' });
    // @ts-expect-error an unknown key
    await client.fetchFolder({ folder_idd: 1 });
    // @ts-expect-error a required id missing
    await client.updateFolder({ name: 'x' });
    // @ts-expect-error call options go in the second argument
    await client.checkApiKey({ signal });
    // @ts-expect-error format is required on create
    await client.createField({ template_id: 1, name: 'n', type: 'General fields' });
    // @ts-expect-error type takes the two values of the document
    await client.createField({ template_id: 1, name: 'n', type: 'Header fields', format: 'text' });
    // @ts-expect-error a ParameterFormat value
    await client.createField({ template_id: 1, name: 'n', type: 'Line fields', format: 'money' });
    // @ts-expect-error EU or US
    await client.createTemplate({ folder_id: 1, name: 't', number_locale: 'FR' });
    // @ts-expect-error files is a list
    await client.uploadFile({ files: { path: 'a.pdf' } });

    expectTypeOf(await client.fetchFolder({ folder_id: 1 })).toEqualTypeOf<Folder>();
    expectTypeOf(await client.fetchTemplate({ template_id: 1 })).toEqualTypeOf<Template>();
    expectTypeOf(await client.uploadFile({ files: [{ path: 'a.pdf' }] })).toEqualTypeOf<UploadResult>();
    expectTypeOf(await client.rerunDocuments({ doc_ids: [1] })).toEqualTypeOf<RerunResult>();
    expectTypeOf(await client.fetchFile({ task_id: 't' })).toEqualTypeOf<BinaryResult>();
    expectTypeOf(await client.deleteDoc({ doc_id: 1 })).toEqualTypeOf<void>();
    expectTypeOf(await client.fetchDocuments()).toEqualTypeOf<number[]>();
  };
  expect(typeof compileOnly).toBe('function');
});
