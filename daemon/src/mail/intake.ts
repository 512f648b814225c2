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
import { watch, type FSWatcher } from 'node:fs';
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { basename, dirname, join } from 'node:path';
import { ImapFlow } from 'imapflow';
import type { Logger } from 'pino';
import { removeStaleTemps } from '../common/files.ts';
import type { StateDb } from '../store/state.ts';
import type { MailboxConfig } from '../config/mail.ts';
import {
  afterAction,
  credentialFile,
  describeImapError,
  isLoginRefusal,
  digest,
  imapOptions,
  MailboxError,
  pendingQuery,
} from './connection.ts';
import { takeMessage } from './take.ts';
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

const STOP_GRACE_MS = 10_000;

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
      if (db.files.current(path)) continue;
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
    if (isLoginRefusal(error)) {
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
      for (const m of db.mail.mailPending(mailbox.name)) {
        if (this.stopping) return;
        if (m.uidvalidity === uidvalidity) await afterAction(client, mailbox, m.uid);
        db.mail.mailDone(m.id, this.now());
      }
      // Only UIDs above the highest one recorded: a mail left as it was (unflagged, still in the
      // folder) is never looked at again, so a poll costs what is new, not every mail ever left.
      // "N:*" matches the highest message even when N is above it (RFC 3501): hence the filter.
      const above = db.mail.mailHighestUid(mailbox.name, uidvalidity);
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
        const taken = await takeMessage({ ...this.deps, now: () => this.now() }, client, uidvalidity, uid);
        if (taken && taken.left === null) {
          await afterAction(client, this.deps.mailbox, uid);
          this.deps.db.mail.mailDone(taken.id, this.now());
        }
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
