/**
 * Mail intake's record (schema 5, daemon/src/mail): the mail_messages table, each message seen,
 * keyed by mailbox + UIDVALIDITY + UID, and mail_attachments, which file rows its attachments became
 * (the rows themselves are store/files.ts's, written in the same commit).
 */
import type { Connection } from './connection.ts';
import type { FileRepository, NewFile } from './files.ts';
import type { KvRepository } from './kv.ts';

/** A message as the intake records it: what it yielded, before its after-action runs. */
export interface NewMailMessage {
  mailbox: string;
  uidvalidity: number;
  uid: number;
  message_id: string | null;
  sender: string;
  subject: string;
  sent_at: string | null;
  /** taken: its attachments are in the pipeline; duplicate: its Message-ID was taken before; skipped: nothing to take. */
  outcome: 'taken' | 'duplicate' | 'skipped';
  reason: string | null;
  skipped: Array<{ name: string; reason: string; refused?: true }>;
  /** Why the mail is left as it was (not flagged or moved); null: its after-action runs. */
  left_reason: string | null;
}
export interface MailMessageRow extends Omit<NewMailMessage, 'skipped'> {
  id: number;
  attachments: number;
  skipped: string;
  recorded_at: number;
  done_at: number | null;
}
/** The message an attachment's file row came from, as results name it. */
export interface MailSource {
  mailbox: string;
  from: string;
  subject: string;
  date: string | null;
  message_id: string | null;
  attachment: string;
}

export class MailRepository {
  private readonly c: Connection;
  private readonly files: FileRepository;
  private readonly kv: KvRepository;

  constructor(connection: Connection, files: FileRepository, kv: KvRepository) {
    this.c = connection;
    this.files = files;
    this.kv = kv;
  }

  /**
   * A message and the file rows of its attachments, in one commit (written to the spool before):
   * after this returns, a crash loses none of them and a restart does not take the message again.
   * A message left as it was is done at once: it has no after-action to run.
   */
  recordMail(message: NewMailMessage, files: Array<NewFile & { name: string }>, now: number): number {
    const id = this.c.write(() => {
      const messageId = Number(
        this.c
          .st(
            `INSERT INTO mail_messages (mailbox, uidvalidity, uid, message_id, sender, subject, sent_at, outcome, reason, attachments, skipped, recorded_at, left_reason, done_at)
           VALUES (@mailbox, @uidvalidity, @uid, @message_id, @sender, @subject, @sent_at, @outcome, @reason, @attachments, @skipped, @now, @left_reason, @done_at)`,
          )
          .run({
            ...message,
            attachments: files.length,
            skipped: JSON.stringify(message.skipped),
            now,
            done_at: message.left_reason === null ? null : now,
          }).lastInsertRowid,
      );
      for (const file of files) {
        const fileId = this.files.insert(file.watch, file, now, 0);
        this.c
          .st(`INSERT INTO mail_attachments (file_id, message, name) VALUES (?, ?, ?)`)
          .run(fileId, messageId, file.name);
      }
      return messageId;
    });
    this.c.flush();
    return id;
  }
  mailMessage(mailbox: string, uidvalidity: number, uid: number): MailMessageRow | undefined {
    return this.c
      .st(`SELECT * FROM mail_messages WHERE mailbox = ? AND uidvalidity = ? AND uid = ?`)
      .get(mailbox, uidvalidity, uid) as MailMessageRow | undefined;
  }
  /** The first message of this Message-ID whose attachments were taken (the second identity check). */
  mailTakenWithMessageId(mailbox: string, messageId: string): MailMessageRow | undefined {
    return this.c
      .st(
        `SELECT * FROM mail_messages WHERE mailbox = ? AND message_id = ? AND outcome = 'taken' ORDER BY id LIMIT 1`,
      )
      .get(mailbox, messageId) as MailMessageRow | undefined;
  }
  /**
   * The highest UID recorded under this UIDVALIDITY (0: none). Messages are taken in UID order and
   * a new message always gets a higher UID, so a poll asks the server only for UIDs above it.
   */
  mailHighestUid(mailbox: string, uidvalidity: number): number {
    return (
      (this.c
        .st(`SELECT MAX(uid) FROM mail_messages WHERE mailbox = ? AND uidvalidity = ?`)
        .pluck()
        .get(mailbox, uidvalidity) as number | null) ?? 0
    );
  }
  /** Recorded messages whose after-action (flag, move) has not run yet. */
  mailPending(mailbox: string): MailMessageRow[] {
    return this.c
      .st(`SELECT * FROM mail_messages WHERE mailbox = ? AND done_at IS NULL ORDER BY id`)
      .all(mailbox) as MailMessageRow[];
  }
  mailDone(id: number, now: number) {
    this.c.write(() => this.c.st(`UPDATE mail_messages SET done_at = ? WHERE id = ?`).run(now, id));
  }
  /** For status: messages by outcome, attachments taken, messages left as they were. */
  mailCounts(mailbox: string): { messages: Record<string, number>; attachments: number; left: number } {
    const messages: Record<string, number> = { taken: 0, duplicate: 0, skipped: 0 };
    let attachments = 0;
    let left = 0;
    for (const r of this.c
      .st(
        `SELECT outcome, COUNT(*) AS n, SUM(attachments) AS a, COUNT(left_reason) AS l FROM mail_messages WHERE mailbox = ? GROUP BY outcome`,
      )
      .all(mailbox) as Array<{ outcome: string; n: number; a: number; l: number }>) {
      messages[r.outcome] = r.n;
      attachments += r.a;
      left += r.l;
    }
    return { messages, attachments, left };
  }
  /** The last messages left as they were (not flagged or moved), newest first. */
  mailLeft(mailbox: string, limit = 10): MailMessageRow[] {
    return this.c
      .st(
        `SELECT * FROM mail_messages WHERE mailbox = ? AND left_reason IS NOT NULL ORDER BY id DESC LIMIT ?`,
      )
      .all(mailbox, limit) as MailMessageRow[];
  }
  /** The last messages that had something skipped or were skipped, newest first. */
  mailSkips(mailbox: string, limit = 5): MailMessageRow[] {
    return this.c
      .st(`SELECT * FROM mail_messages WHERE mailbox = ? AND skipped != '[]' ORDER BY id DESC LIMIT ?`)
      .all(mailbox, limit) as MailMessageRow[];
  }
  /** A mailbox's connection state as its intake last wrote it (JSON; kv key mailbox.<name>). */
  mailboxConnection(mailbox: string): string | undefined {
    return this.kv.mailbox(mailbox);
  }
  setMailboxConnection(mailbox: string, value: string) {
    this.kv.setMailbox(mailbox, value);
  }
  /** The message a file row came from, when it came from a mailbox. */
  mailSourceOf(fileId: number): MailSource | undefined {
    // Two lookups by key rather than a join: a file that came from no mail (most) costs one, and
    // neither is prepared again at each call (see NO_REPREPARE).
    const attachment = this.c
      .st(`SELECT message, name FROM mail_attachments WHERE file_id = ?`)
      .get(fileId) as { message: number; name: string } | undefined;
    if (!attachment) return undefined;
    const message = this.c
      .st(
        `SELECT mailbox, sender AS "from", subject, sent_at AS date, message_id FROM mail_messages WHERE id = ?`,
      )
      .get(attachment.message) as Omit<MailSource, 'attachment'> | undefined;
    return message && { ...message, attachment: attachment.name };
  }
}
