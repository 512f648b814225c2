/**
 * The review station's actions and their audit trail: approve and retry from the command line are
 * rows of the audit trail and lines in the running daemon's log; `review log`; `reject` from the
 * command line; Correct on the page writes results with the corrected values (the service's kept);
 * and the page's guards hold for the new routes, with no document served from outside review_dir.
 */
import { readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { parseCsv } from '../../../daemon/src/outputs/results.ts';
import { AuditTrail } from '../../../daemon/src/store/audit.ts';
import { calibrate, runCli, syncInProcess, until, type World } from '../helpers.ts';
import { reviewWorld, tree } from '../review-helpers.ts';
import { call } from '../../support/http-call.ts';

// Time limits from a measured start of the CLI these tests run as a process (busy machines).
await calibrate();

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

const USER = userInfo().username;

/**
 * A command that writes, run as a user runs it beside the daemon: in a process of its own. In this
 * process, its SQLite write would wait (synchronously) for the lock of the daemon's open batch,
 * whose commit this same blocked thread would have to run: "database is locked" after 5 s.
 */
async function syncProcess(args: string[]) {
  const run = runCli(args);
  const code = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}
const portOf = (daemon: RunningDaemon) => (daemon.http!.address() as AddressInfo).port;
const post = (port: number, path: string, body: unknown, headers: Record<string, string> = {}) =>
  call(port, path, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-docex-sync-request': 'review',
      origin: `http://127.0.0.1:${port}`,
      ...headers,
    },
    body: JSON.stringify(body),
  });
/** Held by the watch's min_confidence: no Total in the text, so the service's Total has confidence 0.1. */
const LOW = (n: string) => `Invoice number: ${n}\nWidget | 4,00\n`;
const logLines = (w: World) =>
  w.logs
    .flatMap((l) => l.split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const auditOf = (daemon: RunningDaemon) => new AuditTrail(daemon.db.db).since(0);

async function heldWorld(names: string[], extra = '') {
  world = await reviewWorld({ extra: `http: { port: 0 }\n${extra}` });
  for (const n of names) await writeFile(join(world.dir, 'inbox', n), LOW(n));
  const daemon = await world.start();
  await until(`${names.length} held`, () => daemon.db.fileCounts.counts().review === names.length);
  const idOf = (name: string) =>
    daemon.db.fileCounts.inReview(100).find((r) => r.path.endsWith(`/${name}`))!.id;
  return { daemon, port: portOf(daemon), idOf, dir: world.dir };
}

describe('the audit trail', () => {
  it('approve and retry from the command line are audit rows and lines in the running daemon log; review log prints them', async () => {
    const { daemon, port, idOf, dir } = await heldWorld(['a.txt', 'b.txt']);
    const bId = idOf('b.txt');
    await writeFile(join(dir, 'inbox', 'bad.txt'), Buffer.from([0, 1, 2, 3]));
    await until('bad.txt failed', () => daemon.db.files.inState('failed').some((r) => r.finalized));

    const approve = await syncProcess(['approve', '--config', world!.configFile, 'a.txt']);
    expect(approve.code, approve.stderr).toBe(0);
    // A command is another connection: its commit wakes the daemon, which logs the decision.
    await until('the daemon logs the approval', () =>
      logLines(world!).some(
        (l) =>
          l.msg ===
          `review decision: approve by ${USER} (cli): ${join(dir, 'inbox', 'a.txt')}: review -> approved`,
      ),
    );
    const retry = await syncProcess(['retry', '--config', world!.configFile, 'bad.txt']);
    expect(retry.code, retry.stderr).toBe(0);
    await until('the daemon logs the retry', () =>
      logLines(world!).some((l) =>
        String(l.msg).startsWith(`review decision: retry by ${USER} (cli): ${join(dir, 'inbox', 'bad.txt')}`),
      ),
    );
    // From the page, with the name its user typed.
    const page = await post(port, '/api/approve', { ids: [bId], by: 'Alice Accountant' });
    expect(page.json()).toEqual({ approved: [bId], skipped: [] });
    await until('the daemon logs the page approval', () =>
      logLines(world!).some((l) =>
        String(l.msg).startsWith('review decision: approve by Alice Accountant (page)'),
      ),
    );
    const logged = logLines(world!).filter((l) => String(l.msg).startsWith('review decision:'));
    expect(logged).toHaveLength(3); // each said once
    expect(logged[0]!.audit).toMatchObject({
      who: USER,
      via: 'cli',
      action: 'approve',
      old: 'review',
      new: 'approved',
    });

    expect(auditOf(daemon).map((r) => [r.action, r.who, r.via])).toEqual([
      ['approve', USER, 'cli'],
      ['retry', USER, 'cli'],
      ['approve', 'Alice Accountant', 'page'],
    ]);
    const log = await syncInProcess(['review', 'log', '--config', world!.configFile]);
    expect(log.code).toBe(0);
    const lines = log.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT.*Z  approve by ${USER} \\(cli\\): ${join(dir, 'inbox', 'a.txt')}: review -> approved$`,
      ),
    );
    expect(lines[1]).toContain(
      `retry by ${USER} (cli): ${join(dir, 'inbox', 'bad.txt')}: failed -> queued again: reason: `,
    );
    const json = JSON.parse(
      (await syncInProcess(['review', 'log', '--config', world!.configFile, '--json'])).stdout,
    ) as {
      schema: string;
      entries: Array<Record<string, unknown>>;
    };
    expect(json.schema).toBe('docex-sync.review-log/1');
    expect(json.entries[2]).toMatchObject({
      action: 'approve',
      who: 'Alice Accountant',
      via: 'page',
      file_id: bId,
    });
    expect(
      (await syncInProcess(['review', 'log', '--config', world!.configFile, '--since', '1h'])).stdout
        .trim()
        .split('\n'),
    ).toHaveLength(3);
    expect(
      (await syncInProcess(['review', 'log', '--config', world!.configFile, '--since', '2100-01-01'])).stdout,
    ).toBe('No review decision recorded in that time.\n');
    const bad = await syncInProcess(['review', 'log', '--config', world!.configFile, '--since', 'yesterday']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since yesterday: give how long back (30m, 24h, 7d)');
  });
});

describe('docex-sync reject', () => {
  it('sends a held document to the failed folder with the reason in its error.json; unknown names and a missing reason exit 2', async () => {
    const { daemon, idOf, dir } = await heldWorld(['r.txt', 'keep.txt']);
    const id = idOf('r.txt');
    const cfg = world!.configFile;
    const noReason = await syncInProcess(['reject', '--config', cfg, String(id)]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('--reason TEXT is required');
    const unknown = await syncInProcess(['reject', '--config', cfg, '--reason', 'x', '99999', 'nosuch.pdf']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(
      'docex-sync reject: 99999: no file waiting for review has this id, name, path or pattern',
    );
    expect(unknown.stderr).toContain('docex-sync reject: nosuch.pdf: no file waiting for review');
    expect(daemon.db.fileCounts.counts().review).toBe(2);

    const rejected = await syncProcess(['reject', '--config', cfg, '--reason', 'wrong supplier', String(id)]);
    expect(rejected.stderr).toBe('');
    expect(rejected.code).toBe(0);
    expect(rejected.stdout).toBe(
      '1 file(s) rejected: the running docex-sync moves them to the failed folder now.\n',
    );
    await until('in the failed folder', async () =>
      (await tree(join(dir, 'failed'))).includes('r.txt.error.json'),
    );
    const report = JSON.parse(await readFile(join(dir, 'failed', 'r.txt.error.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(report.reason).toBe(`rejected on review by ${USER}: wrong supplier`);
    expect(await readFile(join(dir, 'failed', 'r.txt'), 'utf8')).toBe(LOW('r.txt'));
    // Its review copies are gone, the other document's are not; nothing of it reached output.
    const review = await tree(join(dir, 'review'));
    expect(review.filter((f) => f.startsWith('r.'))).toEqual([]);
    expect(review.filter((f) => f.startsWith('keep.'))).toHaveLength(5); // the original, 3 results, review.json
    expect((await tree(join(dir, 'results'))).filter((f) => f.startsWith('r.'))).toEqual([]);
    expect(daemon.db.fileCounts.counts()).toMatchObject({ review: 1, failed: 1 });
    expect(auditOf(daemon)).toMatchObject([
      { action: 'reject', who: USER, via: 'cli', note: 'wrong supplier', file_id: id },
    ]);
    // The day's review CSV says it was rejected, by whom and why.
    const csvName = review.find((f) => f.startsWith('review-'))!;
    const rows = parseCsv(await readFile(join(dir, 'review', csvName), 'utf8'), ',');
    const decision = rows.find((r) => r[4] === `rejected by ${USER}`)!;
    expect(decision[1]).toBe(join(dir, 'inbox', 'r.txt'));
    expect(decision[10]).toBe('wrong supplier');
    // Rejected is failed: retry takes it back through the pipeline (held again by its rules).
    expect((await syncProcess(['retry', '--config', cfg, 'r.txt'])).code).toBe(0);
    await until('held again', () => daemon.db.fileCounts.counts().review === 2);
  });
});

describe('Correct on the page', () => {
  it('writes the results with the corrected value, the service value and confidence kept beside it, in the JSON, the CSVs and the audit', async () => {
    const { daemon, port, idOf, dir } = await heldWorld(['c.txt']);
    const id = idOf('c.txt');
    const before = JSON.parse(
      await readFile(
        join(
          dir,
          'review',
          (await readdir(join(dir, 'review'))).find((f) => f.endsWith('.review.json'))!,
        ),
        'utf8',
      ),
    ) as { document: { General_fields: Record<string, { value: unknown; confidence: number }> } };
    const service = before.document.General_fields.Total!;
    expect(service.confidence).toBe(0.1);

    const bad = await post(port, '/api/correct', { id, values: { Total: 5 } });
    expect(bad.status).toBe(400);
    const answer = await post(port, '/api/correct', {
      id,
      values: { Total: '12,50', 'Invoice number': 'c.txt' },
      by: 'Bob',
    });
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual({ approved: true, corrected: ['Total'] }); // the number was already right
    await until('archived', () => daemon.db.files.get(id)!.state === 'archived');

    const results = await tree(join(dir, 'results'));
    const json = JSON.parse(
      await readFile(
        join(
          dir,
          'results',
          results.find((f) => /^c\.doc-\d+\.json$/.test(f))!,
        ),
        'utf8',
      ),
    ) as {
      document: Record<string, unknown> & { General_fields: Record<string, Record<string, unknown>> };
      document_from?: string;
      corrections: Array<Record<string, unknown>>;
    };
    const corrected = typeof service.value === 'number' ? 12.5 : '12,50';
    expect(json.document.General_fields.Total).toMatchObject({
      value: corrected,
      confidence: 1,
      service_value: service.value,
      service_confidence: 0.1,
      corrected_by: 'Bob',
    });
    // The document came from the task's answer (the default document_data): it has no
    // General_fields_list, and the JSON written on approval still says so. A list's correction:
    // test/daemon/outputs/review.test.ts.
    expect(json.document_from).toBe('task');
    expect(json.document).not.toHaveProperty('General_fields_list');
    expect(json.corrections).toMatchObject([
      { field: 'Total', from: service.value, to: corrected, service_confidence: 0.1, by: 'Bob' },
    ]);
    const fields = parseCsv(
      await readFile(
        join(
          dir,
          'results',
          results.find((f) => f.endsWith('.fields.csv'))!,
        ),
        'utf8',
      ),
      ',',
    );
    expect(fields[1]![fields[0]!.indexOf('Total')]).toBe(String(corrected));
    const daily = parseCsv(
      await readFile(
        join(
          dir,
          'results',
          results.find((f) => f.startsWith('daily-'))!,
        ),
        'utf8',
      ),
      ',',
    );
    expect(daily[1]![daily[0]!.indexOf('Total')]).toBe(String(corrected));
    const reviewCsv = (await tree(join(dir, 'review'))).find((f) => f.startsWith('review-'))!;
    const rows = parseCsv(await readFile(join(dir, 'review', reviewCsv), 'utf8'), ',');
    const decision = rows.find((r) => r[4] === 'approved, corrected by Bob')!;
    expect(decision[11]).toBe(`Total: ${JSON.stringify(service.value)} -> ${JSON.stringify(corrected)}`);
    expect(auditOf(daemon).map((r) => [r.action, r.who, r.field, r.old_value, r.new_value])).toEqual([
      ['correct', 'Bob', 'Total', JSON.stringify(service.value), JSON.stringify(corrected)],
      ['approve', 'Bob', null, 'review', 'approved'],
    ]);
  });
});

describe('the review routes keep the page guards', () => {
  it('refuse cross-site changes and rebound host names, and serve no document from outside review_dir by any id or path', async () => {
    const { daemon, port, idOf, dir } = await heldWorld(['s.txt', 'page.html', 'link.txt', 'moved.txt']);
    const id = idOf('s.txt');
    // The page and the original, with their headers.
    const page = await call(port, `/review?id=${id}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['content-security-policy']).toContain("script-src 'sha256-");
    expect(page.text).toContain(
      `<iframe data-testid="original" data-kind="text" src="review/original/${id}"`,
    );
    const original = await call(port, `/review/original/${id}`);
    expect(original.status).toBe(200);
    expect(original.text).toBe(LOW('s.txt'));
    expect(original.headers).toMatchObject({
      'content-type': 'text/plain; charset=utf-8',
      'content-disposition': `inline; filename="s.txt"; filename*=UTF-8''s.txt`,
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    });
    expect(original.headers['content-security-policy']).toMatch(/default-src 'none'.*sandbox/);
    // A type not on the list is a download, never rendered as HTML.
    const html = await call(port, `/review/original/${idOf('page.html')}`);
    expect(html.headers['content-type']).toBe('application/octet-stream');
    expect(html.headers['content-disposition']).toMatch(/^attachment; filename="page.html"/);

    // Ids and paths that name nothing waiting in review_dir.
    await writeFile(join(dir, 'inbox', 'broken.txt'), Buffer.from([0, 1, 2]));
    await until('broken failed', () => daemon.db.files.inState('failed').some((r) => r.finalized));
    const failedId = daemon.db.files.inState('failed')[0]!.id;
    for (const path of [
      '/review/original/999999',
      `/review/original/${failedId}`,
      '/review/original/0',
      '/review/original/-1',
      `/review/original/${id}.txt`,
      `/review/original/0x${id.toString(16)}`,
      `/review/original/%2e%2e%2f%2e%2e%2fdocex-sync.yaml`,
      '/review/original/..%2f..%2fstate%2fsync.db',
      '/review/original/../../docex-sync.yaml',
      `/review/original/${id}/../../../docex-sync.yaml`,
      `/review/original/${id}%00`,
      `/review/original/${join(dir, 'docex-sync.yaml')}`,
      '/review/original/',
      '/review/originals/1',
    ]) {
      const answer = await call(port, path);
      expect(answer.status, path).toBe(404);
      expect(answer.text, path).not.toContain('state_db');
    }
    // A link in review_dir pointing out of it, and a row whose recorded place is outside (a tampered DB).
    const linkRow = daemon.db.files.get(idOf('link.txt'))!;
    await rm(linkRow.review_path!);
    await symlink(join(dir, 'docex-sync.yaml'), linkRow.review_path!);
    expect((await call(port, `/review/original/${linkRow.id}`)).status).toBe(404);
    daemon.db.files.update(idOf('moved.txt'), { review_path: join(dir, 'docex-sync.yaml') }, Date.now());
    daemon.db.flush();
    expect((await call(port, `/review/original/${idOf('moved.txt')}`)).status).toBe(404);
    daemon.db.files.update(
      idOf('moved.txt'),
      { review_path: join(dir, 'review', '..', 'docex-sync.yaml') },
      Date.now(),
    );
    daemon.db.flush();
    expect((await call(port, `/review/original/${idOf('moved.txt')}`)).status).toBe(404);

    // DNS rebinding: another host name is refused, for the page and the original alike.
    for (const path of ['/review', `/review/original/${id}`])
      expect((await call(port, path, { headers: { host: `evil.example:${port}` } })).status, path).toBe(421);
    // Cross-site or header-less changes are refused before anything changes.
    const refusals: Array<[Record<string, string>, number]> = [
      [{ origin: 'http://evil.example' }, 403],
      [{ 'sec-fetch-site': 'cross-site' }, 403],
      [{ 'x-docex-sync-request': '' }, 403],
      [{ 'content-type': 'text/plain' }, 415],
      [{ host: `evil.example:${port}` }, 421],
    ];
    for (const path of ['/api/reject', '/api/correct'])
      for (const [headers, status] of refusals) {
        const all: Record<string, string> = {
          'content-type': 'application/json',
          'x-docex-sync-request': 'review',
          origin: `http://127.0.0.1:${port}`,
          ...headers,
        };
        const answer = await call(port, path, {
          method: 'POST',
          // '' leaves the header out.
          headers: Object.fromEntries(Object.entries(all).filter(([, v]) => v !== '')),
          body: JSON.stringify({ ids: [id], id, reason: 'x', values: { Total: '1' } }),
        });
        expect(answer.status, `${path} ${JSON.stringify(headers)}`).toBe(status);
      }
    expect((await call(port, '/api/reject')).status).toBe(405);
    expect((await post(port, '/api/reject', { ids: [id] })).status).toBe(400); // no reason
    expect(daemon.db.files.get(id)!.state).toBe('review');
    expect(auditOf(daemon)).toEqual([]);
  });
});
