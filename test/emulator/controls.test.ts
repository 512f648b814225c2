/** Test controls off the public API: faults, statistics, the HTTP control routes, the data folder. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { startEmulator } from '../../emulator/index.ts';
import { catalog, useApi } from './helpers.ts';

const api = useApi({ controls: true });

describe('test controls', () => {
  it('faults: injected statuses, 429 with Retry-After above a rate, 413 above a size, dropped connections', async () => {
    api.emu.faults.set({ errorRate: 1, statuses: [503], operations: ['fetch_all_folders'] });
    expect((await api.call('GET', '/v1/fetch_all_folders/')).status).toBe(503);
    expect((await api.call('POST', '/v1/check_api_key/')).status).toBe(200);
    api.emu.faults.set({ rateLimit: { perSecond: 2, retryAfterSeconds: 3 } });
    api.emu.resetStats();
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await api.call('POST', '/v1/check_api_key/'));
    expect(answers.map((a) => a.status)).toContain(429);
    // Each answer is counted by its status, a refusal included (the burst measure reads the 429s);
    // counted once the answer is finished, which may be just after the client has read it.
    const refused = answers.filter((a) => a.status === 429).length;
    await vi.waitFor(() =>
      expect(api.emu.stats().answersByStatus).toEqual({ 200: 4 - refused, 429: refused }),
    );
    expect(answers.find((a) => a.status === 429)!.headers.get('retry-after')).toBe('3');
    api.emu.faults.set({ dropRate: 1 });
    await expect(fetch(`${api.emu.url}/v1/check_api_key/`, { method: 'POST' })).rejects.toThrow();
    api.emu.faults.set({ maxUploadBytes: 10 });
    const { template } = await catalog(api);
    const big = new FormData();
    big.append('files', new Blob(['x'.repeat(100)]), 'big.txt');
    expect(
      (await api.call('POST', `/v1/upload_file/?template_id=${template.id}`, { form: big })).status,
    ).toBe(413);
    api.emu.faults.clear();
  });
  it('statistics and the HTTP control routes', async () => {
    await fetch(`${api.emu.url}/__emulator/reset-stats`, { method: 'POST' });
    await Promise.all(Array.from({ length: 5 }, () => api.call('POST', '/v1/check_api_key/')));
    const stats = (await (await fetch(`${api.emu.url}/__emulator/stats`)).json()) as {
      requestsByOperation: Record<string, number>;
      maxRequestsInOneSecond: number;
      firstArrivalMs: number | null;
      lastArrivalMs: number | null;
      peakConcurrency: number;
    };
    expect(stats.requestsByOperation.check_api_key).toBe(5);
    // When the first and the last of them arrived: the span a burst's requests took at the service.
    expect(stats.firstArrivalMs).toBeTypeOf('number');
    expect(stats.lastArrivalMs).toBeGreaterThanOrEqual(stats.firstArrivalMs!);
    api.emu.resetStats();
    expect(api.emu.stats()).toMatchObject({ firstArrivalMs: null, lastArrivalMs: null });
    expect(stats.maxRequestsInOneSecond).toBeGreaterThanOrEqual(5);
    expect(stats.peakConcurrency).toBeGreaterThanOrEqual(1);
    const plain = await startEmulator({ port: 0 });
    expect((await fetch(`${plain.url}/__emulator/stats`)).status).toBe(404);
    await plain.stop();
  });
  it('a data folder keeps the state across a restart', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'docex-emu-data-'));
    const first = await startEmulator({ port: 0, dataDir, taskDelayMs: 5 });
    const folder = (await (
      await fetch(`${first.url}/v1/create_folder/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${first.keys[0]}`, 'content-type': 'application/json' },
        body: '{"name":"kept"}',
      })
    ).json()) as { id: number };
    await first.stop();
    const second = await startEmulator({ port: 0, dataDir });
    const again = (await (
      await fetch(`${second.url}/v1/fetch_folder/?folder_id=${folder.id}`, {
        headers: { authorization: `Bearer ${second.keys[0]}` },
      })
    ).json()) as { name: string };
    expect(again.name).toBe('kept');
    await second.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
});
