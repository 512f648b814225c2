/**
 * A real IMAP server for tests: Debian's dovecot (installed by the set-up when missing), as a
 * throw-away instance with its own config folder, maildirs, users from a passwd file, a test CA made
 * by openssl, and two free loopback ports (implicit TLS and STARTTLS). Started in the foreground
 * (`dovecot -F -c CONF`) and stopped after. Works as root (mail stored as the `dovecot` user, which
 * the package creates) and as any other user (everything runs as that user).
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { tmpdir, userInfo } from 'node:os';
import { deflateSync } from 'node:zlib';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { ensureDebianPackage, freePort, startProcess, until, type Service } from '../e2e/services.ts';
import { makePki } from './network.ts';

export interface MailUser {
  user: string;
  password: string;
}

export interface Dovecot {
  host: '127.0.0.1';
  /** Implicit TLS (IMAPS). */
  tlsPort: number;
  /** Plain IMAP that requires STARTTLS before login. */
  starttlsPort: number;
  /** The test CA's certificate (PEM) that signed the server's. */
  ca: string;
  caFile: string;
  dir: string;
  users: MailUser[];
  output(): string;
  /** A logged-in client of `user` (trusting the test CA). */
  client(user?: MailUser): Promise<ImapFlow>;
  /** Places a raw message in a folder with IMAP APPEND (creating the folder); returns its UID. */
  append(
    raw: string | Buffer,
    options?: { user?: MailUser; folder?: string; flags?: string[] },
  ): Promise<number>;
  /** Ends every session of `user` at once, as a server does when a login's token expires (`doveadm kick`). */
  kick(user?: string): void;
  stop(): Promise<void>;
}

export interface DovecotOptions {
  users?: MailUser[];
  /** false: the server does not announce IDLE (clients must poll). */
  idle?: boolean;
  /**
   * Bearer tokens (XOAUTH2, and OAUTHBEARER when asked) checked by dovecot's oauth2 passdb against
   * this RFC 7662 token-introspection URL (POST token=...; the answer's `active` must be true and
   * its `username` names the user). Passwords keep working for the users above.
   */
  oauth2?: { introspectionUrl: string; oauthbearer?: boolean };
}

/** Debian installs it in /usr/sbin, which a non-root PATH often leaves out. */
const DOVECOT = '/usr/sbin/dovecot';
const DOVEADM = '/usr/bin/doveadm';

/** Whether the server greets over TLS on `port` (so it is ready for logins). */
const greets = (port: number, ca: string) =>
  new Promise<true | undefined>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
    const done = (ready: true | undefined) => {
      socket.destroy();
      resolve(ready);
    };
    socket.setTimeout(5000, () => done(undefined));
    socket.once('data', (d: Buffer) => done(d.toString().startsWith('* OK') ? true : undefined));
    socket.once('error', () => done(undefined));
  });

/** Installs Debian's dovecot when missing (the system project's global set-up does it before any test). */
export function ensureDovecotPackage() {
  ensureDebianPackage('dovecot-imapd', () => existsSync(DOVECOT));
}

export async function startDovecot(options: DovecotOptions = {}): Promise<Dovecot> {
  ensureDovecotPackage();
  const users = options.users ?? [{ user: 'invoices', password: 'mail-secret-pw' }];
  const dir = await mkdtemp(join(tmpdir(), 'docex-dovecot-'));
  // Mail processes never run as root: as root, mail belongs to the package's `dovecot` user.
  const me = userInfo();
  const root = me.uid === 0;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'dovecot'], { encoding: 'utf8' }).trim());
  const mailUid = root ? id('-u') : me.uid;
  const mailGid = root ? id('-g') : me.gid;
  await chmod(dir, 0o755);
  await mkdir(join(dir, 'home'));
  await chown(join(dir, 'home'), mailUid, mailGid);
  const pki = makePki(dir, { dns: ['localhost'], ips: ['127.0.0.1'] });
  const [tlsPort, starttlsPort] = [await freePort(), await freePort()];
  await writeFile(join(dir, 'users'), users.map((u) => `${u.user}:{PLAIN}${u.password}::::::\n`).join(''));
  const ownUser = root
    ? []
    : [`default_internal_user = ${me.username}`, `default_login_user = ${me.username}`];
  const config = [
    `base_dir = ${join(dir, 'run')}`,
    `state_dir = ${join(dir, 'state')}`,
    `instance_name = docex-dovecot-${tlsPort}`,
    'log_path = /dev/stderr',
    'protocols = imap',
    'listen = 127.0.0.1',
    ...ownUser,
    'ssl = required',
    `ssl_cert = <${pki.serverFiles.cert}`,
    `ssl_key = <${pki.serverFiles.key}`,
    'ssl_min_protocol = TLSv1.2',
    `auth_mechanisms = plain login xoauth2${options.oauth2?.oauthbearer ? ' oauthbearer' : ''}`,
    `passdb {\n  driver = passwd-file\n  mechanisms = plain login\n  args = scheme=PLAIN username_format=%u ${join(dir, 'users')}\n}`,
    ...(options.oauth2
      ? [
          `passdb {\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = ${join(dir, 'oauth2.conf')}\n}`,
        ]
      : []),
    `userdb {\n  driver = static\n  args = uid=${mailUid} gid=${mailGid} home=${join(dir, 'home')}/%u\n}`,
    `first_valid_uid = ${mailUid}`,
    'mail_location = maildir:~/Maildir',
    // Fixed capabilities without IDLE make the server one that must be polled.
    ...(options.idle === false
      ? ['imap_capability = IMAP4rev1 LITERAL+ SASL-IR LOGIN-REFERRALS ID ENABLE UIDPLUS MOVE NAMESPACE']
      : []),
    `service imap-login {\n  chroot =\n  inet_listener imap {\n    address = 127.0.0.1\n    port = ${starttlsPort}\n  }\n  inet_listener imaps {\n    address = 127.0.0.1\n    port = ${tlsPort}\n    ssl = yes\n  }\n}`,
    'service anvil {\n  chroot =\n}',
    'service imap {\n  process_limit = 32\n}',
    '',
  ].join('\n');
  const conf = join(dir, 'dovecot.conf');
  await writeFile(conf, config);
  if (options.oauth2)
    await writeFile(
      join(dir, 'oauth2.conf'),
      [
        'introspection_mode = post',
        `introspection_url = ${options.oauth2.introspectionUrl}`,
        'force_introspection = yes',
        'username_attribute = username',
        'active_attribute = active',
        'active_value = true',
        '',
      ].join('\n'),
    );
  const ca = await readFile(join(dir, 'ca.pem'), 'utf8');
  const server: Service = startProcess(DOVECOT, ['-F', '-c', conf]);
  const exited = () => server.process.exitCode !== null || server.process.signalCode !== null;
  try {
    await until(
      'dovecot to greet on its TLS port',
      async () => {
        if (exited()) throw new Error(`dovecot exited at start:\n${server.output()}`);
        return greets(tlsPort, ca);
      },
      30_000,
      server.output,
    );
  } catch (error) {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  const client = async (user: MailUser = users[0]!) => {
    const imap = new ImapFlow({
      host: '127.0.0.1',
      port: tlsPort,
      secure: true,
      tls: { ca, servername: 'localhost' },
      auth: { user: user.user, pass: user.password },
      logger: false,
    });
    await imap.connect();
    return imap;
  };
  return {
    host: '127.0.0.1',
    tlsPort,
    starttlsPort,
    ca,
    caFile: join(dir, 'ca.pem'),
    dir,
    users,
    output: server.output,
    client,
    async append(raw, { user, folder = 'INBOX', flags = [] } = {}) {
      const imap = await client(user);
      try {
        if (folder !== 'INBOX') await imap.mailboxCreate(folder).catch(() => undefined);
        const appended = await imap.append(folder, raw, flags);
        if (!appended || appended.uid === undefined)
          throw new Error(`APPEND to ${folder} gave no UID (is UIDPLUS missing?)`);
        return appended.uid;
      } finally {
        await imap.logout();
      }
    },
    kick(user = users[0]!.user) {
      execFileSync(DOVEADM, ['-c', conf, 'kick', user], { stdio: 'pipe' });
    },
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A MIME message with attachments, as a mail client would send it (base64 parts). */
export function mimeMessage(m: {
  from?: string;
  to?: string;
  subject?: string;
  messageId?: string;
  date?: Date;
  text?: string;
  attachments?: Array<{
    name?: string;
    type?: string;
    content: Buffer | string;
    inline?: boolean;
    rawHeaders?: string;
  }>;
}): string {
  const boundary = `b-${Math.random().toString(36).slice(2)}`;
  const head = [
    `From: ${m.from ?? 'Supplier <billing@supplier.test>'}`,
    `To: ${m.to ?? 'invoices@company.test'}`,
    `Subject: ${m.subject ?? 'Invoice'}`,
    `Date: ${(m.date ?? new Date('2026-11-20T09:30:00Z')).toUTCString()}`,
    `Message-ID: ${m.messageId ?? `<${Math.random().toString(36).slice(2)}@supplier.test>`}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
  ];
  const parts = [
    `Content-Type: text/plain; charset=utf-8\r\n\r\n${m.text ?? 'Please find the invoice attached.'}\r\n`,
    ...(m.attachments ?? []).map((a) => {
      const headers =
        a.rawHeaders ??
        [
          `Content-Type: ${a.type ?? 'application/pdf'}${a.name !== undefined ? `; name="${a.name}"` : ''}`,
          `Content-Disposition: ${a.inline ? 'inline' : 'attachment'}${a.name !== undefined ? `; filename="${a.name}"` : ''}`,
        ].join('\r\n');
      const body = Buffer.from(a.content).toString('base64').replace(/.{76}/g, '$&\r\n');
      return `${headers}\r\nContent-Transfer-Encoding: base64\r\n\r\n${body}\r\n`;
    }),
  ];
  return `${head.join('\r\n')}\r\n\r\n${parts.map((p) => `--${boundary}\r\n${p}`).join('')}--${boundary}--\r\n`;
}

/** A small text PDF the emulator reads (`Label: value` lines), like a scanned invoice's text layer. */
export function invoicePdf(number: string, total = '10,00'): Buffer {
  const lines = [`Invoice number: ${number}`, `Total: ${total}`, 'Widget | 4,00', 'Gadget | 6,00'];
  const content = deflateSync(Buffer.from(['BT', ...lines.map((l) => `(${l}) Tj T*`), 'ET'].join('\n')));
  const head = Buffer.from(
    `%PDF-1.4\n1 0 obj\n<< /Length ${content.length} /Filter /FlateDecode >>\nstream\n`,
  );
  return Buffer.concat([head, content, Buffer.from('\nendstream\nendobj\n%%EOF\n')]);
}
