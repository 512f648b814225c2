/**
 * The mail intake, the imperative shell around select.ts: one per mailbox. It logs in (IMAP over
 * TLS or STARTTLS), waits with IDLE when the server offers it (and polls every poll_interval_ms in
 * any case), and takes each new message exactly once:
 *
 *   1. its attachments are written to the spool (fsynced, renamed into place: never half a file);
 *   2. the message, its attachments and their pipeline file rows are committed in one transaction;
 *   3. only then is the message flagged or moved; then it is marked done.
 *
 * A crash before 2 leaves spool files no row holds (removed at the next start, the message taken
 * again); after 2 the message is recorded, so a restart only runs 3 again (flag and move are
 * idempotent). The state DB keys messages by mailbox + UIDVALIDITY + UID; a message whose
 * Message-ID was taken before (UIDVALIDITY changed, the mail copied back) is recorded as a
 * duplicate and not taken again. The same attachment bytes in another mail are the pipeline's
 * same-bytes rule.
 */
import { mkdir, readFile, readdir, rm, stat } from 'node:fs/promises';
import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { rootCertificates } from 'node:tls';
import { join } from 'node:path';
import { ImapFlow, type ImapFlowOptions, type SearchObject } from 'imapflow';
import type { Logger } from 'pino';
import { inside, removeStaleTemps, writeAtomic } from '../common/files.ts';
import type { NewFile, StateDb } from '../store/state.ts';
import { spoolFolder, type MailboxConfig } from './config.ts';
import { messageYield, ruleFor } from './select.ts';
import {
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
}

/** A mailbox problem the operator must fix (credentials, folder, flag): its message says what and where. */
export class MailboxError extends Error {}

const MAX_BACKOFF_MS = 60_000;
const STOP_GRACE_MS = 10_000;

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
    connectionTimeout: 30_000,
    greetingTimeout: 30_000,
  };
}

/** A readable line for an IMAP error: the server's own text when it gave one, never a credential. */
export function describeImapError(error: unknown): string {
  const e = error as {
    message?: string;
    responseText?: string;
    response?: unknown;
    code?: string;
    authenticationFailed?: boolean;
  };
  if (e.authenticationFailed)
    return `the server refused the login${typeof e.response === 'string' && e.response ? ` (${e.response})` : ''}`;
  const text = e.responseText
    ? `${e.message ?? 'IMAP error'}: ${e.responseText}`
    : (e.message ?? String(error));
  return e.code && !text.includes(e.code) ? `${text} (${e.code})` : text;
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

  constructor(deps: IntakeDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
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
    this.loop ??= this.run();
  }

  /** Lets the message being taken finish (up to STOP_GRACE_MS, then the connection is cut), then logs out. */
  async stop() {
    this.stopping = true;
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

  private failed(error: unknown) {
    const message = describeImapError(error);
    const { log, mailbox } = this.deps;
    this.changed({ connected: false, last_error: { at: new Date(this.now()).toISOString(), message } });
    if ((error as { authenticationFailed?: boolean }).authenticationFailed) {
      if (this.state.login_refused === null)
        log.error(
          { mailbox: mailbox.name, user: mailbox.user, host: mailbox.host, reason: message },
          'mailbox: the server refused the login; check the password or token; retrying',
        );
      this.changed({ login_refused: message });
    } else log.error({ mailbox: mailbox.name, err: message }, 'mailbox: connection failed; retrying');
  }

  private async run() {
    let backoff = 1000;
    while (!this.stopping) {
      try {
        await this.session();
        backoff = 1000;
      } catch (error) {
        if (this.stopping) break;
        this.failed(error);
      }
      if (this.stopping) break;
      await this.wait(backoff);
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
  }

  private async session() {
    const { mailbox, log } = this.deps;
    const client = new ImapFlow(await imapOptions(mailbox, this.deps.env ?? process.env));
    this.client = client;
    let lost: unknown;
    client.on('error', (error: unknown) => (lost = error));
    client.on('exists', () => this.kick?.());
    client.on('close', () => this.kick?.());
    try {
      await client.connect();
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
      while (!this.stopping && client.usable) {
        await this.pass(client);
        this.changed({ last_seen: new Date(this.now()).toISOString() });
        if (this.stopping || !client.usable) break;
        await this.wait(mailbox.poll_interval_ms);
      }
      if (!this.stopping && lost) throw lost;
    } finally {
      this.changed({ connected: false });
      if (this.client === client) this.client = undefined;
      if (client.usable) await client.logout().catch(() => client.close());
      else client.close();
    }
  }

  /** One look at the folder: finish recorded messages, then take the new ones, oldest first. */
  private async pass(client: ImapFlow) {
    const { mailbox, db } = this.deps;
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
      const uids = ((await client.search(pendingQuery(mailbox), { uid: true })) || []).sort((a, b) => a - b);
      const known = db.mailKnownUids(mailbox.name, uidvalidity, uids);
      for (const uid of uids) {
        if (this.stopping) return;
        if (!known.has(uid)) await this.take(client, uidvalidity, uid);
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
    const record = (
      outcome: 'taken' | 'duplicate' | 'skipped',
      reason: string | null,
      skipped: Array<{ name: string; reason: string }>,
      files: Array<NewFile & { name: string }> = [],
    ) => db.recordMail({ ...base, outcome, reason, skipped }, files, now);

    let id: number;
    const earlier = envelopeId ? db.mailTakenWithMessageId(mailbox.name, envelopeId) : undefined;
    if (earlier) {
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
      id = record('skipped', reason, [{ name: '(message)', reason }]);
    } else {
      const full = await client.fetchOne(String(uid), { uid: true, source: true }, { uid: true });
      if (!full || !full.source) return;
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
        id = record('skipped', choice.skip, [
          ...parsed.skipped,
          ...parsed.taken.map((t) => ({ name: t.name, reason: choice.skip })),
        ]);
      } else if (parsed.taken.length === 0) {
        id = record(
          'skipped',
          parsed.skipped.length ? 'no attachment to take' : 'no attachments',
          parsed.skipped,
        );
      } else {
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
    await this.after(client, uid);
    db.mailDone(id, this.now());
  }
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
