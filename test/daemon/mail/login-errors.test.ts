/**
 * What a failed IMAP login says. imapflow marks every NO to a login as `authenticationFailed`, but
 * RFC 5530's [UNAVAILABLE] means the server could not check the credential right now (dovecot:
 * "Temporary authentication failure" when its token check or password database failed): that
 * says nothing about the secret, and telling the operator to renew it would be a false signal.
 */
import { describe, expect, it } from 'vitest';
import { MailboxSection } from '../../../daemon/src/config/mail.ts';
import { describeImapError, isLoginRefusal } from '../../../daemon/src/mail/connection.ts';

const mailbox = MailboxSection.parse({
  name: 'invoices',
  host: 'imap.test',
  user: 'u',
  oauth2_token_file: '/run/secrets/mail.token',
  template_id: 1,
  output: '/o',
  failed_dir: '/f',
});

/** What imapflow throws when the server answers the login with `response`. */
const loginError = (response: string) =>
  Object.assign(new Error('Command failed'), {
    authenticationFailed: true,
    response,
    serverResponseCode: undefined,
  });

describe('a failed login', () => {
  it('[AUTHENTICATIONFAILED]: the token was refused, and the operator is told what to renew', () => {
    const error = loginError('2 NO [AUTHENTICATIONFAILED] Authentication failed.');
    expect(isLoginRefusal(error)).toBe(true);
    expect(describeImapError(error, mailbox)).toBe(
      'the server refused the access token in /run/secrets/mail.token (NO [AUTHENTICATIONFAILED] Authentication failed.): it has expired or was revoked; the job that renews the token must write a new one there (mailboxes[invoices].oauth2_token_file); it is used as soon as the file changes',
    );
  });

  it('[UNAVAILABLE]: the server could not check it now; not a refusal, and docex-sync tries again', () => {
    const error = loginError('2 NO [UNAVAILABLE] Temporary authentication failure. [vm:2026-11-28 08:40:13]');
    expect(isLoginRefusal(error)).toBe(false);
    expect(describeImapError(error, mailbox)).toBe(
      'the server could not check the login now (NO [UNAVAILABLE] Temporary authentication failure. [vm:2026-11-28 08:40:13]): a failure on its side, not a wrong access token; try again later (a running docex-sync logs in again by itself, with backoff)',
    );
  });
});
