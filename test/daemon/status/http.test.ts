import { readdir, readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../daemon/src/config/config.ts';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { statusSnapshot, type StatusSnapshot } from '../../../daemon/src/status/read-model.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';
import { renderMain } from '../../../daemon/src/status/page.ts';
import { startDaemon } from '../../../daemon/src/app/daemon.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { createNodeClient } from '@docex/shared/node';
import { invoice, makeWorld, until, type World } from '../helpers.ts';
import { call } from '../../support/http-call.ts';

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const portOf = (daemon: RunningDaemon) => (daemon.http!.address() as AddressInfo).port;
const retryHeaders = (port: number) => ({
  'content-type': 'application/json',
  'x-docex-sync-request': 'retry',
  origin: `http://127.0.0.1:${port}`,
});

async function withFailedFile(extraYaml = '') {
  world = await makeWorld({ extraYaml: `http: { port: 0${extraYaml} }` });
  const daemon = await world.start();
  await writeFile(join(world.dir, 'inbox', 'good.txt'), invoice('G-1'));
  await writeFile(join(world.dir, 'inbox', 'empty.txt'), '');
  await until(
    'one archived, one failed and moved',
    () =>
      daemon.db.fileCounts.counts().archived === 1 &&
      daemon.db.files.inState('failed').some((r) => r.finalized),
  );
  return { daemon, port: portOf(daemon), dir: world.dir };
}

describe('the status page and its API', () => {
  it('GET /api/status and / show files per state and watch, the failed file and its reason; Retry puts it back', async () => {
    const { daemon, port, dir } = await withFailedFile();
    const status = (await call(port, '/api/status')).json() as StatusSnapshot;
    expect(status.files).toMatchObject({ archived: 1, failed: 1 });
    expect(status.watches).toEqual([
      expect.objectContaining({
        path: join(dir, 'inbox'),
        files: expect.objectContaining({ failed: 1 }),
        paused: null,
      }),
    ]);
    expect(status.failed.files).toEqual([
      expect.objectContaining({
        file: join(dir, 'failed', 'empty.txt'),
        reason: expect.stringContaining('the file is empty (0 bytes)'),
        moved: true,
      }),
    ]);
    expect(status.throughput.last_hour).toEqual({ processed: 1, failed: 1, review: 0 });
    // One health everywhere: a failed file needs attention on the page, in the API, /healthz and status.
    expect(status.health).toEqual({
      level: 'attention',
      ok: false,
      reasons: ['1 failed file(s): fix the cause, then docex-sync retry --all (or Retry on the status page)'],
    });
    const healthz = await call(port, '/healthz');
    expect(healthz.status).toBe(200);
    expect(healthz.json()).toMatchObject({
      status: 'attention',
      level: 'attention',
      reasons: status.health.reasons,
    });

    const page = await call(port, '/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toMatch(/script-src 'sha256-[^']+';/);
    expect(page.text).toContain('the file is empty (0 bytes)');
    expect(page.text).toContain(
      '<div class="banner attention" data-testid="health" data-level="attention"><strong>Needs attention</strong><ul><li>1 failed file(s)',
    );
    expect(page.text).toContain('1</span> finished (archived)');
    expect(page.text).toContain('done: results written, the original not moved yet');
    expect(page.text).toMatch(/Per 10 minutes, newest first: 1 processed, 1 failed; 0 processed;/);
    expect(page.text).toContain(`data-retry="${status.failed.files[0]!.id}"`);

    // The cause fixed where the file lies (it was empty), then Retry.
    await writeFile(join(dir, 'failed', 'empty.txt'), invoice('E-1'));
    const retried = await call(port, '/api/retry', {
      method: 'POST',
      headers: retryHeaders(port),
      body: JSON.stringify({ ids: [status.failed.files[0]!.id, 999_999] }),
    });
    expect(retried.status).toBe(200);
    expect(retried.json()).toEqual({
      retried: [status.failed.files[0]!.id],
      skipped: [{ id: 999_999, reason: 'no such file' }],
    });
    expect(await readdir(join(dir, 'failed'))).toEqual([]);
    expect(await readdir(join(dir, 'inbox'))).toEqual(['empty.txt']);
    const after = (await call(port, '/api/status')).json() as StatusSnapshot;
    expect(after.failed.total).toBe(0);
    // The same record goes through again, once: the watcher seeing it arrive did not count it twice.
    await until('archived', () => daemon.db.fileCounts.counts().archived === 2);
    expect(daemon.db.fileCounts.counts()).toMatchObject({ failed: 0, archived: 2, discovered: 0 });
    const all = await call(port, '/api/retry', {
      method: 'POST',
      headers: retryHeaders(port),
      body: '{"all":true}',
    });
    expect(all.json()).toEqual({ retried: [], skipped: [] });
  });

  it('refuses a cross-origin form post, a foreign Host header, a request without the custom header, and bad bodies', async () => {
    const { daemon, port } = await withFailedFile();
    const id = daemon.db.files.inState('failed')[0]!.id;
    // What a page on another site can make a browser send without a preflight: a form post.
    const form = await call(port, '/api/retry', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://evil.example',
        'sec-fetch-site': 'cross-site',
      },
      body: `ids=${id}`,
    });
    expect(form.status).toBe(403);
    const textPlain = await call(port, '/api/retry', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ all: true }),
    });
    expect(textPlain.status).toBe(415);
    const noHeader = await call(port, '/api/retry', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ all: true }),
    });
    expect(noHeader.status).toBe(403);
    const crossOriginJson = await call(port, '/api/retry', {
      method: 'POST',
      headers: { ...retryHeaders(port), origin: 'http://evil.example' },
      body: JSON.stringify({ all: true }),
    });
    expect(crossOriginJson.status).toBe(403);
    // DNS rebinding: evil.example resolved to 127.0.0.1; the browser sends its own name as Host.
    for (const path of ['/', '/api/status', '/partial']) {
      const foreign = await call(port, path, { headers: { host: `evil.example:${port}` } });
      expect(foreign.status).toBe(421);
      expect(foreign.text).not.toContain('empty.txt');
    }
    const rebound = await call(port, '/api/retry', {
      method: 'POST',
      headers: { ...retryHeaders(port), host: `evil.example:${port}`, origin: `http://evil.example:${port}` },
      body: JSON.stringify({ all: true }),
    });
    expect(rebound.status).toBe(421);
    for (const body of ['{"ids":[]}', '{"ids":["1"]}', 'not json', '{}']) {
      const bad = await call(port, '/api/retry', { method: 'POST', headers: retryHeaders(port), body });
      expect(bad.status).toBe(400);
    }
    expect((await call(port, '/api/retry')).status).toBe(405);
    expect(daemon.db.files.get(id)!.state).toBe('failed');
    expect((await call(port, '/', { headers: { host: `localhost:${port}` } })).status).toBe(200);
  });

  it('with a token: the page asks for it once (then a same-site cookie), changes need it in a header', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'http-token'), 'tok-123456789\n');
    await writeFile(
      world.configFile,
      `${await readFile(world.configFile, 'utf8')}http: { port: 0, token_file: ./http-token }\n`,
    );
    const daemon = await world.start();
    const port = portOf(daemon);
    expect((await call(port, '/')).status).toBe(401);
    expect((await call(port, '/api/status')).status).toBe(401);
    const entry = await call(port, '/?token=tok-123456789');
    expect(entry.status).toBe(303);
    expect(entry.headers.location).toBe('/');
    const cookie = String(entry.headers['set-cookie']).split(';')[0]!;
    expect(String(entry.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/);
    const page = await call(port, '/', { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<meta name="docex-sync-token" content="tok-123456789">');
    expect(
      (await call(port, '/api/status', { headers: { authorization: 'Bearer tok-123456789' } })).status,
    ).toBe(200);
    const withCookieOnly = await call(port, '/api/retry', {
      method: 'POST',
      headers: { ...retryHeaders(port), cookie },
      body: '{"all":true}',
    });
    expect(withCookieOnly.status).toBe(401);
    const withHeader = await call(port, '/api/retry', {
      method: 'POST',
      headers: { ...retryHeaders(port), 'x-docex-sync-token': 'tok-123456789' },
      body: '{"all":true}',
    });
    expect(withHeader.json()).toEqual({ retried: [], skipped: [] });
    expect((await call(port, '/healthz')).status).toBe(200);
  });

  it('listening beyond loopback must be meant (allow_remote) and then needs a token', async () => {
    world = await makeWorld();
    const base = await readFile(world.configFile, 'utf8');
    await writeFile(world.configFile, `${base}http: { port: 0, host: 0.0.0.0 }\n`);
    expect(() => loadConfig(world!.configFile)).toThrow(ConfigError);
    expect(() => loadConfig(world!.configFile)).toThrow(
      /http\.host: 0\.0\.0\.0 is not loopback; set http\.allow_remote/,
    );
    await writeFile(world.configFile, `${base}http: { port: 0, host: 0.0.0.0, allow_remote: true }\n`);
    expect(() => loadConfig(world!.configFile)).toThrow(/http\.token_file: required when http\.allow_remote/);
  });

  it('the last pulls are kept, newest first, and shown with their counts', () => {
    const db = new StateDb(':memory:');
    try {
      for (let i = 1; i <= 12; i++)
        db.flags.recordPull({
          at: new Date(Date.UTC(2026, 0, i)).toISOString(),
          status: 'done',
          documents: i,
        });
      db.flags.recordPull({
        at: '2026-02-01T00:00:00.000Z',
        status: 'failed',
        documents: 0,
        error: 'HTTP 503',
      });
      const config = loadConfig(join(import.meta.dirname, '../../../examples/docex-sync.yaml'));
      const snapshot = statusSnapshot({ db, config });
      expect(snapshot.pulls.map((p) => [p.status, p.documents])).toEqual([
        ['failed', 0],
        ['done', 12],
        ['done', 11],
        ['done', 10],
        ['done', 9],
      ]);
      expect(renderMain(snapshot)).toContain('failed: HTTP 503');
    } finally {
      db.close();
    }
  });

  it('every text on the page is escaped', () => {
    const evil = '<img src=x onerror=alert(1)>';
    const snapshot: StatusSnapshot = {
      generated_at: '2026-01-01T00:00:00.000Z',
      health: { level: 'failing', ok: false, reasons: [evil] },
      files: {
        held: 0,
        discovered: 0,
        stable: 0,
        uploading: 0,
        uploaded: 0,
        done: 0,
        review: 0,
        archived: 0,
        failed: 1,
      },
      outcomes: {},
      watches: [
        {
          path: evil,
          template_id: 1,
          folder_id: null,
          files: {
            held: 0,
            discovered: 0,
            stable: 0,
            uploading: 0,
            uploaded: 0,
            done: 0,
            review: 0,
            archived: 0,
            failed: 1,
          },
          paused: { reason: evil, since: '2026-01-01T00:00:00.000Z' },
          blind_watcher: { since: '2026-01-01T00:00:00.000Z', rescans: 3, files: 4, advice: evil },
          routes: [
            {
              route: evil,
              template_id: 1,
              folder_id: null,
              files: {
                held: 0,
                discovered: 0,
                stable: 0,
                uploading: 0,
                uploaded: 0,
                done: 0,
                review: 0,
                archived: 0,
                failed: 0,
              },
            },
          ],
        },
      ],
      held: { total: 1, files: [{ id: 2, file: evil, watch: evil, reason: evil }] },
      review: {
        total: 1,
        files: [
          {
            id: 3,
            file: evil,
            watch: evil,
            route: evil,
            original: evil,
            document_id: 1,
            reasons: [evil],
            rules: [{ rule: 'minConfidence', field: evil, value: evil }],
            since: '2026-01-01T00:00:00.000Z',
          },
        ],
      },
      failed: {
        total: 1,
        files: [
          {
            id: 1,
            file: evil,
            watch: evil,
            reason: evil,
            attempts: 1,
            task_id: null,
            at: '2026-01-01T00:00:00.000Z',
            moved: true,
          },
        ],
      },
      blocked: [{ id: 2, file: evil, state: 'done', problem: evil }],
      mailboxes: [
        {
          name: 'invoices',
          host: evil,
          user: evil,
          folder: evil,
          connected: false,
          idle: null,
          last_seen: null,
          login_refused: null,
          last_error: { at: '2026-01-01T00:00:00.000Z', message: evil },
          updated_at: null,
          messages: { taken: 1 },
          attachments: 1,
          skipped: [{ subject: evil, from: evil, name: evil, reason: evil }],
          left: { where: evil, count: 1, last: [{ subject: evil, from: evil, reason: evil }] },
        },
      ],
      service: { reachable: false, since: '2026-01-01T00:00:00.000Z', reason: evil, key_refused: false },
      reruns: [
        {
          name: evil,
          status: evil,
          started_at: '2026-01-01T00:00:00.000Z',
          finished_at: null,
          documents: 1,
          rerun: 1,
          not_rerun: 0,
        },
      ],
      pulls: [{ at: '2026-01-01T00:00:00.000Z', status: 'failed', documents: 0, error: evil }],
      throughput: { last_hour: { processed: 0, failed: 1, review: 0 }, per_10_minutes: [] },
    };
    const html = renderMain(snapshot);
    expect(html).not.toContain('<img');
    expect(html.match(/&lt;img src=x onerror=alert\(1\)&gt;/g)!.length).toBeGreaterThanOrEqual(20);
  });
});

describe('/healthz that means it', () => {
  it('503 with the reason when the service has been unreachable longer than allowed, 200 again once it answers', async () => {
    world = await makeWorld({ extraYaml: 'http: { port: 0, unhealthy_after_ms: 1000 }' });
    world.emulator.faults.set({ dropRate: 1, operations: ['upload_file'] });
    const daemon = await world.start();
    const port = portOf(daemon);
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('A-1'));
    await until('unreachable noted', () => daemon.db.flags.serviceUnreachable());
    const early = await call(port, '/healthz'); // not yet for long: needs attention, not failing
    expect(early.status).toBe(200);
    expect(early.json()).toMatchObject({ status: 'attention', level: 'attention' });
    const down = await until('unhealthy', async () => {
      const answer = await call(port, '/healthz');
      return answer.status === 503 && answer;
    });
    expect(down.json()).toMatchObject({
      status: 'unhealthy',
      level: 'failing',
      reasons: [expect.stringMatching(/^the service has been unreachable for \d+ s: /)],
    });
    world.emulator.faults.clear();
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1, 30_000);
    const up = await call(port, '/healthz');
    expect(up.status).toBe(200);
    expect(up.json()).toMatchObject({ status: 'ok', files: { archived: 1 } });
  });

  it('503 at once when the service refuses the API key', async () => {
    world = await makeWorld({ extraYaml: 'http: { port: 0 }' });
    const refused = createNodeClient({
      baseUrl: world.emulator.url,
      apiKey: 'not-the-key',
      retry: { maxRetries: 0 },
    });
    const log = createLogger('fatal', {
      pretty: false,
      destination: { write: () => true } as unknown as NodeJS.WritableStream,
    });
    const daemon = await startDaemon(world.config(), refused, log);
    try {
      await writeFile(join(world.dir, 'inbox', 'k.txt'), invoice('K-1'));
      await daemon.failure;
      const answer = await call(portOf(daemon), '/healthz');
      expect(answer.status).toBe(503);
      expect(answer.json()).toMatchObject({
        status: 'unhealthy',
        level: 'failing',
        reasons: [
          expect.stringMatching(
            /^the service refused the API key \(.+\) and docex-sync run stopped \(exit 3\): .*set DOCEX_API_KEY/,
          ),
        ],
      });
      const status = (await call(portOf(daemon), '/api/status')).json() as StatusSnapshot;
      expect(status.service.key_refused).toBe(true);
    } finally {
      await daemon.stop();
    }
  });

  it('a paused watch needs attention (200, not 503: a restart would not help), with the watch and why', async () => {
    world = await makeWorld({ extraYaml: 'http: { port: 0 }' });
    await writeFile(
      world.configFile,
      (await readFile(world.configFile, 'utf8')).replace(/template_id: \d+/, 'template_id: 987654'),
    );
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'p.txt'), invoice('P-1'));
    await until('paused', () => daemon.db.watches.pausedWatches().length === 1);
    const answer = await call(portOf(daemon), '/healthz');
    expect(answer.status).toBe(200);
    expect(answer.json()).toMatchObject({
      status: 'attention',
      level: 'attention',
      reasons: [expect.stringMatching(new RegExp(`^watch ${join(world.dir, 'inbox')} is paused: .*404`))],
    });
    const status = (await call(portOf(daemon), '/api/status')).json() as StatusSnapshot;
    expect(status.watches[0]!.paused).toMatchObject({ reason: expect.stringContaining('404') });
  });
});
