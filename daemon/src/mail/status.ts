/**
 * What status, the page, /api/status and /healthz say about each mailbox, read from the state DB:
 * the intake writes its connection state there, so `docex-sync status` shows
 * it without a running daemon. No credential is ever part of it.
 */
import type { StateDb } from '../store/state.ts';
import type { MailboxConfig } from '../config/mail.ts';

/** The connection part, kept by the running intake. */
export interface MailboxConnection {
  connected: boolean;
  /** Whether the server offered IDLE on the last connection (null before the first). */
  idle: boolean | null;
  /** The last time the folder was looked at completely. */
  last_seen: string | null;
  /** Set while the server refuses the login (this degrades /healthz). */
  login_refused: string | null;
  last_error: { at: string; message: string } | null;
  /** When the intake last wrote this (a daemon that died leaves it as it was). */
  updated_at: string | null;
}

export interface MailboxStatus extends MailboxConnection {
  name: string;
  host: string;
  user: string;
  folder: string;
  /** Messages by outcome: taken, duplicate (Message-ID seen before), skipped. */
  messages: Record<string, number>;
  attachments: number;
  /** The last attachments (or messages) not taken, with the reason. */
  skipped: Array<{ subject: string; from: string; name: string; reason: string }>;
  /**
   * Mail not taken whole, so neither flagged nor moved (null with `after: leave`, which leaves all):
   * what that means here ("left in INBOX without $DocexTaken"), how many, the last ones with why.
   */
  left: {
    where: string;
    count: number;
    last: Array<{ subject: string; from: string; reason: string }>;
  } | null;
}

export const NOT_CONNECTED: MailboxConnection = {
  connected: false,
  idle: null,
  last_seen: null,
  login_refused: null,
  last_error: null,
  updated_at: null,
};

export function saveConnection(db: StateDb, name: string, state: MailboxConnection) {
  db.mail.setMailboxConnection(name, JSON.stringify(state));
}

/** What "left as it was" means for a mailbox's after-action, in status and on the page. */
export function leftWhere(mailbox: MailboxConfig): string | null {
  const { after, folder } = mailbox;
  if (after.action === 'move') return `left in ${folder}, not moved to ${after.folder}`;
  if (after.action === 'flag') return `left in ${folder} without ${after.flag}`;
  return null;
}

export function mailboxStatus(db: StateDb, mailbox: MailboxConfig): MailboxStatus {
  const saved = db.mail.mailboxConnection(mailbox.name);
  const connection = saved ? (JSON.parse(saved) as MailboxConnection) : NOT_CONNECTED;
  const { messages, attachments, left } = db.mail.mailCounts(mailbox.name);
  const where = leftWhere(mailbox);
  return {
    name: mailbox.name,
    host: mailbox.host,
    user: mailbox.user,
    folder: mailbox.folder,
    ...connection,
    messages,
    attachments,
    skipped: db.mail
      .mailSkips(mailbox.name)
      .flatMap((m) =>
        (JSON.parse(m.skipped) as Array<{ name: string; reason: string }>).map((s) => ({
          subject: m.subject,
          from: m.sender,
          name: s.name,
          reason: s.reason,
        })),
      )
      .slice(0, 10),
    left: where
      ? {
          where,
          count: left,
          last: (left ? db.mail.mailLeft(mailbox.name) : []).map((m) => ({
            subject: m.subject,
            from: m.sender,
            reason: m.left_reason!,
          })),
        }
      : null,
  };
}

/** A refused login as /healthz, status, the page and the log say it. */
export const cannotLogIn = (m: Pick<MailboxStatus, 'name' | 'user' | 'host'>, refusal: string) =>
  `mailbox ${m.name} cannot log in (${m.user} at ${m.host}): ${refusal}`;

/** /healthz reasons: a mailbox whose login is refused cannot take mail. */
export const mailboxHealth = (statuses: MailboxStatus[]) =>
  statuses.flatMap((m) => (m.login_refused ? [cannotLogIn(m, m.login_refused)] : []));
