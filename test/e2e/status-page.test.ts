/**
 * The status page in a real browser: Debian's chromium driven by playwright-core (both installed by
 * scripts/browser-install.sh on first run), against a running daemon and the emulator. A failed file
 * shows up with its reason, Retry moves it back into the queue, and the counts change without a reload.
 */
import { readdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { invoice, makeWorld, until, type World } from '../daemon/helpers.ts';
import { launchChromium, type BrowserContext } from './browser.ts';

let world: World | undefined;
let browser: BrowserContext | undefined;

beforeAll(async () => {
  browser = await launchChromium();
});

afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

afterAll(async () => {
  await browser?.close();
});

async function daemonWithFailedFile(taskDelayMs = 30) {
  world = await makeWorld({ extraYaml: 'http: { port: 0 }', taskDelayMs });
  const daemon = await world.start();
  const port = (daemon.http!.address() as AddressInfo).port;
  await writeFile(join(world.dir, 'inbox', 'good.txt'), invoice('G-1'));
  // Bytes the service cannot read: it fails the task (an empty file would fail locally, without a task).
  await writeFile(join(world.dir, 'inbox', 'unreadable.txt'), Buffer.from([0, 1, 2, 3]));
  await until(
    'one done, one failed',
    () =>
      daemon.db.fileCounts.counts().archived === 1 &&
      daemon.db.files.inState('failed').some((r) => r.finalized),
  );
  return { daemon, port, dir: world.dir };
}

describe('the status page in Chromium', () => {
  it('a failed file shows up, Retry moves it back into the queue, and the counts change without a reload', async () => {
    // Tasks take 1.5 s, so a retried file is seen in the queue before it fails again.
    const { daemon, port, dir } = await daemonWithFailedFile(1500);
    const page = await browser!.newPage();
    const errors: string[] = [];
    page.on('console', (m) => errors.push(m.text()));
    await page.goto(`http://127.0.0.1:${port}/`);
    const text = (testid: string) => page.locator(`[data-testid="${testid}"]`).textContent();
    expect(await text('failed-total')).toBe('1');
    expect(await text('archived')).toBe('1');
    const row = page.locator('[data-testid="failed-row"]');
    expect(await row.count()).toBe(1);
    expect(await row.first().textContent()).toContain('unreadable.txt');
    expect(await row.first().textContent()).toContain('Unreadable file');
    // A mark in the page's memory: it survives only if the page is never reloaded.
    await page.evaluate('window.notReloaded = true');

    // The page updates by itself: a new file shows up as done without any click.
    await writeFile(join(dir, 'inbox', 'later.txt'), invoice('L-1'));
    await until('the page shows two done', async () => (await text('archived')) === '2', 20_000);

    const failedId = daemon.db.files.inState('failed')[0]!.id;
    await page.locator(`button[data-retry="${failedId}"]`).click();
    await until('the page shows no failed file', async () => (await text('failed-total')) === '0', 10_000);
    expect(await text('note')).toBe('1 file(s) back in the queue');
    expect(await text('queued')).toBe('1');
    expect(await readdir(join(dir, 'failed'))).toEqual([]);
    // The unreadable file fails again, with its reason: the count comes back, still without a reload.
    await until('the page shows it failed again', async () => (await text('failed-total')) === '1', 20_000);
    expect(await page.evaluate<boolean>('window.notReloaded === true')).toBe(true);
    expect(errors.filter((e) => /refused|error/i.test(e))).toEqual([]);

    // Retry all works the same way.
    await page.locator('[data-testid="retry-all"]').click();
    await until(
      'the page shows no failed file again',
      async () => (await text('failed-total')) === '0',
      10_000,
    );
    expect(await page.evaluate<boolean>('window.notReloaded === true')).toBe(true);
  });

  it('another site open in the same browser cannot retry: its form post and its script are refused', async () => {
    const { daemon, port } = await daemonWithFailedFile();
    const target = `http://127.0.0.1:${port}/api/retry`;
    // The classic CSRF tricks: a text/plain form whose body reads as JSON, and a fetch with the
    // custom header (which needs a CORS preflight the daemon never grants).
    const reports: string[] = [];
    const evil = createServer((req, res) => {
      if (req.url!.startsWith('/report?')) {
        reports.push(new URL(req.url!, 'http://x').searchParams.get('r')!);
        return res.writeHead(204).end();
      }
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>evil</title>
<form id="f" method="POST" action="${target}" enctype="text/plain"><input name='{"all":true,"x":"' value='"}'></form>
<script>
fetch(${JSON.stringify(target)}, { method: 'POST', headers: { 'content-type': 'application/json', 'x-docex-sync-request': '1' }, body: '{"all":true}' })
  .then((r) => 'answered ' + r.status, () => 'blocked')
  .then((r) => fetch('/report?r=' + encodeURIComponent(r)))
  .then(() => document.getElementById('f').submit());
</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      const page = await browser!.newPage();
      await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      // The form navigates to the daemon's answer: the refusal.
      await until('the form was posted', () => page.url().startsWith(target), 15_000);
      expect(await page.content()).toContain('cross-origin requests are refused');
      expect(reports).toEqual(['blocked']);
      expect(daemon.db.files.inState('failed')).toHaveLength(1);
      expect(daemon.db.files.inState('failed')[0]!.finalized).toBe(1);
    } finally {
      evil.closeAllConnections(); // the browser keeps its connection alive
      await new Promise<void>((resolve) => evil.close(() => resolve()));
    }
    const api = (await (await fetch(`http://127.0.0.1:${port}/api/status`)).json()) as {
      failed: { total: number };
    };
    expect(api.failed.total).toBe(1);
  });
});
