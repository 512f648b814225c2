/**
 * Retry and approve of files that came from a mailbox: their watch is a spool folder, which the
 * config's `watch:` list does not hold. Against a real dovecot and the emulator: attachments the
 * service cannot read fail into the mailbox's failed_dir; once fixed there, `docex-sync retry`, the
 * page's Retry and Retry all send them again and they end as results naming their mail.
 */
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StateDb } from '../../../daemon/src/store/state.ts';
import { invoicePdf, mimeMessage, startDovecot, type Dovecot } from '../../support/dovecot.ts';
import { call } from '../../support/http-call.ts';
import { syncInProcess, until, type World } from '../helpers.ts';
import { jsonResults, mailWorld } from './world.ts';

let dovecot: Dovecot;
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(() => dovecot?.stop());

let world: World | undefined;
afterEach(async () => {
  await world?.cleanup();
  world = undefined;
});

/** Bytes the emulator cannot read (not a PDF, an image or text), sent as a PDF. */
const unreadable = (n: number) => Buffer.from([0, 1, 2, 3, n, 0, 0xff, 0xfe, 0, 7]);

describe('retry and approve of mail attachments (real dovecot)', () => {
  it('docex-sync retry, Retry and Retry all send failed attachments again; approve finds their watch', async () => {
    const w = await mailWorld(dovecot, { http: true });
    world = w;
    await dovecot.append(
      mimeMessage({
        subject: 'Invoices B-1, B-2, B-3',
        messageId: '<broken-scans@supplier.test>',
        attachments: ['B-1.pdf', 'B-2.pdf', 'B-3.pdf'].map((name, i) => ({ name, content: unreadable(i) })),
      }),
    );
    const running = await w.start();
    const failed = await until(
      'three attachments failed into the failed folder',
      () => {
        const rows = running.db.files.inState('failed').filter((r) => r.finalized);
        return rows.length === 3 ? rows : undefined;
      },
      30_000,
    );
    const byName = Object.fromEntries(failed.map((r) => [basename(r.path), r]));
    expect(Object.keys(byName).sort()).toEqual(['B-1.pdf', 'B-2.pdf', 'B-3.pdf']);
    for (const r of failed) {
      expect(r.path.startsWith(join(w.dir, 'mail-failed'))).toBe(true);
      expect(r.reason).toContain('Unreadable file');
      // The sender sends readable copies; the operator puts them in place of the failed ones.
      await writeFile(r.path, invoicePdf(basename(r.path, '.pdf')));
    }

    // docex-sync retry beside the running daemon.
    const cli = await syncInProcess(['retry', '--config', w.configFile, 'B-1.pdf']);
    expect({ code: cli.code, stdout: cli.stdout, stderr: cli.stderr }).toEqual({
      code: 0,
      stdout: '1 failed file(s) re-queued.\n',
      stderr: '',
    });
    // Retry on the page, then Retry all.
    const port = (running.http!.address() as AddressInfo).port;
    const headers = {
      'content-type': 'application/json',
      'x-docex-sync-request': 'retry',
      origin: `http://127.0.0.1:${port}`,
    };
    const one = await call(port, '/api/retry', {
      method: 'POST',
      headers,
      body: JSON.stringify({ ids: [byName['B-2.pdf']!.id] }),
    });
    expect([one.status, JSON.parse(one.text)]).toEqual([
      200,
      { retried: [byName['B-2.pdf']!.id], skipped: [] },
    ]);
    const all = await call(port, '/api/retry', {
      method: 'POST',
      headers,
      body: JSON.stringify({ all: true }),
    });
    expect([all.status, JSON.parse(all.text)]).toEqual([
      200,
      { retried: [byName['B-3.pdf']!.id], skipped: [] },
    ]);

    const results = await until(
      'three results',
      async () => {
        const r = await jsonResults(join(w.dir, 'mail-results'));
        return r.length === 3 ? r : undefined;
      },
      30_000,
    );
    expect(results.map((r) => r.message.attachment).sort()).toEqual(['B-1.pdf', 'B-2.pdf', 'B-3.pdf']);
    expect(results.every((r) => r.message.message_id === '<broken-scans@supplier.test>')).toBe(true);
    await until('all archived', () => running.db.fileCounts.counts().archived === 3 || undefined);
    expect(running.db.fileCounts.counts().failed).toBe(0);

    // `docex-sync approve` looks the watch up the same way. A mailbox has no review rules, so none
    // of its files waits for review in a run: one is put in that state here, as a review rule would.
    const id = byName['B-1.pdf']!.id;
    await running.stop();
    const db = new StateDb(w.config().state_db);
    db.files.update(id, { state: 'review' }, Date.now());
    db.close();
    const approved = await syncInProcess(['approve', '--config', w.configFile, '--all']);
    expect({ code: approved.code, stdout: approved.stdout, stderr: approved.stderr }).toEqual({
      code: 0,
      stdout:
        '1 file(s) approved: docex-sync is not running; it moves them to the processed and output folders when it next starts.\n',
      stderr: '',
    });
  }, 120_000);
});
