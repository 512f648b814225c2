/**
 * A request refused before its body is read (413 by its Content-Length, 401, 429, an injected
 * fault) is answered once the body has arrived, as nginx in front of the service does (it reads
 * and drops the rest: its lingering close). A Node server that answers first and leaves the body
 * unread makes a client still writing it see `write EPIPE` now and then instead of the answer
 * (nodejs/node#12339): docex-sync then took a 413 for a lost connection and sent the file again,
 * a flaky test in full runs (pipeline.test.ts, "an upload the service refuses (413)").
 */
import { describe, expect, it } from 'vitest';
import { useApi } from './helpers.ts';

const api = useApi();

/** An upload of `size` bytes with `key`; its HTTP status. */
async function upload(size: number, key: string) {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(size).fill(120)]), 'big.txt');
  return (await api.call('POST', '/v1/upload_file/?template_id=1', { key, form })).status;
}

describe('answers to requests refused before their body is read', () => {
  it('413, 401 and 429 are sent after the body is read, not before', async () => {
    api.emu.faults.set({ maxUploadBytes: 1000, operations: ['upload_file'] });
    expect(await upload(50_000, api.A)).toBe(413);
    api.emu.faults.clear();
    expect(await upload(50_000, 'not-a-key')).toBe(401);
    api.emu.faults.set({ rateLimit: { perSecond: 0 }, operations: ['upload_file'] });
    expect(await upload(50_000, api.A)).toBe(429);
    api.emu.faults.clear();
    expect(api.emu.stats().answeredBeforeBody).toBe(0);
  });
});
