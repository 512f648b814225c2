/**
 * What a message yields, decided without I/O: which rule it falls under, which of its parts are
 * taken (and under what safe name), which are skipped and why. Mail is untrusted input: a name never
 * chooses a folder, and no part can make this throw.
 */
import { simpleParser, type Attachment } from 'mailparser';
import { safeFileName } from '@docex/shared';
import type { AttachmentPolicy, MailboxConfig, MailTarget } from '../config/mail.ts';

/** A message as the status, the state DB and the results name it. */
export interface MessageSummary {
  from: string;
  subject: string;
  date: string | null;
  message_id: string | null;
}

export interface TakenPart {
  /** The name to write under (safe: one path segment, no control characters). */
  name: string;
  contentType: string;
  content: Buffer;
}
export interface SkippedPart {
  name: string;
  reason: string;
  /**
   * A part the policy asks for that could not be taken (TNEF, empty, over max_bytes, an embedded
   * message not opened): someone has to look at its mail, so the mail is not flagged or moved.
   * Absent for a part the policy leaves out on purpose (an inline logo, a type, name or size it excludes).
   */
  refused?: true;
}

export interface MessageYield {
  summary: MessageSummary;
  taken: TakenPart[];
  skipped: SkippedPart[];
}

/** `*` any run of characters, `?` one; case-insensitive, whole string. */
export function wildcard(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 'is');
}

/** The first rule matching the sender and subject, else the mailbox's own target; or why the message is skipped. */
export function ruleFor(
  mailbox: MailboxConfig,
  message: { fromAddress: string; subject: string },
): { target: MailTarget; rule: number | null } | { skip: string } {
  for (const [i, rule] of mailbox.rules.entries()) {
    if (rule.from !== undefined && !wildcard(rule.from).test(message.fromAddress)) continue;
    if (rule.subject !== undefined && !wildcard(rule.subject).test(message.subject)) continue;
    if (rule.skip) return { skip: `rules[${i}] says skip` };
    if (rule.template_id === undefined && rule.folder_id === undefined)
      return { target: targetOf(mailbox, rule.metadata), rule: i };
    return {
      target: {
        template_id: rule.template_id,
        folder_id: rule.folder_id,
        metadata: rule.metadata ?? mailbox.metadata,
      },
      rule: i,
    };
  }
  if (mailbox.template_id === undefined && mailbox.folder_id === undefined)
    return { skip: 'no rule matches and the mailbox has no template_id or folder_id for other mail' };
  return { target: targetOf(mailbox), rule: null };
}

const targetOf = (mailbox: MailboxConfig, metadata = mailbox.metadata): MailTarget => ({
  template_id: mailbox.template_id,
  folder_id: mailbox.folder_id,
  metadata,
});

const TNEF = /^(winmail\.dat|win\.dat)$/i;
const typeMatches = (pattern: string, type: string) =>
  pattern.endsWith('/*') ? type.startsWith(pattern.slice(0, -1)) : pattern === type;
const kib = (n: number) => (n < 1024 ? `${n} bytes` : `${Math.round(n / 1024)} KiB`);

/**
 * Why an attachment is not taken, or undefined when it is. The policy's own filters come first, so
 * that a part it leaves out (a 30 MB .docx) is said as left out, not as refused; TNEF before them,
 * because its type is never in mime_types although it holds what the sender meant to send.
 */
export function skipReason(
  policy: AttachmentPolicy,
  part: Attachment,
  name: string,
): Omit<SkippedPart, 'name'> | undefined {
  const type = part.contentType.toLowerCase();
  if (type === 'application/ms-tnef' || type === 'application/vnd.ms-tnef' || TNEF.test(name))
    return {
      reason:
        'TNEF (winmail.dat, Outlook rich text): not unpacked; ask the sender to send plain attachments (Outlook: send as HTML or plain text)',
      refused: true,
    };
  const inline =
    part.contentDisposition === 'inline' ||
    (part.related === true && part.contentDisposition !== 'attachment');
  if (inline && type.startsWith('image/') && !policy.inline)
    return {
      reason: 'inline image in the body (logo or signature); set attachments.inline: true to take these',
    };
  if (policy.mime_types.length > 0 && !policy.mime_types.some((p) => typeMatches(p.toLowerCase(), type)))
    return { reason: `type ${type} is not in attachments.mime_types` };
  if (policy.include.length > 0 && !policy.include.some((g) => wildcard(g).test(name)))
    return { reason: 'name matches no attachments.include pattern' };
  if (policy.exclude.some((g) => wildcard(g).test(name)))
    return { reason: 'name matches an attachments.exclude pattern' };
  if (part.size < policy.min_bytes)
    return { reason: `smaller than attachments.min_bytes (${kib(part.size)})` };
  if (part.size === 0) return { reason: 'empty (0 bytes)', refused: true };
  if (part.size > policy.max_bytes)
    return {
      reason: `larger than attachments.max_bytes (${kib(part.size)} > ${kib(policy.max_bytes)}); not written`,
      refused: true,
    };
  return undefined;
}

/** Embedded messages (forwarded as attachment) are opened this deep; deeper ones are skipped with a reason. */
const MAX_DEPTH = 3;

const firstAddress = (from: { value?: Array<{ address?: string }> } | undefined) =>
  from?.value?.find((a) => a.address)?.address ?? '';

/** Parses a raw message into its summary and parts, taking what the policy allows. Never throws. */
export async function messageYield(
  raw: Buffer,
  policy: AttachmentPolicy,
): Promise<MessageYield & { fromAddress: string }> {
  const taken: TakenPart[] = [];
  const skipped: SkippedPart[] = [];
  const names = new Set<string>();
  const unique = (name: string) => {
    let candidate = name;
    for (let n = 2; names.has(candidate.toLowerCase()); n++) {
      const dot = name.lastIndexOf('.');
      candidate = dot > 0 ? `${name.slice(0, dot)} (${n})${name.slice(dot)}` : `${name} (${n})`;
    }
    names.add(candidate.toLowerCase());
    return candidate;
  };
  const walk = async (source: Buffer, depth: number, label: string) => {
    const mail = await simpleParser(source, {
      skipHtmlToText: true,
      skipTextToHtml: true,
      skipImageLinks: true,
      keepCidLinks: true,
    });
    for (const [i, part] of mail.attachments.entries()) {
      const name = safeFileName(part.filename, `attachment-${label}${i + 1}`);
      if (part.contentType.toLowerCase() === 'message/rfc822') {
        if (depth >= MAX_DEPTH)
          skipped.push({
            name,
            reason: `an embedded message nested deeper than ${MAX_DEPTH} levels`,
            refused: true,
          });
        else
          await walk(part.content, depth + 1, `${label}${i + 1}.`).catch((error: unknown) =>
            skipped.push({
              name,
              reason: `an embedded message that could not be parsed: ${(error as Error).message}`,
              refused: true,
            }),
          );
        continue;
      }
      const skip = skipReason(policy, part, name);
      if (skip) skipped.push({ name, ...skip });
      else
        taken.push({
          name: unique(name),
          contentType: part.contentType.toLowerCase(),
          content: part.content,
        });
    }
    return mail;
  };
  try {
    const mail = await walk(raw, 0, '');
    return {
      summary: {
        from: mail.from?.text ?? '',
        subject: mail.subject ?? '',
        date: mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date.toISOString() : null,
        message_id: mail.messageId ?? null,
      },
      fromAddress: firstAddress(mail.from),
      taken,
      skipped,
    };
  } catch (error) {
    return {
      summary: { from: '', subject: '', date: null, message_id: null },
      fromAddress: '',
      taken: [],
      skipped: [
        {
          name: '(message)',
          reason: `not a readable MIME message: ${(error as Error).message}`,
          refused: true,
        },
      ],
    };
  }
}
