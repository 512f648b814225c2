/** The test IMAP server itself: it logs in over TLS with the test CA, stores what APPEND places, lists it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mimeMessage, startDovecot, type Dovecot } from '../../support/dovecot.ts';

let dovecot: Dovecot;
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(() => dovecot?.stop());

describe('test dovecot', () => {
  it('takes a login over implicit TLS, stores appended messages and lists them by UID', async () => {
    const first = await dovecot.append(mimeMessage({ subject: 'Invoice 1' }));
    const second = await dovecot.append(
      mimeMessage({ subject: 'Invoice 2', attachments: [{ name: 'a.pdf', content: '%PDF-1.4 a' }] }),
      { folder: 'Invoices' },
    );
    expect(second).toBeGreaterThan(0);
    const imap = await dovecot.client();
    try {
      const lock = await imap.getMailboxLock('INBOX');
      try {
        const seen = [];
        for await (const m of imap.fetch('1:*', { uid: true, envelope: true }))
          seen.push([m.uid, m.envelope?.subject]);
        expect(seen).toEqual([[first, 'Invoice 1']]);
      } finally {
        lock.release();
      }
      const folders = (await imap.list()).map((f) => f.path);
      expect(folders).toEqual(expect.arrayContaining(['INBOX', 'Invoices']));
      expect(imap.capabilities.has('IDLE')).toBe(true);
    } finally {
      await imap.logout();
    }
  });

  it('refuses a wrong password', async () => {
    await expect(dovecot.client({ user: 'invoices', password: 'wrong' })).rejects.toThrow();
  });
});
