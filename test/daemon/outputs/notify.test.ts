import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { Notifier, type NotifyConfig, type NotifyEvent } from '../../../daemon/src/outputs/notify.ts';
import { runRerun } from '../../../daemon/src/jobs/reruns.ts';
import { createNodeClient } from '@docex/shared/node';
import { invoice, makeWorld, SECRET, until, type World } from '../helpers.ts';

interface Received {
  headers: IncomingHttpHeaders;
  body: NotifyEvent;
  raw: string;
  status: number;
}

/** A webhook receiver on a free loopback port; `answers` are the statuses of the next requests (then 200). */
async function receiver(answers: number[] = []) {
  const received: Received[] = [];
  let hold: Promise<void> | undefined;
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', async () => {
      await hold;
      const status = answers.shift() ?? 200;
      received.push({ headers: req.headers, body: JSON.parse(raw) as NotifyEvent, raw, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook/docex`,
    received,
    /** Answers nothing until the returned function is called. */
    stall() {
      let release!: () => void;
      hold = new Promise((resolve) => (release = resolve));
      return release;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

const logLines: string[] = [];
const log = createLogger('debug', {
  pretty: false,
  destination: new Writable({
    write(chunk, _e, done) {
      logLines.push(String(chunk));
      done();
    },
  }),
});

const settings = (url: string, over: Partial<NotifyConfig> = {}): NotifyConfig => ({
  webhooks: [{ url, events: ['file_failed', 'watch_paused', 'rerun_finished'], headers: {} }],
  max_attempts: 4,
  retry_base_ms: 20,
  retry_max_ms: 100,
  timeout_ms: 2_000,
  concurrency: 2,
  queue_size: 100,
  shutdown_grace_ms: 2_000,
  ...over,
});

let hook: Receiver | undefined;
let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  await hook?.close();
  world = undefined;
  hook = undefined;
});

describe('webhook notifications', () => {
  it('retries with backoff under the same event id, gives up on a 4xx, and only sends the events asked for', async () => {
    hook = await receiver([500, 503]);
    const notifier = new Notifier(settings(hook.url), log);
    notifier.watchPaused({ watch: '/in', reason: 'template 9 not found (404)' });
    notifier.emit('result_written', { file: 'x' }); // not subscribed
    await until('delivered after two failures', () => hook!.received.some((r) => r.status === 200));
    expect(hook.received.map((r) => r.status)).toEqual([500, 503, 200]);
    expect(new Set(hook.received.map((r) => r.body.id)).size).toBe(1);
    expect(hook.received[0]!.body).toMatchObject({
      event: 'watch_paused',
      source: { service: 'docex-sync' },
      data: { watch: '/in', reason: 'template 9 not found (404)' },
    });
    expect(hook.received[0]!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-docex-event': 'watch_paused',
      'x-docex-event-id': hook.received[0]!.body.id,
    });

    hook.received.length = 0;
    const refusing = await receiver([404, 404]);
    try {
      const strict = new Notifier(settings(refusing.url), log);
      strict.rerunFinished('nightly', { status: 'done', rerun: 3 });
      await strict.close();
      expect(refusing.received.map((r) => r.status)).toEqual([404]);
      expect(strict.counts).toEqual({ sent: 0, failed: 1, dropped: 0 });
    } finally {
      await refusing.close();
    }
  });

  it('never blocks the caller: a stalled receiver holds no emit, a full queue drops the oldest, stop waits only the grace', async () => {
    hook = await receiver();
    const release = hook.stall();
    const notifier = new Notifier(
      settings(hook.url, { concurrency: 1, queue_size: 3, shutdown_grace_ms: 100 }),
      log,
    );
    const started = performance.now();
    for (let i = 0; i < 10; i++)
      notifier.fileFailed({
        file: `f${i}`,
        watch: '/in',
        reason: 'r',
        attempts: 1,
        task_id: null,
        document_id: null,
      });
    expect(performance.now() - started).toBeLessThan(200); // ten emits, none waits for the network
    expect(notifier.counts.dropped).toBe(6); // one in flight, three queued
    const closing = notifier.close();
    await closing;
    release();
    expect(logLines.join('')).toContain('notification queue full');
    expect(logLines.join('')).toContain('stopping: notifications not sent');
  });

  it('a failing file, a paused watch and a finished rerun reach the webhook from the daemon, without the API key', async () => {
    hook = await receiver();
    world = await makeWorld({
      extraYaml: [
        'notify:',
        '  retry_base_ms: 20',
        '  webhooks:',
        `    - url: "${hook.url}"`,
        '      headers: { X-Webhook-Token: "n8n-header-auth" }',
        `    - url: "${hook.url}?all=1"`,
        '      events: [result_written]',
      ].join('\n'),
    });
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'empty.txt'), '');
    await writeFile(join(world.dir, 'inbox', 'good.txt'), invoice('G-1'));
    await until('failed and written notified', () =>
      ['file_failed', 'result_written'].every((e) => hook!.received.some((r) => r.body.event === e)),
    );
    const failed = hook.received.find((r) => r.body.event === 'file_failed')!;
    expect(failed.body.data).toMatchObject({
      file: join(world.dir, 'inbox', 'empty.txt'),
      watch: join(world.dir, 'inbox'),
      reason: expect.stringContaining('the file is empty (0 bytes)'),
    });
    expect(failed.headers['x-webhook-token']).toBe('n8n-header-auth');
    const written = hook.received.find((r) => r.body.event === 'result_written')!;
    expect(written.body.data).toMatchObject({
      file: join(world.dir, 'inbox', 'good.txt'),
      outcome: 'processed',
    });
    expect((written.body.data.results as string[]).some((p) => p.endsWith('.json'))).toBe(true);
    expect(written.headers['x-webhook-token']).toBeUndefined();

    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const notify = new Notifier(world.config().notify!, log);
    await runRerun(
      { db: daemon.db, client, log, config: world.config(), notify, refresh: { firstDelayMs: 20 } },
      { name: 'nightly', template_id: world.templateId, override: true, dry_run: false },
    );
    await notify.close();
    const rerun = hook.received.find((r) => r.body.event === 'rerun_finished')!;
    expect(rerun.body.data).toMatchObject({
      name: 'nightly',
      status: 'done',
      documents: 1,
      rerun: 1,
      refresh: { files: 1, unchanged: 1 },
    });
    await daemon.stop();
    for (const r of hook.received) {
      expect(r.raw).not.toContain(SECRET);
      expect(JSON.stringify(r.headers)).not.toContain(SECRET);
    }
  });

  it('the example n8n workflow: a Webhook node with header auth, and a message for each event', async () => {
    const workflow = JSON.parse(
      await readFile(join(import.meta.dirname, '../../../examples/n8n-notify-workflow.json'), 'utf8'),
    ) as { nodes: Array<{ type: string; parameters: Record<string, string> }> };
    const webhook = workflow.nodes.find((n) => n.type === 'n8n-nodes-base.webhook')!;
    expect(webhook.parameters).toMatchObject({
      httpMethod: 'POST',
      path: 'docex-sync',
      authentication: 'headerAuth',
    });
    const code = workflow.nodes.find((n) => n.type === 'n8n-nodes-base.code')!.parameters.jsCode!;
    // The Code node's script, run the way n8n runs it: the Webhook node puts the JSON under body.
    const compose = new Function('$input', code) as (
      input: unknown,
    ) => Array<{ json: Record<string, string> }>;
    const run = (body: object) => compose({ all: () => [{ json: { body, headers: {} } }] })[0]!.json;
    hook = await receiver();
    const notifier = new Notifier(
      settings(hook.url, {
        webhooks: [{ url: hook.url, events: ['file_failed', 'watch_paused', 'rerun_finished'], headers: {} }],
      }),
      log,
    );
    notifier.fileFailed({
      file: '/in/a.pdf',
      watch: '/in',
      reason: 'extraction failed: Empty file',
      attempts: 1,
      task_id: 't',
      document_id: null,
    });
    notifier.watchPaused({ watch: '/in', reason: 'upload_file: 404 template not found' });
    notifier.rerunFinished('nightly', {
      status: 'done',
      documents: 3,
      rerun: 2,
      not_rerun: 1,
      errors: [],
      refresh: { files: 2, rewritten: 1, unchanged: 1, not_seen: 0 },
    });
    await notifier.close();
    const messages = hook.received.map((r) => run(r.body));
    expect(messages.map((m) => m.subject)).toEqual([
      expect.stringMatching(/: a file failed$/),
      expect.stringMatching(/: watching \/in is paused$/),
      expect.stringMatching(/: rerun "nightly" done$/),
    ]);
    expect(messages[0]!.text).toContain(
      '/in/a.pdf failed after 1 attempt(s):\nextraction failed: Empty file',
    );
    expect(messages[2]!.text).toContain(
      '2 of 3 document(s) rerun, 1 not rerun.\nResults rewritten: 1 of 2 local file(s).',
    );
  });

  it('a watch whose template the service does not know sends watch_paused', async () => {
    hook = await receiver();
    world = await makeWorld({ extraYaml: `notify: { webhooks: [{ url: "${hook.url}" }] }` });
    await writeFile(
      world.configFile,
      (await readFile(world.configFile, 'utf8')).replace(/template_id: \d+/, 'template_id: 987654'),
    );
    await world.start();
    await writeFile(join(world.dir, 'inbox', 'p.txt'), invoice('P-1'));
    await until('paused notified', () => hook!.received.find((r) => r.body.event === 'watch_paused'));
    expect(hook.received.find((r) => r.body.event === 'watch_paused')!.body.data).toMatchObject({
      watch: join(world.dir, 'inbox'),
      reason: expect.stringContaining('404'),
    });
  });
});
