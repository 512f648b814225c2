/**
 * The mail intake, the imperative shell around select.ts: one per mailbox. It logs in (IMAP over
 * TLS or STARTTLS), waits with IDLE when the server offers it (and polls every poll_interval_ms in
 * any case), and takes each new message exactly once:
 *
 *   1. its attachments are written to the spool (fsynced, renamed into place: never half a file);
 *   2. the message, its attachments and their pipeline file rows are committed in one transaction;
 *   3. only then is the message flagged or moved; then it is marked done. A message not taken
 *      whole (a rule skips it, no rule matches, an attachment it asks for is refused) is left as
 *      it was, and marked done in step 2.
 *
 * A crash before 2 leaves spool files no row holds (removed at the next start, the message taken
 * again); after 2 the message is recorded, so a restart only runs 3 again (flag and move are
 * idempotent). The state DB keys messages by mailbox + UIDVALIDITY + UID; a message whose
 * Message-ID was taken before (UIDVALIDITY changed, the mail copied back) is recorded as a
 * duplicate and not taken again. The same attachment bytes in another mail are the pipeline's
 * same-bytes rule. A poll asks the server only for UIDs above the highest one recorded, so mail
 * left unflagged is never taken twice and does not make later polls longer.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { rootCertificates } from 'node:tls';
import { basename, dirname, join } from 'node:path';
import { ImapFlow, type ImapFlowOptions, type SearchObject } from 'imapflow';
import type { Logger } from 'pino';
import { inside, removeStaleTemps, writeAtomic } from '../common/files.ts';
import type { NewFile, StateDb } from '../store/state.ts';
import { spoolFolder, type MailboxConfig } from '../config/mail.ts';
import { messageYield, ruleFor, type SkippedPart } from './select.ts';
import {
  cannotLogIn,
  mailboxStatus,
  NOT_CONNECTED,
  saveConnection,
  type MailboxConnection,
  type MailboxStatus,
} from './status.ts';

export interface IntakeDeps {
  mailbox: MailboxConfig;
  db: StateDb;
  log: Logger;
  /** Tells the pipeline new file rows are waiting. */
  wake(): void;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
  retry?: Partial<MailboxRetry>;
}

/** How soon a mailbox logs in again (docs/daemon.md, "Mailboxes"). */
export interface MailboxRetry {
  /** After a refused or failed login: this, doubled per failure up to maxMs. */
  firstMs: number;
  maxMs: number;
  /** After the server ended an established session (a token that expired, a restart). */
  reconnectMs: number;
}

const RETRY: MailboxRetry = { firstMs: 1000, maxMs: 60_000, reconnectMs: 1000 };

/** A mailbox problem the operator must fix (credentials, folder, flag): its message says what and where. */
export class MailboxError extends Error {}

const STOP_GRACE_MS = 10_000;

/** The file a mailbox's secret comes from (re-read at each login and whenever it changes), if any. */
const credentialFile = (mailbox: MailboxConfig) => mailbox.oauth2_token_file ?? mailbox.password_file;

/** Compared to tell a changed secret from an unchanged one without keeping a second copy of it. */
const digest = (secret: string) => createHash('sha256').update(secret).digest('hex');

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
  if (e.authenticationFailed) {
    // imapflow's response starts with the command's tag ("2 NO ..."), which tells a reader nothing.
    const said = typeof e.response === 'string' ? e.response.replace(/^\S+ (?=(NO|BAD) )/, '') : '';
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
function pendingQuery(mailbox: MailboxConfig): SearchObject {
  if (mailbox.after.action !== 'flag') return { all: true };
  const system: Record<string, SearchObject> = {
    '\\seen': { seen: false },
    '\\flagged': { flagged: false },
    '\\answered': { answered: false },
  };
  return system[mailbox.after.flag.toLowerCase()] ?? { unKeyword: mailbox.after.flag };
}

export class MailIntake {
  private readonly deps: IntakeDeps;
  private readonly now: () => number;
  private stopping = false;
  private loop: Promise<void> | undefined;
  private client: ImapFlow | undefined;
  /** Resolves the current wait (a new message, a stop, the token file changed). */
  private kick: (() => void) | undefined;
  private state: MailboxConnection = { ...NOT_CONNECTED };
  private readonly retry: MailboxRetry;
  /** The digest of the secret the current (or last) login used. */
  private loginDigest: string | undefined;
  /** The credential file now holds another secret than the login used: log in again with it. */
  private credentialsChanged = false;
  private fileWatch: FSWatcher | undefined;
  private checking: Promise<void> | undefined;
  private checkAgain = false;

  constructor(deps: IntakeDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.retry = { ...RETRY, ...deps.retry };
  }

  get name() {
    return this.deps.mailbox.name;
  }

  /** Removes what a crash left in the spool: temp files, and files no row holds (their message is taken again). */
  async cleanSpool(): Promise<number> {
    const { db, mailbox } = this.deps;
    let removed = await removeStaleTemps(mailbox.spool_dir!);
    const entries = await readdir(mailbox.spool_dir!, { withFileTypes: true, recursive: true }).catch(
      () => [],
    );
    for (const e of entries) {
      if (!e.isFile()) continue;
      const path = join(e.parentPath, e.name);
      if (db.current(path)) continue;
      await rm(path, { force: true });
      removed++;
    }
    return removed;
  }

  start() {
    this.watchCredentialFile();
    this.loop ??= this.run();
  }

  /**
   * Watches the folder of the credential file, not the file: a file replaced by a rename (the safe
   * way to rewrite it, and how Kubernetes swaps secrets) is a new inode a watch on the old one never
   * sees. Any event there re-reads the file; the poll re-reads it too, where events are not
   * delivered (network file systems).
   */
  private watchCredentialFile() {
    const file = credentialFile(this.deps.mailbox);
    if (!file || this.fileWatch) return;
    try {
      this.fileWatch = watch(dirname(file), { persistent: false }, () => void this.checkCredentialFile());
      this.fileWatch.on('error', () => this.unwatchCredentialFile());
    } catch (error) {
      this.deps.log.warn(
        { mailbox: this.name, file, err: (error as NodeJS.ErrnoException).code },
        'mailbox: cannot watch the folder of the credential file; a new secret is read at the next poll or login',
      );
    }
  }

  private unwatchCredentialFile() {
    this.fileWatch?.close();
    this.fileWatch = undefined;
  }

  /** Re-reads the credential file; a secret other than the login's makes the intake log in again at once. */
  checkCredentialFile(): Promise<void> {
    if (this.checking) {
      this.checkAgain = true;
      return this.checking;
    }
    this.checking = (async () => {
      do {
        this.checkAgain = false;
        await this.compareCredentialFile();
      } while (this.checkAgain);
    })().finally(() => (this.checking = undefined));
    return this.checking;
  }

  private async compareCredentialFile() {
    const file = credentialFile(this.deps.mailbox);
    if (!file || this.credentialsChanged || this.stopping) return;
    // Empty or missing while its writer is at work (truncated, not yet written; renamed away): the
    // next event tells; the next login says what is wrong if it stays so.
    const secret = await readFile(file, 'utf8').then(
      (text) => text.trim(),
      () => '',
    );
    if (!secret || digest(secret) === this.loginDigest) return;
    // Before any login (the first one could not read the file) every readable secret is news.
    this.credentialsChanged = true;
    this.deps.log.info(
      { mailbox: this.name, file: basename(file) },
      'mailbox: the credential file changed; logging in again with the new secret',
    );
    this.kick?.();
  }

  /** Lets the message being taken finish (up to STOP_GRACE_MS, then the connection is cut), then logs out. */
  async stop() {
    this.stopping = true;
    this.unwatchCredentialFile();
    this.kick?.();
    const grace = new AbortController();
    const finished = await Promise.race([
      (this.loop ?? Promise.resolve()).then(() => true),
      delay(STOP_GRACE_MS, false, { signal: grace.signal }).catch(() => false),
    ]);
    grace.abort();
    if (!finished) {
      this.client?.close();
      await this.loop;
    }
  }

  status(): MailboxStatus {
    return mailboxStatus(this.deps.db, this.deps.mailbox);
  }

  /** Keeps the connection state in the state DB, where every status reader finds it. */
  private changed(changes: Partial<MailboxConnection>) {
    this.state = { ...this.state, ...changes, updated_at: new Date(this.now()).toISOString() };
    saveConnection(this.deps.db, this.deps.mailbox.name, this.state);
  }

  /** Wakes a wait early (used when the token file changed, and by tests). */
  nudge() {
    this.kick?.();
  }

  private wait(ms: number) {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.kick === done) this.kick = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.kick = done;
    });
  }

  /** `fresh`: the secret is another than the one refused before, so a refusal is logged again. */
  private failed(error: unknown, fresh: boolean) {
    const { log, mailbox } = this.deps;
    const message = describeImapError(error, mailbox);
    this.changed({ connected: false, last_error: { at: new Date(this.now()).toISOString(), message } });
    if ((error as { authenticationFailed?: boolean }).authenticationFailed) {
      // In the words status and /healthz use; once per secret, not at every retry.
      if (this.state.login_refused === null || fresh)
        log.error(
          { mailbox: mailbox.name, user: mailbox.user, host: mailbox.host },
          cannotLogIn(mailbox, message),
        );
      this.changed({ login_refused: message });
    } else log.error({ mailbox: mailbox.name, err: message }, 'mailbox: connection failed; retrying');
  }

  /**
   * Logs in again and again until stopped: at once after the credential file changed, reconnectMs
   * after the server ended a session, with backoff after failed logins (a changed file cuts it short).
   */
  private async run() {
    let failures = 0;
    let refusedDigest: string | undefined;
    while (!this.stopping) {
      let pause: number;
      const established = { value: false };
      try {
        await this.session(established);
        failures = 0;
        pause = this.retry.reconnectMs;
      } catch (error) {
        if (this.stopping) break;
        this.failed(error, this.loginDigest !== refusedDigest);
        refusedDigest = this.loginDigest;
        if (established.value) {
          failures = 0;
          pause = this.retry.reconnectMs;
        } else pause = Math.min(this.retry.firstMs * 2 ** failures++, this.retry.maxMs);
      }
      if (this.stopping) break;
      if (!this.credentialsChanged) await this.wait(pause);
    }
  }

  private async session(established: { value: boolean }) {
    const { mailbox, log } = this.deps;
    const options = await imapOptions(mailbox, this.deps.env ?? process.env);
    const auth = options.auth as { pass?: string; accessToken?: string };
    this.loginDigest = digest(auth.accessToken ?? auth.pass ?? '');
    this.credentialsChanged = false;
    // A change that landed while the file was read (or while no login was under way) is seen now.
    void this.checkCredentialFile();
    const client = new ImapFlow(options);
    this.client = client;
    let lost: unknown;
    client.on('error', (error: unknown) => (lost = error));
    client.on('exists', () => this.kick?.());
    client.on('close', () => this.kick?.());
    try {
      await client.connect();
      established.value = true;
      this.changed({ connected: true, login_refused: null, idle: client.capabilities.has('IDLE') });
      log.info(
        {
          mailbox: mailbox.name,
          host: mailbox.host,
          folder: mailbox.folder,
          idle: this.state.idle && mailbox.idle,
        },
        'mailbox connected',
      );
      if (mailbox.after.action === 'move')
        await client.mailboxCreate(mailbox.after.folder).catch(() => undefined);
      while (!this.stopping && client.usable && !this.credentialsChanged) {
        await this.pass(client);
        this.changed({ last_seen: new Date(this.now()).toISOString() });
        if (this.stopping || !client.usable || this.credentialsChanged) break;
        await this.wait(mailbox.poll_interval_ms);
        await this.checkCredentialFile();
      }
      if (!this.stopping && !this.credentialsChanged && lost) throw lost;
    } finally {
      this.changed({ connected: false });
      if (this.client === client) this.client = undefined;
      if (client.usable) await client.logout().catch(() => client.close());
      else client.close();
    }
  }

  /** One look at the folder: finish recorded messages, then take the new ones, oldest first. */
  private async pass(client: ImapFlow) {
    const { mailbox, db, log } = this.deps;
    const lock = await client.getMailboxLock(mailbox.folder).catch((error: unknown) => {
      throw new MailboxError(
        `mailboxes[${mailbox.name}].folder: cannot open "${mailbox.folder}": ${describeImapError(error)}`,
      );
    });
    try {
      const opened = client.mailbox;
      if (!opened)
        throw new MailboxError(`mailboxes[${mailbox.name}].folder: "${mailbox.folder}" is not open`);
      const uidvalidity = Number(opened.uidValidity);
      if (mailbox.after.action === 'flag') this.checkFlag(opened.permanentFlags);
      for (const m of db.mailPending(mailbox.name)) {
        if (this.stopping) return;
        if (m.uidvalidity === uidvalidity) await this.after(client, m.uid);
        db.mailDone(m.id, this.now());
      }
      // Only UIDs above the highest one recorded: a mail left as it was (unflagged, still in the
      // folder) is never looked at again, so a poll costs what is new, not every mail ever left.
      // "N:*" matches the highest message even when N is above it (RFC 3501): hence the filter.
      const above = db.mailHighestUid(mailbox.name, uidvalidity);
      const query = above ? { ...pendingQuery(mailbox), uid: `${above + 1}:*` } : pendingQuery(mailbox);
      const uids = ((await client.search(query, { uid: true })) || [])
        .filter((uid) => uid > above)
        .sort((a, b) => a - b);
      log.debug(
        { mailbox: mailbox.name, uidvalidity, above_uid: above, found: uids.length },
        'mailbox: looked for new mail',
      );
      for (const uid of uids) {
        if (this.stopping) return;
        await this.take(client, uidvalidity, uid);
      }
    } finally {
      lock.release();
    }
  }

  /** imapflow drops a flag the server would not keep without a word: say it instead. */
  private checkFlag(permanent: Set<string> | undefined) {
    const { mailbox } = this.deps;
    if (mailbox.after.action !== 'flag' || !permanent) return;
    const flag = mailbox.after.flag;
    const kept = permanent.has(flag) || (!flag.startsWith('\\') && permanent.has('\\*'));
    if (!kept)
      throw new MailboxError(
        `mailboxes[${mailbox.name}].after.flag: the server does not keep "${flag}" on messages in ${mailbox.folder} (it keeps ${[...permanent].join(' ') || 'no flags'}); use after: { action: flag, flag: '\\\\Seen' } or after: { action: move, folder: ... }`,
      );
  }

  private async after(client: ImapFlow, uid: number) {
    const { mailbox } = this.deps;
    const range = String(uid);
    if (mailbox.after.action === 'flag')
      await client.messageFlagsAdd(range, [mailbox.after.flag], { uid: true });
    else if (mailbox.after.action === 'move')
      await client.messageMove(range, mailbox.after.folder, { uid: true });
  }

  private async take(client: ImapFlow, uidvalidity: number, uid: number) {
    const { mailbox, db, log } = this.deps;
    const now = this.now();
    const head = await client.fetchOne(String(uid), { uid: true, size: true, envelope: true }, { uid: true });
    if (!head) return; // expunged meanwhile
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
    ) => db.recordMail({ ...base, outcome, reason, skipped, left_reason: left }, files, now);

    let id: number;
    const earlier = envelopeId ? db.mailTakenWithMessageId(mailbox.name, envelopeId) : undefined;
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
      if (!full || !full.source) return; // expunged meanwhile
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
        this.deps.wake();
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
      return;
    }
    await this.after(client, uid);
    db.mailDone(id, this.now());
  }
}

/** Why a mail some of whose attachments were taken is still left: the parts it asked for that were refused. */
function refusals(skipped: SkippedPart[]): string | null {
  const refused = skipped.filter((s) => s.refused);
  return refused.length ? refused.map((s) => `${s.name} was not taken (${s.reason})`).join('; ') : null;
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

/**
 * `run`: one intake per mailbox, after the spool is cleaned of what a crash left (before any intake
 * writes to it). The folders results go to are made like a watch's.
 */
export async function startMailboxes(deps: Omit<IntakeDeps, 'mailbox'> & { mailboxes: MailboxConfig[] }) {
  const intakes: MailIntake[] = [];
  for (const mailbox of deps.mailboxes) {
    for (const dir of [mailbox.spool_dir!, mailbox.output, mailbox.failed_dir, mailbox.processed_dir])
      if (dir) await mkdir(dir, { recursive: true });
    const intake = new MailIntake({ ...deps, mailbox });
    const removed = await intake.cleanSpool();
    if (removed)
      deps.log.info(
        { mailbox: mailbox.name, files: removed },
        'mailbox: removed spool files of mail not recorded before a crash; that mail is taken again',
      );
    intakes.push(intake);
  }
  for (const intake of intakes) intake.start();
  return intakes;
}
