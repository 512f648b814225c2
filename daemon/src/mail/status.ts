/**
 * What status, the page, /api/status and /healthz say about each mailbox, read from the state DB:
 * the intake writes its connection state there, so `docex-sync status` shows
 * it without a running daemon. No credential is ever part of it.
 */
import type { StateDb } from '../store/state.ts';
import type { MailboxConfig } from './config.ts';

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
  db.setMailboxConnection(name, JSON.stringify(state));
}

export function mailboxStatus(db: StateDb, mailbox: MailboxConfig): MailboxStatus {
  const saved = db.mailboxConnection(mailbox.name);
  const connection = saved ? (JSON.parse(saved) as MailboxConnection) : NOT_CONNECTED;
  return {
    name: mailbox.name,
    host: mailbox.host,
    user: mailbox.user,
    folder: mailbox.folder,
    ...connection,
    ...db.mailCounts(mailbox.name),
    skipped: db
      .mailSkips(mailbox.name)
      .flatMap((m) =>
        (JSON.parse(m.skipped) as Array<{ name: string; reason: string }>).map((s) => ({
          subject: m.subject,
          from: m.sender,
          ...s,
        })),
      )
      .slice(0, 10),
  };
}

/** /healthz reasons: a mailbox whose login is refused cannot take mail. */
export const mailboxHealth = (statuses: MailboxStatus[]) =>
  statuses
    .filter((m) => m.login_refused)
    .map((m) => `mailbox ${m.name} cannot log in (${m.user} at ${m.host}): ${m.login_refused}`);
