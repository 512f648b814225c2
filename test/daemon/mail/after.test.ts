/**
 * The after-action (flag or move) against a real dovecot: it is applied only to a mail whose every
 * wanted attachment was recorded. A mail a rule skips, one no rule matches, and one with an
 * attachment refused stay as they were; status and the page say why; they are never taken twice,
 * and a poll does not look at them again (it asks only for UIDs above the highest one recorded).
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { renderMain } from '../../../daemon/src/status/page.ts';
import { statusSnapshot } from '../../../daemon/src/status/read-model.ts';
import { cliStatus, renderStatus } from '../../../daemon/src/status/report.ts';
import { invoicePdf, mimeMessage, startDovecot, type Dovecot } from '../../support/dovecot.ts';
import { until, type World } from '../helpers.ts';
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

/**
 * The mails of a folder by UID: Message-ID and flags, without \Recent (which only says which session
 * saw the mail first); {} when the folder does not exist.
 */
async function mailsIn(folder: string) {
  const imap = await dovecot.client();
  try {
    const lock = await imap.getMailboxLock(folder).catch(() => undefined);
    if (!lock) return {};
    try {
      const mails: Record<number, { id: string; flags: string[] }> = {};
      for await (const m of imap.fetch('1:*', { uid: true, envelope: true, flags: true }))
        mails[m.uid] = {
          id: m.envelope?.messageId ?? '',
          flags: [...(m.flags ?? [])].filter((f) => f !== '\\Recent').sort(),
        };
      return mails;
    } finally {
      lock.release();
    }
  } finally {
    await imap.logout();
  }
}

const results = (w: World, n: number) =>
  until(
    `${n} result(s)`,
    async () => {
      const r = await jsonResults(join(w.dir, 'mail-results'));
      return r.length === n ? r : undefined;
    },
    30_000,
  );

/** The intake's searches for new mail, as its debug log says them. */
const searches = (w: World) =>
  w.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"mailbox: looked for new mail"'))
    .map((line) => JSON.parse(line) as { above_uid: number; found: number });

const mail = (
  from: string,
  subject: string,
  id: string,
  attachments: Array<{ name: string; content: Buffer }>,
) => dovecot.append(mimeMessage({ from, subject, messageId: `<${id}>`, attachments }));

/** The status as `docex-sync status` prints it, read from the state DB as its own process does. */
function printedStatus(w: World, running: RunningDaemon) {
  running.db.flush();
  return renderStatus(cliStatus(w.config())).split('\n');
}

describe('the after-action applies only to a mail taken whole (real dovecot)', () => {
  it('move: a skipped mail stays in INBOX, status says why, and it is never looked at or taken again', async () => {
    const w = await mailWorld(dovecot, {
      extra: [
        '    rules:',
        "      - from: '*@acme.example'",
        '        template_id: TEMPLATE',
        "      - { from: '*', skip: true }",
      ],
      after: '{ action: move, folder: Processed }',
    });
    world = w;
    const other1 = await mail('Other <billing@other.example>', 'Other invoice 1', 'other-1@other.example', [
      { name: 'N01-1.pdf', content: invoicePdf('N01-1') },
    ]);
    await mail('Acme <billing@acme.example>', 'Acme invoice 1', 'acme-1@acme.example', [
      { name: 'A-1.pdf', content: invoicePdf('A-1') },
    ]);
    const other2 = await mail('Other <billing@other.example>', 'Other invoice 2', 'other-2@other.example', [
      { name: 'N02-1.pdf', content: invoicePdf('N02-1') },
    ]);
    let running = await w.start();
    let intake = running.mailboxes[0]!;
    expect((await results(w, 1)).map((r) => r.message.attachment)).toEqual(['A-1.pdf']);
    await until('all three recorded', () => intake.status().messages.skipped === 2 || undefined, 30_000);
    await until('the acme mail moved', async () =>
      Object.values(await mailsIn('Processed')).some((m) => m.id === '<acme-1@acme.example>'),
    );

    // Only the mail taken whole was moved; the two others are where they were.
    expect(Object.values(await mailsIn('Processed')).map((m) => m.id)).toEqual(['<acme-1@acme.example>']);
    expect(await mailsIn('INBOX')).toEqual({
      [other1]: { id: '<other-1@other.example>', flags: [] },
      [other2]: { id: '<other-2@other.example>', flags: [] },
    });
    expect(intake.status()).toMatchObject({
      messages: { taken: 1, skipped: 2 },
      left: {
        where: 'left in INBOX, not moved to Processed',
        count: 2,
        last: [
          {
            subject: 'Other invoice 2',
            from: '"Other" <billing@other.example>',
            reason: 'rules[1] says skip',
          },
          {
            subject: 'Other invoice 1',
            from: '"Other" <billing@other.example>',
            reason: 'rules[1] says skip',
          },
        ],
      },
    });
    const printed = printedStatus(w, running);
    expect(printed).toEqual(
      expect.arrayContaining([
        '  not taken: N01-1.pdf from "Other invoice 1": rules[1] says skip',
        '  left in INBOX, not moved to Processed: "Other invoice 2": rules[1] says skip',
        '  left in INBOX, not moved to Processed: "Other invoice 1": rules[1] says skip',
      ]),
    );
    expect(renderMain(statusSnapshot({ db: running.db, config: w.config() }))).toContain(
      '<tr><td></td><td colspan="6" class="muted">left in INBOX, not moved to Processed: “Other invoice 1” (&quot;Other&quot; &lt;billing@other.example&gt;): rules[1] says skip</td></tr>',
    );

    // Later polls ask only for mail above the highest UID recorded: the mails left are not looked at again.
    const acme2 = await mail('Acme <billing@acme.example>', 'Acme invoice 2', 'acme-2@acme.example', [
      { name: 'A-2.pdf', content: invoicePdf('A-2') },
    ]);
    await results(w, 2);
    expect(searches(w)).toContainEqual(expect.objectContaining({ above_uid: other2, found: 1 }));
    intake.nudge();
    await until('a poll after the last mail', () =>
      searches(w).some((s) => s.above_uid === acme2 && s.found === 0),
    );
    // A restart does not take them again either.
    await running.stop();
    const logged = w.logs.length;
    running = await w.start();
    intake = running.mailboxes[0]!;
    await until('the first poll after the restart', () =>
      w.logs.slice(logged).some((l) => l.includes('"msg":"mailbox: looked for new mail"')),
    );
    expect(searches(w).at(-1)).toMatchObject({ above_uid: acme2, found: 0 });
    expect(intake.status()).toMatchObject({ messages: { taken: 2, skipped: 2 }, left: { count: 2 } });
    expect(Object.values(await mailsIn('INBOX')).map((m) => m.id)).toEqual([
      '<other-1@other.example>',
      '<other-2@other.example>',
    ]);
  }, 120_000);

  it('flag: a skipped mail, one no rule matches, and one with an attachment refused stay unflagged, each with why', async () => {
    const w = await mailWorld(dovecot, {
      defaultTemplate: false,
      extra: [
        '    folder: Flagged',
        '    rules:',
        "      - from: '*@acme.example'",
        '        template_id: TEMPLATE',
        "      - { subject: '*newsletter*', skip: true }",
        '    attachments: { max_bytes: 4096 }',
      ],
    });
    world = w;
    const append = (
      from: string,
      subject: string,
      attachments: Parameters<typeof mimeMessage>[0]['attachments'],
    ) => dovecot.append(mimeMessage({ from, subject, attachments }), { folder: 'Flagged' });
    const newsletter = await append('news@shop.example', 'Our newsletter', [
      { name: 'promo.pdf', content: invoicePdf('P-1') },
    ]);
    const unmatched = await append('billing@elsewhere.example', 'Invoice E-1', [
      { name: 'E-1.pdf', content: invoicePdf('E-1') },
    ]);
    const whole = await append('billing@acme.example', 'Invoice A-1', [
      { name: 'A-1.pdf', content: invoicePdf('A-1') },
      { name: 'logo.png', type: 'image/png', content: Buffer.alloc(500, 1), inline: true },
    ]);
    const partlyRaw = mimeMessage({
      from: 'billing@acme.example',
      subject: 'Invoices A-2, A-3',
      messageId: '<a2-a3@acme.example>',
      attachments: [
        { name: 'A-2.pdf', content: invoicePdf('A-2') },
        { name: 'A-3.pdf', content: Buffer.concat([invoicePdf('A-3'), Buffer.alloc(6000, 0x20)]) },
      ],
    });
    const partly = await dovecot.append(partlyRaw, { folder: 'Flagged' });
    const running = await w.start();
    const intake = running.mailboxes[0]!;
    expect((await results(w, 2)).map((r) => r.message.attachment).sort()).toEqual(['A-1.pdf', 'A-2.pdf']);
    await until('all four recorded', () => intake.status().messages.skipped === 2 || undefined, 30_000);
    await until('the mail taken whole flagged', async () =>
      (await mailsIn('Flagged'))[whole]?.flags.includes('$DocexTaken'),
    );

    const flags = Object.fromEntries(
      Object.entries(await mailsIn('Flagged')).map(([uid, m]) => [uid, m.flags]),
    );
    expect(flags).toEqual({ [newsletter]: [], [unmatched]: [], [whole]: ['$DocexTaken'], [partly]: [] });
    const refused = 'A-3.pdf was not taken (larger than attachments.max_bytes (6 KiB > 4 KiB); not written)';
    const noRule = 'no rule matches and the mailbox has no template_id or folder_id for other mail';
    expect(intake.status()).toMatchObject({
      messages: { taken: 2, skipped: 2 },
      attachments: 2,
      left: {
        where: 'left in Flagged without $DocexTaken',
        count: 3,
        last: [
          { subject: 'Invoices A-2, A-3', reason: refused },
          { subject: 'Invoice E-1', reason: noRule },
          { subject: 'Our newsletter', reason: 'rules[1] says skip' },
        ],
      },
    });
    const printed = printedStatus(w, running);
    const lines = printed.filter((l) => l.startsWith('  left in '));
    expect(lines).toEqual([
      `  left in Flagged without $DocexTaken: "Invoices A-2, A-3": ${refused}`,
      `  left in Flagged without $DocexTaken: "Invoice E-1": ${noRule}`,
      '  left in Flagged without $DocexTaken: "Our newsletter": rules[1] says skip',
    ]);
    const page = renderMain(statusSnapshot({ db: running.db, config: w.config() }));
    expect(page).toContain(
      '<tr><td></td><td colspan="6" class="muted">left in Flagged without $DocexTaken: “Invoices A-2, A-3” (billing@acme.example): A-3.pdf was not taken (larger than attachments.max_bytes (6 KiB &gt; 4 KiB); not written)</td></tr>',
    );

    // A copy of the mail taken in part (same Message-ID, a new UID) is a duplicate, and left too.
    const copy = await dovecot.append(partlyRaw, { folder: 'Flagged' });
    await until('a poll after the copy was taken', () => {
      intake.nudge();
      return searches(w).some((s) => s.above_uid === copy);
    });
    expect(intake.status()).toMatchObject({
      messages: { taken: 2, skipped: 2, duplicate: 1 },
      attachments: 2,
    });
    expect((await mailsIn('Flagged'))[copy]?.flags).toEqual([]);
    expect(intake.status().left?.last[0]).toEqual({
      subject: 'Invoices A-2, A-3',
      from: 'billing@acme.example',
      reason: `a copy of UID ${partly}, which was left too: ${refused}`,
    });
  }, 120_000);
});
