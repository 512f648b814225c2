/** What a message yields: rules by sender and subject, attachment policy, and hostile MIME that must never throw or name a path. */
import { describe, expect, it } from 'vitest';
import { keyPath } from '../../../cli-kit/src/yaml.ts';
import { MailboxSection, mailboxProblems, targetKey } from '../../../daemon/src/config/mail.ts';
import { messageYield, ruleFor } from '../../../daemon/src/mail/select.ts';
import { mimeMessage } from '../../support/dovecot.ts';

const mailbox = (extra: Record<string, unknown> = {}) =>
  MailboxSection.parse({
    name: 'invoices',
    host: 'imap.test',
    user: 'u',
    password_env: 'P',
    template_id: 1,
    output: '/o',
    failed_dir: '/f',
    ...extra,
  });
const policy = mailbox().attachments;
const pdf = (n = 2000) => Buffer.concat([Buffer.from('%PDF-1.4\n'), Buffer.alloc(n, 'x')]);

describe('rules', () => {
  const m = mailbox({
    rules: [
      { from: '*@acme.test', template_id: 7, metadata: '{"supplier":"acme"}' },
      { subject: '*newsletter*', skip: true },
      { subject: 'Rechnung*', folder_id: 9 },
    ],
  });
  it('the first rule whose sender and subject match chooses the target; else the mailbox default', () => {
    expect(ruleFor(m, { fromAddress: 'Billing@ACME.test', subject: 'x' })).toEqual({
      target: { template_id: 7, folder_id: undefined, metadata: '{"supplier":"acme"}' },
      rule: 0,
    });
    expect(ruleFor(m, { fromAddress: 'a@b.test', subject: 'Our Newsletter 3/2026' })).toEqual({
      skip: 'rules[1] says skip',
    });
    expect(ruleFor(m, { fromAddress: 'a@b.test', subject: 'rechnung 4711' })).toMatchObject({
      target: { folder_id: 9 },
      rule: 2,
    });
    expect(ruleFor(m, { fromAddress: 'a@b.test', subject: 'hello' })).toMatchObject({
      target: { template_id: 1 },
      rule: null,
    });
  });
  it('target keys are stable names of the target, not of the rule position', () => {
    expect(targetKey({ template_id: 7 })).toBe('template-7');
    expect(targetKey({ folder_id: 9, metadata: 'm' })).toMatch(/^folder-9-[0-9a-f]{8}$/);
  });
  it('config problems name the key', () => {
    expect(
      mailboxProblems(
        [
          mailbox({ password_file: '/p' }),
          mailbox({ template_id: undefined, rules: [{ template_id: 2 }] }),
          mailbox({ name: 'other', template_id: undefined }),
        ],
        keyPath,
      ),
    ).toEqual([
      'mailboxes[0]: give exactly one of password_file, password_env or oauth2_token_file',
      'mailboxes[1].name: "invoices" is used by another mailbox',
      'mailboxes[1].rules[0]: give from or subject (a rule without either matches every message)',
      'mailboxes[2]: give template_id or folder_id (used for messages no rule matches), or rules',
    ]);
  });
});

describe('attachments', () => {
  it('takes PDFs and images, several per mail, and names the message', async () => {
    const y = await messageYield(
      Buffer.from(
        mimeMessage({
          from: 'Acme Billing <billing@acme.test>',
          subject: 'Invoices 4711, 4712',
          messageId: '<m1@acme.test>',
          attachments: [
            { name: 'inv-4711.pdf', content: pdf() },
            { name: 'inv-4712.pdf', content: pdf() },
            { name: 'scan.png', type: 'image/png', content: pdf() },
            {
              name: 'terms.docx',
              type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
              content: pdf(),
            },
          ],
        }),
      ),
      policy,
    );
    expect(y.summary).toEqual({
      from: '"Acme Billing" <billing@acme.test>',
      subject: 'Invoices 4711, 4712',
      date: '2026-11-20T09:30:00.000Z',
      message_id: '<m1@acme.test>',
    });
    expect(y.fromAddress).toBe('billing@acme.test');
    expect(y.taken.map((t) => t.name)).toEqual(['inv-4711.pdf', 'inv-4712.pdf', 'scan.png']);
    expect(y.skipped).toEqual([
      { name: 'terms.docx', reason: expect.stringContaining('is not in attachments.mime_types') },
    ]);
  });

  it('hostile names become one safe path segment; empty, oversized, inline logos and TNEF are skipped with a reason', async () => {
    const raw = mimeMessage({
      attachments: [
        { name: '../../../etc/passwd.pdf', content: pdf() },
        { name: '/abs/path/x.pdf', content: pdf() },
        { name: 'C:\\Windows\\evil.pdf', content: pdf() },
        {
          rawHeaders:
            "Content-Type: application/pdf\r\nContent-Disposition: attachment; filename*=UTF-8''Rechnung%20M%C3%A4rz%00.pdf",
          content: pdf(),
        },
        {
          rawHeaders:
            'Content-Type: application/pdf\r\nContent-Disposition: attachment; filename="=?ISO-8859-1?Q?Gr=FC=DFe.pdf?="',
          content: pdf(),
        },
        {
          rawHeaders:
            'Content-Type: application/pdf\r\nContent-Disposition: attachment; filename="\xff\xfe.pdf"',
          content: pdf(),
        },
        { name: 'empty.pdf', content: '' },
        { name: 'huge.pdf', content: pdf(3000) },
        { name: 'logo.png', type: 'image/png', content: pdf(), inline: true },
        { name: 'winmail.dat', type: 'application/ms-tnef', content: pdf() },
        { name: 'invoice.pdf', type: 'application/octet-stream', content: pdf() },
        { name: 'invoice.pdf', content: pdf() },
      ],
    });
    const y = await messageYield(Buffer.from(raw, 'latin1'), { ...policy, max_bytes: 2500 });
    for (const t of y.taken) expect(t.name).toMatch(/^[^/\\\0]+$/);
    expect(y.taken.map((t) => t.name)).toEqual([
      'passwd.pdf',
      'x.pdf',
      'C_Windowsevil.pdf', // a backslash in a quoted header escapes the next character

      'Rechnung März_.pdf',
      'Grüße.pdf',
      'ÿþ.pdf', // undeclared 8-bit bytes read as Latin-1
      'invoice.pdf',
      'invoice (2).pdf',
    ]);
    // Refused: parts the policy asks for that cannot be taken (their mail is then not flagged or
    // moved); the inline logo is left out by the policy on purpose.
    expect(y.skipped).toEqual([
      { name: 'empty.pdf', reason: 'empty (0 bytes)', refused: true },
      {
        name: 'huge.pdf',
        reason: 'larger than attachments.max_bytes (3 KiB > 2 KiB); not written',
        refused: true,
      },
      { name: 'logo.png', reason: expect.stringContaining('inline image') },
      { name: 'winmail.dat', reason: expect.stringContaining('TNEF'), refused: true },
    ]);
    expect(y.skipped[2]).not.toHaveProperty('refused');
  });

  it('a part the policy leaves out is never said to be refused, however large or empty', async () => {
    const y = await messageYield(
      Buffer.from(
        mimeMessage({
          attachments: [
            { name: 'terms.docx', type: 'application/msword', content: pdf(3000) },
            { name: 'signature.pdf', content: '' },
            { name: 'invoice.pdf', content: pdf() },
          ],
        }),
      ),
      { ...policy, max_bytes: 2500, exclude: ['*signature*'] },
    );
    expect(y.taken.map((t) => t.name)).toEqual(['invoice.pdf']);
    expect(y.skipped).toEqual([
      { name: 'terms.docx', reason: 'type application/msword is not in attachments.mime_types' },
      { name: 'signature.pdf', reason: 'name matches an attachments.exclude pattern' },
    ]);
    expect(y.skipped.some((s) => s.refused)).toBe(false);
  });

  it('opens a forwarded message (message/rfc822) and takes its attachments', async () => {
    const inner = mimeMessage({ subject: 'original', attachments: [{ name: 'inner.pdf', content: pdf() }] });
    const y = await messageYield(
      Buffer.from(
        mimeMessage({
          subject: 'Fwd: original',
          attachments: [{ name: 'fwd.eml', type: 'message/rfc822', content: inner }],
        }),
      ),
      policy,
    );
    expect(y.taken.map((t) => t.name)).toEqual(['inner.pdf']);
    expect(y.summary.subject).toBe('Fwd: original');
  });

  it('malformed MIME does not throw: unterminated multipart, garbage, binary noise', async () => {
    const broken = [
      'Content-Type: multipart/mixed; boundary="x"\r\n\r\n--x\r\nContent-Type: application/pdf; name="a.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n%%%not base64',
      'this is not a mail at all',
      Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256)),
    ];
    for (const raw of broken) {
      const y = await messageYield(Buffer.from(raw), policy);
      expect(Array.isArray(y.taken)).toBe(true);
    }
  });
});
