/**
 * The `mailboxes:` section's mistakes as the config loader says them: every one a line
 * `file:line key: message`, like the rest of the config (common/yaml.ts), the checks a schema
 * cannot make (config/mail.ts, mailboxProblems) included.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../daemon/src/config/config.ts';
import { ConfigError } from '../../../cli-kit/src/errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'docex-mail-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The loader's message for a config file holding `text`. */
function mistakes(text: string) {
  const file = join(dir, 'docex-sync.yaml');
  writeFileSync(file, text);
  try {
    loadConfig(file);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message.replaceAll(file, 'docex-sync.yaml');
  }
  throw new Error('the config was accepted');
}

/** Lines 1-6 of each config below: a mailbox with its password from the environment. */
const INVOICES = `state_db: state.db
mailboxes:
  - name: invoices
    host: imap.example.test
    user: invoices
    password_env: IMAP_PASSWORD
`;

describe('mailbox config problems', () => {
  it('a typo and a wrong type name their line, with "did you mean" for the typo', () => {
    expect(
      mistakes(`${INVOICES}    port: "993"
    template_id: 3
    output: out
    failed_dir: failed
    after:
      action: move
      foldr: Done
    attachments:
      max_byte: 5000000
`),
    ).toBe(`docex-sync.yaml: invalid config
  docex-sync.yaml:7 mailboxes[0].port: must be a whole number (from 1 to 65535), not "993"
  docex-sync.yaml:15 mailboxes[0].attachments.max_byte: unknown key (did you mean "max_bytes"?)
  docex-sync.yaml:12 mailboxes[0].after.folder: is missing: set it to the mail folder taken messages are moved to, e.g. Done
  docex-sync.yaml:13 mailboxes[0].after.foldr: unknown key (did you mean "folder"?)`);
  });

  it('the checks the schema cannot make name their line too', () => {
    expect(
      mistakes(`${INVOICES}    password_file: imap.password
    output: out
    failed_dir: failed
    rules:
      - template_id: 3
  - name: invoices
    host: imap.example.test
    user: other
    password_env: IMAP_PASSWORD
    folder_id: 2
    output: out
    failed_dir: failed
`),
    ).toBe(`docex-sync.yaml: invalid config
  docex-sync.yaml:3 mailboxes[0]: give exactly one of password_file, password_env or oauth2_token_file
  docex-sync.yaml:11 mailboxes[0].rules[0]: give from or subject (a rule without either matches every message)
  docex-sync.yaml:12 mailboxes[1].name: "invoices" is used by another mailbox`);
  });
});
