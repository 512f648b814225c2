/**
 * The mail intake against a real dovecot and the emulator: mails placed with APPEND end as results
 * naming their message, with rules by sender, several attachments per mail, the after-action only
 * once every attachment is recorded, and no attachment taken twice (restart, Message-ID again).
 */
import { writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MailIntake } from '../../../daemon/src/mail/intake.ts';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { checkMailboxes } from '../../../daemon/src/app/preflight.ts';
import { healthOf } from '../../../daemon/src/status/read-model.ts';
import { invoicePdf, mimeMessage, startDovecot, type Dovecot } from '../../support/dovecot.ts';
import { createNodeClient } from '@docex/shared/node';
import { SECRET, syncInProcess, until, type World } from '../helpers.ts';
import { expectSecretsNowhere, jsonResults, mailWorld } from './world.ts';

let dovecot: Dovecot;
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(() => dovecot?.stop());

let world: World | undefined;
let intake: MailIntake | undefined;
afterEach(async () => {
  intake = undefined;
  await world?.cleanup();
  world = undefined;
});

async function mailWorldOf(extra: string[] = [], after?: string) {
  world = await mailWorld(dovecot, { extra, after });
  return world;
}

/** The daemon's intake of the one mailbox (the daemon starts it). */
function startIntake(_w: World, running: RunningDaemon) {
  intake = running.mailboxes[0]!;
  return intake;
}

async function flagsOf(folder = 'INBOX') {
  const imap = await dovecot.client();
  try {
    const lock = await imap.getMailboxLock(folder);
    try {
      const out = new Map<number, string[]>();
      for await (const m of imap.fetch('1:*', { uid: true, flags: true }))
        out.set(m.uid, [...(m.flags ?? [])]);
      return out;
    } finally {
      lock.release();
    }
  } finally {
    await imap.logout();
  }
}

async function clearInbox() {
  const imap = await dovecot.client();
  try {
    const lock = await imap.getMailboxLock('INBOX');
    try {
      await imap.messageDelete('1:*').catch(() => undefined);
    } finally {
      lock.release();
    }
  } finally {
    await imap.logout();
  }
}

describe('mail intake (real dovecot)', () => {
  it('a mail with several invoices ends as results naming the message; the mail is flagged after all are recorded', async () => {
    await clearInbox();
    const w = await mailWorldOf();
    const running = await w.start();
    startIntake(w, running);
    const uid = await dovecot.append(
      mimeMessage({
        from: 'Acme Billing <billing@acme.test>',
        subject: 'Invoices M-1, M-2',
        messageId: '<inv-m1@acme.test>',
        attachments: [
          { name: 'M-1.pdf', content: invoicePdf('M-1') },
          { name: 'M-2.pdf', content: invoicePdf('M-2') },
          { name: 'logo.png', type: 'image/png', content: Buffer.alloc(500, 1), inline: true },
        ],
      }),
    );
    const results = await until(
      'two results',
      async () => {
        const r = await jsonResults(join(w.dir, 'mail-results'));
        return r.length === 2 ? r : undefined;
      },
      30_000,
    );
    expect(results.map((r) => r.message).sort((a, b) => a.attachment.localeCompare(b.attachment))).toEqual([
      {
        mailbox: 'invoices',
        from: '"Acme Billing" <billing@acme.test>',
        subject: 'Invoices M-1, M-2',
        date: '2026-11-20T09:30:00.000Z',
        message_id: '<inv-m1@acme.test>',
        attachment: 'M-1.pdf',
      },
      {
        mailbox: 'invoices',
        from: '"Acme Billing" <billing@acme.test>',
        subject: 'Invoices M-1, M-2',
        date: '2026-11-20T09:30:00.000Z',
        message_id: '<inv-m1@acme.test>',
        attachment: 'M-2.pdf',
      },
    ]);
    expect((await flagsOf()).get(uid)).toContain('$DocexTaken');
    const status = intake!.status();
    expect(status).toMatchObject({
      connected: true,
      idle: true,
      login_refused: null,
      attachments: 2,
      messages: { taken: 1 },
    });
    expect(status.skipped).toEqual([
      expect.objectContaining({ name: 'logo.png', reason: expect.stringContaining('inline image') }),
    ]);
    // The password is in no log line, file (state DB and its WAL, results, spool), status or metric.
    await expectSecretsNowhere(w, running, [dovecot.users[0]!.password], ['mail.pw']);
    const check = await checkMailboxes(w.config(), {});
    expect(check).toEqual({
      problems: [],
      lines: [
        expect.stringMatching(
          /^mailbox invoices: logged in as invoices at 127\.0\.0\.1; INBOX holds 1 message\(s\), 0 not taken yet; IDLE$/,
        ),
      ],
    });
  });

  it('rules by sender choose template and metadata; skip rules leave a mail untaken, with the reason', async () => {
    await clearInbox();
    const w = await mailWorldOf([
      '    rules:',
      "      - from: '*@acme.test'",
      '        metadata: \'{"supplier":"acme"}\'',
      "      - subject: '*newsletter*'",
      '        skip: true',
    ]);
    const running = await w.start();
    startIntake(w, running);
    await dovecot.append(
      mimeMessage({
        from: 'news@shop.test',
        subject: 'Our newsletter',
        attachments: [{ name: 'promo.pdf', content: invoicePdf('N-1') }],
      }),
    );
    await dovecot.append(
      mimeMessage({
        from: 'billing@acme.test',
        subject: 'Invoice R-1',
        attachments: [{ name: 'R-1.pdf', content: invoicePdf('R-1') }],
      }),
    );
    const [result] = await until(
      'the acme result',
      async () => {
        const r = await jsonResults(join(w.dir, 'mail-results'));
        return r.length === 1 ? r : undefined;
      },
      30_000,
    );
    expect(result!.message.subject).toBe('Invoice R-1');
    // The rule's metadata went with the upload: as the service stored it (the result's document is
    // the task's answer by default, which does not echo it).
    const service = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
    expect((await service.fetchDocumentData({ document_id: result!.document.document_id })).metadata).toBe(
      '{"supplier":"acme"}',
    );
    await until(
      'both messages recorded',
      () => intake!.status().messages.skipped === 1 && intake!.status().messages.taken === 1,
    );
    expect(intake!.status().skipped).toEqual([
      expect.objectContaining({ name: 'promo.pdf', reason: 'rules[1] says skip' }),
    ]);
  });

  it('a restart and the same Message-ID again take nothing twice', async () => {
    await clearInbox();
    const w = await mailWorldOf([], '{ action: leave }');
    let running = await w.start();
    startIntake(w, running);
    const raw = mimeMessage({
      messageId: '<again@acme.test>',
      attachments: [{ name: 'A-1.pdf', content: invoicePdf('A-1') }],
    });
    await dovecot.append(raw);
    await until(
      'one result',
      async () => (await jsonResults(join(w.dir, 'mail-results'))).length === 1,
      30_000,
    );
    await running.stop();
    running = await w.start();
    startIntake(w, running);
    await dovecot.append(raw); // the same mail again (another UID, same Message-ID)
    await until('the copy recorded', () => intake!.status().messages.duplicate === 1, 30_000);
    await until('pipeline idle', () => running.pipeline.idle());
    expect(await jsonResults(join(w.dir, 'mail-results'))).toHaveLength(1);
    expect(intake!.status()).toMatchObject({ attachments: 1, messages: { taken: 1, duplicate: 1 } });
  });

  /**
   * The refusal of the login with `credential`, said the same way (exactly) in the intake's status,
   * /healthz, `docex-sync status` (exit 6), the page, the log and `docex-sync check`.
   */
  async function expectRefusal(w: World, refusal: string, secret: string) {
    const running = await w.start();
    const i = startIntake(w, running);
    const status = await until(
      'the refusal',
      () => (i.status().login_refused ? i.status() : undefined),
      30_000,
    );
    expect(status.connected).toBe(false);
    expect(status.login_refused).toBe(refusal);
    const failing = `mailbox invoices cannot log in (invoices at 127.0.0.1): ${refusal}`;
    expect(healthOf({ db: running.db, config: w.config() })).toMatchObject({ ok: false, reasons: [failing] });
    running.db.flush();
    const printed = await syncInProcess(['status', '--config', w.configFile]);
    expect(printed.code).toBe(6);
    expect(printed.stdout.split('\n').slice(0, 2)).toEqual(['Failing:', `  ${failing}`]);
    expect(printed.stdout).toContain(
      `Mailbox invoices (invoices at 127.0.0.1, INBOX): login refused: ${refusal}; last seen never;`,
    );
    const port = (running.http!.address() as AddressInfo).port;
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toContain(`<li>${failing}</li>`);
    expect(page).toContain(`<span class="bad">login refused: ${refusal}</span>`);
    const logged = w.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter((line) => line.includes('"level":50'))
      .map((line) => JSON.parse(line) as { msg: string });
    expect(logged.map((l) => l.msg)).toEqual([failing]);
    expect((await checkMailboxes(w.config(), process.env)).problems).toEqual([
      `mailboxes[0] (invoices, invoices at 127.0.0.1): ${refusal}`,
    ]);
    expect(JSON.stringify(status) + w.logs.join('') + printed.stdout + page).not.toContain(secret);
    return running;
  }

  it('a refused password_file names the file, the setting and what to do, never the password', async () => {
    const w = await mailWorld(dovecot, { http: true });
    world = w;
    const file = join(w.dir, 'mail.pw');
    await writeFile(file, 'wrong-password-0815\n');
    await expectRefusal(
      w,
      `the server refused the password in ${file} (NO [AUTHENTICATIONFAILED] Authentication failed.): it is wrong or was changed; write the current password of invoices there (mailboxes[invoices].password_file); it is used as soon as the file changes`,
      'wrong-password-0815',
    );
    await writeFile(file, '');
    expect((await checkMailboxes(w.config(), {})).problems).toEqual([
      `mailboxes[invoices].password_file: ${file} is empty`,
    ]);
  }, 120_000);

  it('a refused password_env names the variable, the setting and what to do, never the password', async () => {
    const w = await mailWorld(dovecot, {
      http: true,
      credential: ['    password_env: DOCEX_TEST_MAIL_PASSWORD'],
    });
    world = w;
    process.env.DOCEX_TEST_MAIL_PASSWORD = 'wrong-password-4711';
    try {
      await expectRefusal(
        w,
        'the server refused the password in the environment variable DOCEX_TEST_MAIL_PASSWORD (NO [AUTHENTICATIONFAILED] Authentication failed.): it is wrong or was changed; set DOCEX_TEST_MAIL_PASSWORD (mailboxes[invoices].password_env) to the current password of invoices, then start docex-sync run again (a running daemon keeps the environment it was started with)',
        'wrong-password-4711',
      );
    } finally {
      delete process.env.DOCEX_TEST_MAIL_PASSWORD;
    }
  }, 120_000);
});
