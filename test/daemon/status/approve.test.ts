/**
 * Approve from the status page (POST /api/approve, guarded exactly like Retry: same host, same
 * origin, JSON with the custom header, the token in a header) and from the shell
 * (`docex-sync approve` beside a running daemon, and with none running).
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { calibrate, runCli, stateOf, stopCliChildren, until, type World } from '../helpers.ts';
import { reviewWorld, tree } from '../review-helpers.ts';
import { call } from '../../support/http-call.ts';

let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});
await calibrate();

const TOKEN = 'tok-approve-0123456789';
const portOf = (daemon: RunningDaemon) => (daemon.http!.address() as AddressInfo).port;
const approveHeaders = (port: number) => ({
  'content-type': 'application/json',
  'x-docex-sync-request': 'approve',
  origin: `http://127.0.0.1:${port}`,
  'x-docex-sync-token': TOKEN,
});

/** A document held by the watch's min_confidence (Total not in the text: confidence 0.1). */
const LOW = 'Invoice number: L-1\nWidget | 4,00\n';

describe('Approve on the status page', () => {
  it('is refused without the token, from another origin or host, without the custom header; with them it moves the document on', async () => {
    world = await reviewWorld({ extra: `http: { port: 0, token_file: ./http-token }\n` });
    await writeFile(join(world.dir, 'http-token'), `${TOKEN}\n`);
    await writeFile(join(world.dir, 'inbox', 'low.txt'), LOW);
    const daemon = await world.start();
    const port = portOf(daemon);
    await until('held for review', () => daemon.db.fileCounts.counts().review === 1);
    const id = daemon.db.fileCounts.inReview(1)[0]!.id;

    // The page lists it with its reason and an Approve button.
    const page = await call(port, '/', { headers: { 'x-docex-sync-token': TOKEN } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('Waiting for review');
    expect(page.text).toContain('Total: confidence 0.1 is below 0.8');
    expect(page.text).toContain(`<button type="button" data-approve="${id}">Approve</button>`);
    expect(page.text).toContain('data-level="attention"');

    const body = JSON.stringify({ ids: [id] });
    const refused = [
      // No token (a cookie alone is not enough for a change: it rides along cross-site).
      { headers: { ...approveHeaders(port), 'x-docex-sync-token': '' }, status: 401 },
      { headers: { ...approveHeaders(port), 'x-docex-sync-token': 'wrong' }, status: 401 },
      {
        headers: { ...approveHeaders(port), 'x-docex-sync-token': '', cookie: `docex_sync_token=${TOKEN}` },
        status: 401,
      },
      // Another site's page: its origin, or a form post.
      { headers: { ...approveHeaders(port), origin: 'http://evil.example' }, status: 403 },
      { headers: { ...approveHeaders(port), 'sec-fetch-site': 'cross-site' }, status: 403 },
      {
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example' },
        status: 403,
      },
      // No custom header, not JSON, a rebound host name.
      { headers: { ...approveHeaders(port), 'x-docex-sync-request': undefined }, status: 403 },
      { headers: { ...approveHeaders(port), 'content-type': 'text/plain' }, status: 415 },
      { headers: { ...approveHeaders(port), host: `evil.example:${port}` }, status: 421 },
    ];
    for (const r of refused) {
      const headers = Object.fromEntries(
        Object.entries(r.headers).filter((e): e is [string, string] => e[1] !== undefined),
      );
      const answer = await call(port, '/api/approve', { method: 'POST', headers, body });
      expect(answer.status, JSON.stringify(r.headers)).toBe(r.status);
    }
    expect((await call(port, '/api/approve', { headers: approveHeaders(port) })).status).toBe(405);
    for (const bad of ['{"ids":[]}', '{"ids":["1"]}', 'not json', '{}']) {
      const answer = await call(port, '/api/approve', {
        method: 'POST',
        headers: approveHeaders(port),
        body: bad,
      });
      expect(answer.status).toBe(400);
    }
    expect(daemon.db.files.get(id)!.state).toBe('review');
    expect(await tree(join(world.dir, 'review'))).toContain('low.txt');

    const approved = await call(port, '/api/approve', {
      method: 'POST',
      headers: approveHeaders(port),
      body,
    });
    expect(approved.status).toBe(200);
    expect(approved.json()).toEqual({ approved: [id], skipped: [] });
    await until('archived', () => daemon.db.files.get(id)!.state === 'archived');
    expect(await tree(join(world.dir, 'processed'))).toEqual(['low.txt']);
    expect((await tree(join(world.dir, 'review'))).filter((f) => !f.startsWith('review-'))).toEqual([]);
    const results = await tree(join(world.dir, 'results'));
    expect(results.filter((f) => f.startsWith('low.doc-'))).toHaveLength(3);
    expect(daemon.db.files.get(id)!.approved_at).toBeGreaterThan(0);
    // Once more: nothing waits any more.
    const again = await call(port, '/api/approve', {
      method: 'POST',
      headers: approveHeaders(port),
      body: '{"all":true}',
    });
    expect(again.json()).toEqual({ approved: [], skipped: [] });
  });
});

describe('docex-sync approve', () => {
  it('beside a running daemon the files move at once; status lists them with their reasons before', async () => {
    world = await reviewWorld();
    await writeFile(join(world.dir, 'inbox', 'low.txt'), LOW);
    const run = runCli(['run', '--config', world.configFile]);
    await until('held for review', () => stateOf(world!, 'low.txt') === 'review').catch((e: unknown) => {
      throw new Error(`${(e as Error).message}\n${run.output()}`);
    });

    const status = runCli(['status', '--config', world.configFile]);
    expect(await status.exited).toBe(1);
    expect(status.stdout()).toContain(
      `  review ${join(world.dir, 'inbox', 'low.txt')} (waiting in ${join(world.dir, 'review', 'low.txt')}): Total: confidence 0.1 is below 0.8`,
    );

    const none = runCli(['approve', '--config', world.configFile, 'nothing-*.pdf']);
    expect(await none.exited).toBe(2);
    expect(none.output()).toContain(
      'docex-sync approve: nothing-*.pdf: no file waiting for review has this name, path or pattern (docex-sync review list shows them)',
    );
    const usage = runCli(['approve', '--config', world.configFile]);
    expect(await usage.exited).toBe(2);
    expect(usage.output()).toContain('name the files to approve (names, paths or patterns), or give --all');

    const approve = runCli(['approve', '--config', world.configFile, 'low.txt']);
    expect(await approve.exited).toBe(0);
    expect(approve.stdout()).toBe(
      '1 file(s) approved: the running docex-sync moves them to the processed and output folders now.\n',
    );
    await until('archived', () => stateOf(world!, 'low.txt') === 'archived');
    expect(await tree(join(world.dir, 'processed'))).toEqual(['low.txt']);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });

  it('with no daemon running it records the approval; the next start moves them', async () => {
    world = await reviewWorld();
    await writeFile(join(world.dir, 'inbox', 'low.txt'), LOW);
    const first = runCli(['run', '--config', world.configFile]);
    await until('held for review', () => stateOf(world!, 'low.txt') === 'review');
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const approve = runCli(['approve', '--config', world.configFile, '--all']);
    expect(await approve.exited).toBe(0);
    expect(approve.stdout()).toBe(
      '1 file(s) approved: docex-sync is not running; it moves them to the processed and output folders when it next starts.\n',
    );
    expect(await tree(join(world.dir, 'processed'))).toEqual([]);
    const second = runCli(['run', '--config', world.configFile]);
    await until('archived', () => stateOf(world!, 'low.txt') === 'archived');
    expect(await tree(join(world.dir, 'processed'))).toEqual(['low.txt']);
    const json = JSON.parse(
      await readFile(
        join(
          world.dir,
          'results',
          (await tree(join(world.dir, 'results'))).find((f) => f.endsWith('.json'))!,
        ),
        'utf8',
      ),
    );
    expect(json.archived_to).toBe(join(world.dir, 'processed', 'low.txt'));
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });
});
