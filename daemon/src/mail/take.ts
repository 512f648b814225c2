/**
 * Taking one message (steps 1 and 2 of intake.ts): its attachments written to the spool (fsynced,
 * renamed into place), then the message, its attachments and their file rows recorded in one
 * transaction; or, for a message not taken whole, why it is left as it was. The caller runs the
 * after-action (flag, move) only for a message taken whole, then marks it done.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ImapFlow } from 'imapflow';
import type { Logger } from 'pino';
import { inside, writeAtomic } from '../common/files.ts';
import { spoolFolder, type MailboxConfig } from '../config/mail.ts';
import type { NewFile, StateDb } from '../store/state.ts';
import { messageYield, ruleFor, type SkippedPart } from './select.ts';

export interface TakeDeps {
  mailbox: MailboxConfig;
  db: StateDb;
  log: Logger;
  /** Tells the pipeline new file rows are waiting. */
  wake(): void;
  now(): number;
}

/** Why a mail some of whose attachments were taken is still left: the parts it asked for that were refused. */
function refusals(skipped: SkippedPart[]): string | null {
  const refused = skipped.filter((s) => s.refused);
  return refused.length ? refused.map((s) => `${s.name} was not taken (${s.reason})`).join('; ') : null;
}

/**
 * Takes message `uid`: undefined when it was expunged meanwhile, else its row id and why it is left
 * as it was (null: taken whole, the after-action is due).
 */
export async function takeMessage(
  deps: TakeDeps,
  client: ImapFlow,
  uidvalidity: number,
  uid: number,
): Promise<{ id: number; left: string | null } | undefined> {
  const { mailbox, db, log } = deps;
  const now = deps.now();
  const head = await client.fetchOne(String(uid), { uid: true, size: true, envelope: true }, { uid: true });
  if (!head) return undefined; // expunged meanwhile
  const envelopeId = head.envelope?.messageId?.trim() || null;
  const base = {
    mailbox: mailbox.name,
    uidvalidity,
    uid,
    message_id: envelopeId,
    sender:
      head.envelope?.from
        ?.map((a) => (a.name ? `"${a.name}" <${a.address}>` : (a.address ?? '')))
        .join(', ') ?? '',
    subject: head.envelope?.subject ?? '',
    sent_at:
      head.envelope?.date && !Number.isNaN(new Date(head.envelope.date).getTime())
        ? new Date(head.envelope.date).toISOString()
        : null,
  };
  // Why the mail is left as it was: the after-action is for a mail whose every wanted attachment
  // is recorded (docs/reference/mailboxes.md, "What happens to a message"); null while it is.
  let left: string | null = null;
  const record = (
    outcome: 'taken' | 'duplicate' | 'skipped',
    reason: string | null,
    skipped: SkippedPart[],
    files: Array<NewFile & { name: string }> = [],
  ) => db.mail.recordMail({ ...base, outcome, reason, skipped, left_reason: left }, files, now);

  let id: number;
  const earlier = envelopeId ? db.mail.mailTakenWithMessageId(mailbox.name, envelopeId) : undefined;
  if (earlier) {
    if (earlier.left_reason !== null)
      left = `a copy of UID ${earlier.uid}, which was left too: ${earlier.left_reason}`;
    id = record(
      'duplicate',
      `Message-ID taken before (UID ${earlier.uid}, UIDVALIDITY ${earlier.uidvalidity})`,
      [],
    );
    log.info(
      { mailbox: mailbox.name, uid, messageId: envelopeId },
      'mail: Message-ID already taken; not taken again',
    );
  } else if ((head.size ?? 0) > mailbox.max_message_bytes) {
    const reason = `message larger than max_message_bytes (${head.size} bytes); not downloaded`;
    left = reason;
    id = record('skipped', reason, [{ name: '(message)', reason, refused: true }]);
  } else {
    const full = await client.fetchOne(String(uid), { uid: true, source: true }, { uid: true });
    if (!full || !full.source) return undefined; // expunged meanwhile
    const parsed = await messageYield(full.source, mailbox.attachments);
    const choice = ruleFor(mailbox, { fromAddress: parsed.fromAddress, subject: parsed.summary.subject });
    const summary = {
      ...base,
      sender: parsed.summary.from || base.sender,
      subject: parsed.summary.subject || base.subject,
      sent_at: parsed.summary.date ?? base.sent_at,
    };
    Object.assign(base, summary);
    if ('skip' in choice) {
      left = choice.skip;
      id = record('skipped', choice.skip, [
        ...parsed.skipped,
        ...parsed.taken.map((t) => ({ name: t.name, reason: choice.skip })),
      ]);
    } else if (parsed.taken.length === 0) {
      left = parsed.skipped.length ? 'no attachment to take' : 'no attachments';
      id = record('skipped', left, parsed.skipped);
    } else {
      left = refusals(parsed.skipped);
      const watch = spoolFolder(mailbox, choice.target);
      const files: Array<NewFile & { name: string }> = [];
      for (const part of parsed.taken) {
        const rel = join(`${uidvalidity}-${uid}`, part.name);
        const path = inside(watch, rel);
        await writeAtomic(path, part.content);
        const info = await stat(path);
        files.push({
          watch,
          path,
          rel,
          size: info.size,
          mtimeMs: Math.floor(info.mtimeMs),
          ino: info.ino,
          name: part.name,
        });
      }
      id = record('taken', null, parsed.skipped, files);
      deps.wake();
      log.info(
        {
          mailbox: mailbox.name,
          uid,
          subject: summary.subject,
          attachments: files.length,
          skipped: parsed.skipped.length,
        },
        'mail taken',
      );
    }
  }
  if (left !== null) {
    // Recorded as done: nothing runs for it again, and the next poll asks only for higher UIDs.
    log.info(
      { mailbox: mailbox.name, uid, subject: base.subject, reason: left },
      'mail not taken whole: left as it was (not flagged or moved)',
    );
  }
  return { id, left };
}
