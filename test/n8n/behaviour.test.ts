/**
 * How the Docex node behaves around the operations, in n8n-core's real contexts over real HTTP:
 * list search, Continue On Fail, Items in Parallel, rerun chunking, and the requests it builds.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ILoadOptionsFunctions } from 'n8n-workflow';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import { searchFolders, searchTemplates } from '../../nodes/Docex/methods/listSearch.ts';
import { toHttpRequestOptions } from '../../nodes/Docex/transport/index.ts';
import { loadOptionsContext, runDocex, type Credentials } from './harness.ts';

let emu: Emulator;
let credentials: Credentials;

/** A stand-in service for what the emulator does not do on request: slow answers, a 422 to any input. */
const fake = { server: undefined as Server | undefined, url: '', inFlight: 0, most: 0, served: 0 };

beforeAll(async () => {
  emu = await startEmulator({ port: 0, taskDelayMs: 30 });
  credentials = { baseUrl: emu.url, apiKey: emu.keys[0]! };
  fake.server = createServer((req, res) => {
    req.resume();
    if (req.headers.authorization === 'Bearer k-422') {
      res.writeHead(422, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          detail: [
            { loc: ['body', 'name'], msg: 'field required', type: 'missing' },
            { loc: ['query', 'limit'], msg: 'value is not a valid integer', type: 'int_parsing' },
          ],
        }),
      );
      return;
    }
    fake.inFlight++;
    fake.most = Math.max(fake.most, fake.inFlight);
    setTimeout(() => {
      fake.inFlight--;
      fake.served++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"valid":true}');
    }, 40);
  });
  await new Promise<void>((r) => fake.server!.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await emu.stop();
  await new Promise<void>((r) => fake.server!.close(() => r()));
});

const run = async (
  parameters: Record<string, unknown>,
  options: { items?: number; continueOnFail?: boolean } = {},
) =>
  await runDocex(parameters as never, {
    credentials,
    items: Array.from({ length: options.items ?? 1 }, (_, i) => ({ json: { i } })),
    continueOnFail: options.continueOnFail,
  });

describe('list search', () => {
  it('lists folders by name, filtered, and templates with their folder', async () => {
    const invoices = (
      await run({
        resource: 'folder',
        operation: 'create',
        additionalFields: { name: 'Invoices 2026' },
      })
    )[0]!.json;
    await run({ resource: 'folder', operation: 'create', additionalFields: { name: 'Receipts' } });
    await run({
      resource: 'template',
      operation: 'create',
      folderId: { __rl: true, mode: 'id', value: String(invoices.id) },
      name: 'Supplier invoice',
    });
    const ctx = loadOptionsContext(credentials) as unknown as ILoadOptionsFunctions;

    const all = await searchFolders.call(ctx);
    expect(all.results.map((r) => r.name)).toEqual(expect.arrayContaining(['Invoices 2026', 'Receipts']));
    const filtered = await searchFolders.call(ctx, 'invoice');
    expect(filtered.results).toEqual([
      expect.objectContaining({ name: 'Invoices 2026', value: String(invoices.id) }),
    ]);
    const templates = await searchTemplates.call(ctx, 'supplier');
    expect(templates.results).toEqual([
      expect.objectContaining({ name: 'Supplier invoice (Invoices 2026)' }),
    ]);
    expect(await searchTemplates.call(ctx, 'no such thing')).toEqual({ results: [] });
  });

  it('a wrong key fails the list with the service status, not an empty list', async () => {
    const ctx = loadOptionsContext({
      ...credentials,
      apiKey: 'wrong-key',
    }) as unknown as ILoadOptionsFunctions;
    await expect(searchFolders.call(ctx)).rejects.toMatchObject({ status: expect.any(Number) });
  });
});

describe('Continue On Fail', () => {
  it('turns a failed item into an error item paired with it; the other items go on', async () => {
    const folder = (
      await run({ resource: 'folder', operation: 'create', additionalFields: { name: 'Kept' } })
    )[0]!.json;
    const ids = [String(folder.id), '987654'];
    const out = await runDocex(
      {
        resource: 'folder',
        operation: 'get',
        folderId: { __rl: true, mode: 'id', value: '={{ $json.id }}' },
      },
      { credentials, items: ids.map((id) => ({ json: { id } })), continueOnFail: true },
    );
    expect(out).toHaveLength(2);
    expect(out[0]).toMatchObject({ json: { id: folder.id, name: 'Kept' }, pairedItem: { item: 0 } });
    expect(out[1]).toMatchObject({ json: { httpCode: '404' }, pairedItem: { item: 1 } });
    expect(String(out[1]!.json.error)).toMatch(/fetch_folder/);
  });

  it('without it, the first failed item fails the run with a NodeApiError naming the item', async () => {
    await expect(
      run({
        resource: 'folder',
        operation: 'get',
        folderId: { __rl: true, mode: 'id', value: '987654' },
      }),
    ).rejects.toMatchObject({ name: 'NodeApiError', httpCode: '404', context: { itemIndex: 0 } });
  });

  it('refuses an ID that is not a whole number before sending, naming the parameter as the form does', async () => {
    emu.resetStats();
    const error = await run({
      resource: 'folder',
      operation: 'get',
      folderId: { __rl: true, mode: 'id', value: ' 12a ' },
    }).then(
      () => expect.fail('an ID that is not one must fail the item'),
      (e: unknown) => e as Error & { description?: string },
    );
    expect(error).toMatchObject({ name: 'NodeOperationError', context: { itemIndex: 0 } });
    expect(error.message).toBe('Folder: "12a" is not an ID');
    expect(error.description).toMatch(/whole number/);
    expect(emu.stats().requestsByOperation.fetch_folder ?? 0).toBe(0);
    // Surrounding blanks are not an error (a pasted ID), as n8n's own rule allowed them.
    const folder = (
      await run({ resource: 'folder', operation: 'create', additionalFields: { name: 'Blank' } })
    )[0]!.json;
    const got = await run({
      resource: 'folder',
      operation: 'get',
      folderId: { __rl: true, mode: 'id', value: ` ${folder.id} ` },
    });
    expect(got[0]!.json).toMatchObject({ id: folder.id, name: 'Blank' });
  });

  it('refuses a bad input before sending, naming the operation and the parameter', async () => {
    emu.resetStats();
    const error = await run({
      resource: 'document',
      operation: 'getAll',
      returnAll: true,
      filters: { startDate: 'not a date' },
    }).catch((e: unknown) => e as Error);
    expect(error).toMatchObject({ name: 'NodeOperationError' });
    expect((error as Error).message).toMatch(/fetch_documents.*start_date/s);
    expect(emu.stats().requestsByOperation.fetch_documents ?? 0).toBe(0);
  });

  it('a 422 of the service shows each `detail` entry as loc: msg', async () => {
    const error = await runDocex(
      { resource: 'account', operation: 'checkApiKey' },
      { credentials: { baseUrl: fake.url, apiKey: 'k-422' } },
    ).then(
      () => expect.fail('a 422 must fail the item'),
      (e: unknown) => e as { httpCode: string; description: string; message: string },
    );
    expect(error).toMatchObject({ name: 'NodeApiError', httpCode: '422' });
    expect(error.message).toMatch(/check_api_key/);
    expect(error.description).toBe('name: field required\nquery.limit: value is not a valid integer');
    expect(JSON.stringify(error)).not.toContain('k-422');
  });
});

describe('Items in Parallel', () => {
  for (const [concurrency, expected] of [
    [undefined, 1],
    [3, 3],
    [50, 10],
  ] as const) {
    it(`sends at most ${expected} item(s) at once when set to ${String(concurrency ?? 'the default')}`, async () => {
      fake.most = 0;
      fake.served = 0;
      const out = await runDocex(
        {
          resource: 'account',
          operation: 'checkApiKey',
          options: concurrency === undefined ? {} : { concurrency },
        },
        {
          // Far above the default rate (10/s): paced, at most one request would be in flight at a time.
          credentials: { baseUrl: fake.url, apiKey: 'k-parallel', requestsPerSecond: 10_000 },
          items: Array.from({ length: 12 }, () => ({ json: {} })),
        },
      );
      expect(out.map((o) => o.pairedItem)).toEqual(Array.from({ length: 12 }, (_, item) => ({ item })));
      expect(fake.served).toBe(12);
      expect(fake.most).toBe(expected);
    });
  }
});

describe('Rerun of more than 500 documents', () => {
  it('is sent in chunks of 500 and merged into one answer', async () => {
    emu.resetStats();
    const ids = Array.from({ length: 1203 }, (_, i) => 500_000 + i);
    const out = await run({ resource: 'document', operation: 'rerun', documentIds: ids.join(',') });
    expect(emu.stats().requestsByOperation.rerun_documents).toBe(3);
    expect(out).toHaveLength(1);
    expect(out[0]!.json).toMatchObject({ rerun: 0, not_rerun: 1203, chunks: 3 });
    expect(out[0]!.json.errors).toHaveLength(1203);
  });
});

describe('requests built for n8n', () => {
  it('keeps the + of a time offset encoded, and sends an empty JSON object body', () => {
    const options = toHttpRequestOptions('https://x.example/', {
      method: 'POST',
      path: '/v1/create_folder/',
      query: { updated_since: '2026-01-01T00:00:00+02:00' },
      headers: {},
      body: { type: 'json', value: {} },
    } as never);
    expect(options.url).toBe(
      'https://x.example/v1/create_folder/?updated_since=2026-01-01T00%3A00%3A00%2B02%3A00',
    );
    expect(options.body).toBe('{}');
    expect(options.headers).toMatchObject({ 'content-type': 'application/json' });
    expect(options).toMatchObject({
      returnFullResponse: true,
      ignoreHttpStatusErrors: true,
      json: true,
      disableFollowRedirect: true,
    });
  });

  it('asks for bytes when the answer is a file', () => {
    const options = toHttpRequestOptions('https://x.example', {
      method: 'GET',
      path: '/v1/fetch_file/',
      query: { document_id: '1' },
      headers: {},
      responseType: 'binary',
    } as never);
    expect(options).toMatchObject({ encoding: 'arraybuffer', json: false });
  });
});
