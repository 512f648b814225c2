/**
 * kill -9 of docex-sync while mails arrive (the torture style of test/daemon/commands/process.test.ts):
 * after restarts, every attachment is recorded once and ends as one document, and a message is
 * flagged only when all its attachments are recorded.
 */
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { invoicePdf, mimeMessage, startDovecot, type Dovecot } from '../../support/dovecot.ts';
import { makeWorld, SECRET, until, type World } from '../helpers.ts';

const cli = join(import.meta.dirname, '../../../daemon/src/commands/docex-sync.ts');
let dovecot: Dovecot;
let world: World | undefined;
const children: ChildProcess[] = [];
beforeAll(async () => {
  dovecot = await startDovecot();
});
afterAll(() => dovecot?.stop());
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await world?.cleanup();
});

function run(configFile: string) {
  const child = spawn(process.execPath, [cli, 'run', '--config', configFile], {
    env: { ...process.env, DOCEX_API_KEY: SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, taken: () => output.split('"msg":"mail taken"').length - 1, output: () => output };
}

const query = <T>(w: World, sql: string) => {
  const db = new Database(join(w.dir, 'state', 'sync.db'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sql).all() as T[];
  } catch {
    return [] as T[];
  } finally {
    db.close();
  }
};

it('kill -9 at each mail taken while mails arrive: 0 lost, each attachment one document, flagged only when recorded', async () => {
  const w = await makeWorld();
  world = w;
  await writeFile(join(w.dir, 'mail.pw'), dovecot.users[0]!.password);
  const yaml = await readFile(w.configFile, 'utf8');
  await writeFile(
    w.configFile,
    `${yaml}\nmailboxes:\n  - { name: crash, host: 127.0.0.1, port: ${dovecot.tlsPort}, ca_file: ${dovecot.caFile}, user: invoices, password_file: ./mail.pw, template_id: ${w.templateId}, output: ./mail-results, failed_dir: ./mail-failed, poll_interval_ms: 1000 }\n`,
  );
  const MAILS = 8;
  const numbers: string[] = [];
  let appended = 0;
  const appendNext = async () => {
    const n = appended++;
    numbers.push(`C-${n}a`, `C-${n}b`);
    await dovecot.append(
      mimeMessage({
        messageId: `<crash-${n}-${Date.now()}@acme.test>`,
        attachments: [
          { name: `C-${n}a.pdf`, content: invoicePdf(`C-${n}a`) },
          { name: `C-${n}b.pdf`, content: invoicePdf(`C-${n}b`) },
        ],
      }),
    );
  };
  await appendNext();
  await appendNext();
  // Four runs killed with SIGKILL right after a mail is taken, more mail arriving meanwhile.
  for (let round = 0; round < 4; round++) {
    const daemon = run(w.configFile);
    const appending = appendNext();
    await until('a mail taken', () => daemon.taken() >= 1 || daemon.child.exitCode !== null, 30_000);
    daemon.child.kill('SIGKILL');
    await daemon.exited;
    await appending;
    // Invariant after every crash: a message marked done has all its attachments recorded.
    const broken = query<{ id: number }>(
      w,
      `SELECT m.id FROM mail_messages m WHERE m.done_at IS NOT NULL AND m.attachments != (SELECT COUNT(*) FROM mail_attachments a WHERE a.message = m.id)`,
    );
    expect(broken).toEqual([]);
  }
  while (appended < MAILS) await appendNext();
  const last = run(w.configFile);
  await until(
    'every attachment archived',
    () =>
      query<{ n: number }>(w, `SELECT COUNT(*) AS n FROM files WHERE state = 'archived'`)[0]?.n === MAILS * 2,
    90_000,
  );
  last.child.kill('SIGTERM');
  await last.exited;

  const messages = query<{ uid: number; n: number }>(
    w,
    `SELECT uid, COUNT(*) AS n FROM mail_messages GROUP BY uid`,
  );
  expect(messages).toHaveLength(MAILS);
  expect(messages.every((m) => m.n === 1)).toBe(true);
  const rows = query<{ n: number }>(w, `SELECT COUNT(*) AS n FROM files`)[0]!.n;
  expect(rows).toBe(MAILS * 2); // no attachment recorded twice
  const client = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
  expect(await client.fetchDocuments({})).toHaveLength(MAILS * 2); // one document per attachment
  const imap = await dovecot.client();
  try {
    const lock = await imap.getMailboxLock('INBOX');
    try {
      const unflagged = (await imap.search({ unKeyword: '$DocexTaken' }, { uid: true })) || [];
      expect(unflagged).toEqual([]);
    } finally {
      lock.release();
    }
  } finally {
    await imap.logout();
  }
}, 180_000);
