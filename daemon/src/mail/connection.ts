/**
 * A mailbox's IMAP connection: its client options with the secret read at each login, what a
 * refused login or another IMAP error says to the operator, which messages are still to take, and
 * `check`'s look at the mailbox.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { rootCertificates } from 'node:tls';
import { ImapFlow, type ImapFlowOptions, type SearchObject } from 'imapflow';
import type { MailboxConfig } from '../config/mail.ts';

/** A mailbox problem the operator must fix (credentials, folder, flag): its message says what and where. */
export class MailboxError extends Error {}

/** The file a mailbox's secret comes from (re-read at each login and whenever it changes), if any. */
export const credentialFile = (mailbox: MailboxConfig) => mailbox.oauth2_token_file ?? mailbox.password_file;

/** Compared to tell a changed secret from an unchanged one without keeping a second copy of it. */
export const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** The IMAP client options of a mailbox, its secret read now (files are re-read at every login). */
export async function imapOptions(mailbox: MailboxConfig, env: NodeJS.ProcessEnv): Promise<ImapFlowOptions> {
  const key = `mailboxes[${mailbox.name}]`;
  const readSecret = async (file: string, what: string) => {
    try {
      const value = (await readFile(file, 'utf8')).trim();
      if (!value) throw new MailboxError(`${key}.${what}: ${file} is empty`);
      return value;
    } catch (error) {
      if (error instanceof MailboxError) throw error;
      throw new MailboxError(
        `${key}.${what}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  };
  let auth: ImapFlowOptions['auth'];
  if (mailbox.oauth2_token_file)
    auth = {
      user: mailbox.user,
      accessToken: await readSecret(mailbox.oauth2_token_file, 'oauth2_token_file'),
    };
  else if (mailbox.password_file)
    auth = { user: mailbox.user, pass: await readSecret(mailbox.password_file, 'password_file') };
  else {
    const pass = env[mailbox.password_env!];
    if (!pass)
      throw new MailboxError(
        `${key}.password_env: the environment variable ${mailbox.password_env} is not set`,
      );
    auth = { user: mailbox.user, pass };
  }
  const ca = mailbox.ca_file
    ? [...rootCertificates, await readSecret(mailbox.ca_file, 'ca_file')]
    : undefined;
  const tls = mailbox.security === 'tls';
  return {
    host: mailbox.host,
    port: mailbox.port ?? (tls ? 993 : 143),
    secure: tls,
    // STARTTLS is required, never optional: the password must not cross the wire in clear.
    doSTARTTLS: tls ? undefined : true,
    tls: { ...(ca ? { ca } : {}), ...(isIP(mailbox.host) ? {} : { servername: mailbox.host }) },
    auth,
    logger: false,
    disableAutoIdle: !mailbox.idle,
    // imapflow starts IDLE after 15 s without a command (so a burst of commands is not broken up);
    // a message arriving in that time would wait for it. The intake's passes are done by then.
    autoIdleDelay: 1000,
    connectionTimeout: 30_000,
    greetingTimeout: 30_000,
  };
}

/** imapflow's login failure: the server's answer, with the command's tag ("2 NO ...") cut off. */
function loginAnswer(error: unknown): string | undefined {
  const e = error as { authenticationFailed?: boolean; response?: unknown };
  if (!e.authenticationFailed) return undefined;
  return typeof e.response === 'string' ? e.response.replace(/^\S+ (?=(NO|BAD) )/, '') : '';
}

/**
 * Whether the server refused the credential. imapflow marks every NO to a login, but RFC 5530's
 * [UNAVAILABLE] says the server could not check it now (its password database or token check
 * failed): a failure on its side that says nothing about the secret, retried like a dropped
 * connection and never reported as a refusal.
 */
export function isLoginRefusal(error: unknown): boolean {
  const said = loginAnswer(error);
  return said !== undefined && !/\[UNAVAILABLE\]/i.test(said);
}

/**
 * A readable line for an IMAP error: the server's own text when it gave one, never a credential.
 * With the mailbox, a refused login names the credential it used and what to do (loginRefusal).
 */
export function describeImapError(error: unknown, mailbox?: MailboxConfig): string {
  const e = error as {
    message?: string;
    responseText?: string;
    response?: unknown;
    code?: string;
    authenticationFailed?: boolean;
    oauthError?: { status?: unknown };
  };
  const said = loginAnswer(error);
  if (said !== undefined && !isLoginRefusal(error)) {
    const what = mailbox?.oauth2_token_file ? 'access token' : 'password';
    return `the server could not check the login now (${said}): a failure on its side, not a wrong ${what}; try again later (a running docex-sync logs in again by itself, with backoff)`;
  }
  if (said !== undefined) {
    const oauthStatus =
      e.oauthError?.status !== undefined ? `; OAuth2 status ${String(e.oauthError.status)}` : '';
    const server = said || oauthStatus ? ` (${said}${said ? oauthStatus : oauthStatus.slice(2)})` : '';
    return mailbox ? loginRefusal(mailbox, server) : `the server refused the login${server}`;
  }
  const text = e.responseText
    ? `${e.message ?? 'IMAP error'}: ${e.responseText}`
    : (e.message ?? String(error));
  return e.code && !text.includes(e.code) ? `${text} (${e.code})` : text;
}

/**
 * A refused login, said the same in status, the page, /healthz, the log and `check`: which secret
 * the server refused (the setting in use, where it comes from), why that happens and what to do,
 * and when docex-sync tries it (like the API key's refusal). `server` is the server's own words.
 */
function loginRefusal(mailbox: MailboxConfig, server: string): string {
  const key = `mailboxes[${mailbox.name}]`;
  if (mailbox.oauth2_token_file)
    return `the server refused the access token in ${mailbox.oauth2_token_file}${server}: it has expired or was revoked; the job that renews the token must write a new one there (${key}.oauth2_token_file); it is used as soon as the file changes`;
  if (mailbox.password_file)
    return `the server refused the password in ${mailbox.password_file}${server}: it is wrong or was changed; write the current password of ${mailbox.user} there (${key}.password_file); it is used as soon as the file changes`;
  // The environment is read once, when the process starts: only a new start sees a new value.
  return `the server refused the password in the environment variable ${mailbox.password_env}${server}: it is wrong or was changed; set ${mailbox.password_env} (${key}.password_env) to the current password of ${mailbox.user}, then start docex-sync run again (a running daemon keeps the environment it was started with)`;
}

/** What the server's answer to a search for not-yet-taken messages is, per after-action. */
export function pendingQuery(mailbox: MailboxConfig): SearchObject {
  if (mailbox.after.action !== 'flag') return { all: true };
  const system: Record<string, SearchObject> = {
    '\\seen': { seen: false },
    '\\flagged': { flagged: false },
    '\\answered': { answered: false },
  };
  return system[mailbox.after.flag.toLowerCase()] ?? { unKeyword: mailbox.after.flag };
}

/** `docex-sync check`: logs in, opens the folder and says what is there. Throws a MailboxError or the server's refusal. */
export async function checkMailbox(mailbox: MailboxConfig, env: NodeJS.ProcessEnv) {
  const client = new ImapFlow(await imapOptions(mailbox, env));
  client.on('error', () => undefined);
  try {
    await client.connect();
    const idle = client.capabilities.has('IDLE');
    const lock = await client.getMailboxLock(mailbox.folder).catch((error: unknown) => {
      throw new MailboxError(
        `mailboxes[${mailbox.name}].folder: cannot open "${mailbox.folder}": ${describeImapError(error)}`,
      );
    });
    try {
      const opened = client.mailbox || undefined;
      const pending = ((await client.search(pendingQuery(mailbox), { uid: true })) || []).length;
      return {
        folder: mailbox.folder,
        messages: opened?.exists ?? 0,
        pending,
        idle,
        uidvalidity: Number(opened?.uidValidity ?? 0),
      };
    } finally {
      lock.release();
    }
  } finally {
    if (client.usable) await client.logout().catch(() => client.close());
    else client.close();
  }
}

/** The after-action of a message taken whole: flagged or moved (`leave`: nothing). Idempotent. */
export async function afterAction(client: ImapFlow, mailbox: MailboxConfig, uid: number) {
  const range = String(uid);
  if (mailbox.after.action === 'flag')
    await client.messageFlagsAdd(range, [mailbox.after.flag], { uid: true });
  else if (mailbox.after.action === 'move')
    await client.messageMove(range, mailbox.after.folder, { uid: true });
}
