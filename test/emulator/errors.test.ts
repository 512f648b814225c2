/** Errors: the 422 validation format (missing, wrong type, bad enum, invalid JSON). */
import { describe, expect, it } from 'vitest';
import { catalog, useApi } from './helpers.ts';

const api = useApi();

describe('validation errors (422)', () => {
  it('missing, wrong type, bad enum, invalid JSON: detail entries with loc, msg, type, input', async () => {
    const missing = await api.call('GET', '/v1/fetch_folder/');
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toEqual({
      type: 'missing',
      loc: ['query', 'folder_id'],
      msg: 'Field required',
      input: null,
    });
    expect((await api.call('GET', '/v1/fetch_folder/?folder_id=abc')).body.detail[0]).toMatchObject({
      type: 'int_parsing',
      input: 'abc',
    });
    const { template } = await catalog(api);
    const bad = await api.call('POST', '/v1/create_field/', {
      json: { template_id: template.id, name: 'n', type: 'Other', format: 'nope' },
    });
    expect(bad.body.detail.map((d: { loc: string[]; type: string }) => [d.loc.join('.'), d.type])).toEqual([
      ['body.type', 'enum'],
      ['body.format', 'enum'],
    ]);
    const badLocale = await api.call('POST', '/v1/create_template/', {
      json: { folder_id: template.folder_id, name: 'l', number_locale: 'FR' },
    });
    expect(badLocale.body.detail[0]).toMatchObject({
      loc: ['body', 'number_locale'],
      msg: "Input should be 'EU' or 'US'",
    });
    const broken = await fetch(`${api.emu.url}/v1/create_folder/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.A}`, 'content-type': 'application/json' },
      body: '{"name":',
    });
    expect(broken.status).toBe(422);
    expect(((await broken.json()) as { detail: Array<{ type: string }> }).detail[0]!.type).toBe(
      'json_invalid',
    );
  });
});
