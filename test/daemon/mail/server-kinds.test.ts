/**
 * The other kind of server and the other after-action: STARTTLS on the plain IMAP port, a server that
 * does not announce IDLE (so the intake polls), and `after: move`, which moves a mail out of the
 * folder only once its attachments are recorded, into a folder the intake makes if it is missing.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { checkMailboxes } from '../../../daemon/src/app/preflight.ts';
import { invoicePdf, mimeMessage, startDovecot, type Dovecot } from '../../support/dovecot.ts';
import { calibrate, runCli, stopCliChildren, until, type World, testLimit } from '../helpers.ts';
import { jsonResults, mailWorld } from './world.ts';

// Time limits from a measured start of the CLI these tests run as a process (busy machines).
await calibrate();

let dovecot: Dovecot;
beforeAll(async () => {
  dovecot = await startDovecot({ idle: false });
});
afterAll(() => dovecot?.stop());

let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

/** Message-IDs of the mails in `folder`, or undefined when the folder does not exist. */
async function messageIdsIn(folder: string) {
  const imap = await dovecot.client();
  try {
    const lock = await imap.getMailboxLock(folder).catch(() => undefined);
    if (!lock) return undefined;
    try {
      const ids: string[] = [];
      for await (const m of imap.fetch('1:*', { uid: true, envelope: true }))
        ids.push(m.envelope?.messageId ?? '');
      return ids;
    } finally {
      lock.release();
    }
  } finally {
    await imap.logout();
  }
}

describe('a server without IDLE, over STARTTLS, mails moved when taken', () => {
  it('polls, takes the mail, and moves it into a folder it makes', async () => {
    expect(await messageIdsIn('Taken')).toBeUndefined();
    world = await mailWorld(dovecot, {
      security: 'starttls',
      after: '{ action: move, folder: Taken }',
      poll_interval_ms: 1000,
    });
    const w = world;
    const check = await checkMailboxes(w.config(), {});
    expect(check).toEqual({
      problems: [],
      lines: [
        'mailbox invoices: logged in as invoices at 127.0.0.1; INBOX holds 0 message(s), 0 not taken yet; no IDLE, polled every 1000 ms',
      ],
    });

    const running = await w.start();
    const intake = running.mailboxes[0]!;
    await until('connected', () => intake.status().connected);
    expect(intake.status().idle).toBe(false);
    await dovecot.append(
      mimeMessage({
        messageId: '<moved-1@acme.test>',
        attachments: [{ name: 'V-1.pdf', content: invoicePdf('V-1') }],
      }),
    );
    const [result] = await until(
      'the result',
      async () => {
        const r = await jsonResults(join(w.dir, 'mail-results'));
        return r.length === 1 ? r : undefined;
      },
      30_000,
    );
    expect(result!.message).toMatchObject({ message_id: '<moved-1@acme.test>', attachment: 'V-1.pdf' });
    await until('the mail moved', async () => (await messageIdsIn('Taken'))?.length === 1, 30_000);
    expect(await messageIdsIn('Taken')).toEqual(['<moved-1@acme.test>']);
    expect(await messageIdsIn('INBOX')).toEqual([]);
    expect(intake.status()).toMatchObject({
      connected: true,
      idle: false,
      attachments: 1,
      messages: { taken: 1 },
    });
  }, testLimit(120_000));
});

describe('SIGHUP', () => {
  it('adds a mailbox to a running docex-sync, whose mail is then taken without a restart', async () => {
    const limit = await calibrate();
    world = await mailWorld(dovecot, { after: '{ action: leave }' });
    const w = world;
    const withMailbox = await readFile(w.configFile, 'utf8');
    await writeFile(w.configFile, withMailbox.slice(0, withMailbox.indexOf('mailboxes:')));
    const daemon = runCli(['run', '--config', w.configFile]);
    await until('running', () => daemon.output().includes('docex-sync running'), limit);
    expect(daemon.output()).not.toContain('mailbox connected');

    await writeFile(w.configFile, withMailbox);
    daemon.child.kill('SIGHUP');
    await until('reloaded', () => daemon.output().includes('config reloaded'), limit);
    await until('the mailbox connected', () => daemon.output().includes('mailbox connected'), limit);
    await dovecot.append(
      mimeMessage({
        messageId: '<hup-1@acme.test>',
        attachments: [{ name: 'H-1.pdf', content: invoicePdf('H-1') }],
      }),
    );
    const [result] = await until(
      'the result',
      async () => {
        const r = await jsonResults(join(w.dir, 'mail-results'));
        return r.length === 1 ? r : undefined;
      },
      limit,
    );
    expect(result!.message).toMatchObject({ message_id: '<hup-1@acme.test>', attachment: 'H-1.pdf' });
    daemon.child.kill('SIGTERM');
    expect(await daemon.exited).toBe(0);
  }, testLimit(180_000));
});

describe('UIDVALIDITY', () => {
  it('a folder made anew (UIDs restart, UIDVALIDITY changes) loses no new mail and takes no old one twice', async () => {
    const imap = await dovecot.client();
    await imap.mailboxCreate('Invoices').catch(() => undefined);
    await imap.logout();
    world = await mailWorld(dovecot, { extra: ['    folder: Invoices'], after: '{ action: leave }' });
    const w = world;
    const results = async (n: number) => {
      const r = await jsonResults(join(w.dir, 'mail-results'));
      return r.length === n ? r : undefined;
    };
    const old = mimeMessage({
      messageId: '<before@acme.test>',
      attachments: [{ name: 'U-1.pdf', content: invoicePdf('U-1') }],
    });
    const firstUid = await dovecot.append(old, { folder: 'Invoices' });
    let running = await w.start();
    await until('the first result', () => results(1), 30_000);
    await running.stop();

    // The server's folder is made anew (a migration, a restore): its UIDs start again at 1.
    const admin = await dovecot.client();
    await admin.mailboxDelete('Invoices');
    await admin.mailboxCreate('Invoices');
    await admin.logout();
    const newUid = await dovecot.append(
      mimeMessage({
        messageId: '<after@acme.test>',
        attachments: [{ name: 'U-2.pdf', content: invoicePdf('U-2') }],
      }),
      { folder: 'Invoices' },
    );
    expect(newUid).toBe(firstUid); // same UID, another mail: only UIDVALIDITY tells them apart
    await dovecot.append(old, { folder: 'Invoices' }); // and the old mail once more

    running = await w.start();
    const intake = running.mailboxes[0]!;
    const both = await until("the new mail's result", () => results(2), 30_000);
    await until('the old mail recorded as a copy', () => intake.status().messages.duplicate === 1, 30_000);
    await until('pipeline idle', () => running.pipeline.idle());
    expect(both.map((r) => r.message.message_id).sort()).toEqual(['<after@acme.test>', '<before@acme.test>']);
    expect(await results(2)).toBeDefined();
    expect(w.emulator.stats().requestsByOperation.upload_file).toBe(2);
  }, testLimit(120_000));
});

describe('hostile mail through the real server', () => {
  it('hostile names stay one safe name inside the spool, skipped parts have a reason, malformed mail breaks nothing', async () => {
    world = await mailWorld(dovecot, {
      extra: ['    folder: Hostile', '    attachments: { max_bytes: 100000 }'],
      after: '{ action: leave }',
    });
    const w = world;
    const imap = await dovecot.client();
    await imap.mailboxCreate('Hostile').catch(() => undefined);
    await imap.logout();
    const hostile = mimeMessage({
      messageId: '<hostile@evil.test>',
      attachments: [
        { name: '../../../../H-1.pdf', content: invoicePdf('H-1') },
        { name: '/docex-nowhere/H-2.pdf', content: invoicePdf('H-2') },
        {
          rawHeaders:
            "Content-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''..%2F..%2FH-3%00.pdf",
          content: invoicePdf('H-3'),
        },
        { name: 'empty.pdf', content: '' },
        { name: 'huge.pdf', content: Buffer.alloc(200_000, 'x') },
        { name: 'winmail.dat', type: 'application/ms-tnef', content: invoicePdf('T-1') },
      ],
    });
    await dovecot.append(
      'Content-Type: multipart/mixed; boundary="x"\r\nMessage-ID: <broken@evil.test>\r\n\r\n--x\r\nContent-Type: application/pdf; name="a.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n%%%not base64',
      { folder: 'Hostile' },
    );
    await dovecot.append(hostile, { folder: 'Hostile' });
    await dovecot.append(
      mimeMessage({
        messageId: '<fine@acme.test>',
        attachments: [{ name: 'OK-1.pdf', content: invoicePdf('OK-1') }],
      }),
      { folder: 'Hostile' },
    );
    const running = await w.start();
    const intake = running.mailboxes[0]!;
    const results = await until(
      'four results',
      async () => {
        const r = await jsonResults(join(w.dir, 'mail-results'));
        return r.length === 4 ? r : undefined;
      },
      60_000,
    );
    await until('pipeline idle', () => running.pipeline.idle());
    expect(results.map((r) => r.message.attachment).sort()).toEqual([
      'H-1.pdf',
      'H-2.pdf',
      'H-3_.pdf',
      'OK-1.pdf',
    ]);
    // No file beside any folder above the world, where the names' ../ would have led, nor at the absolute path.
    for (let dir = w.dir; dir !== dirname(dir);) {
      dir = dirname(dir);
      for (const name of ['H-1.pdf', 'H-3.pdf'])
        expect(existsSync(join(dir, name)), join(dir, name)).toBe(false);
    }
    expect(existsSync('/docex-nowhere')).toBe(false);
    expect(intake.status().skipped).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'empty.pdf', reason: 'empty (0 bytes)' }),
        expect.objectContaining({
          name: 'huge.pdf',
          reason: expect.stringContaining('attachments.max_bytes'),
        }),
        expect.objectContaining({ name: 'winmail.dat', reason: expect.stringContaining('TNEF') }),
      ]),
    );
    expect(intake.status()).toMatchObject({ connected: true, login_refused: null });
  }, testLimit(120_000));
});
