/** A docex-sync world with one mailbox on the test dovecot, and the checks the mail tests share. */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { expect } from 'vitest';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';
import { statusSnapshot } from '../../../daemon/src/status/read-model.ts';
import type { Dovecot } from '../../support/dovecot.ts';
import { makeWorld, type World } from '../helpers.ts';

export interface MailWorldOptions {
  /** The mailbox's credential lines; default: password_file ./mail.pw holding the user's password. */
  credential?: string[];
  /** More keys of the mailbox (indented as list items' keys). */
  extra?: string[];
  after?: string;
  poll_interval_ms?: number;
  /** Adds the HTTP listener (page, /api/status, /healthz, /metrics) on a free port. */
  http?: boolean;
  /** How the connection is secured; default: implicit TLS on the server's TLS port. */
  security?: 'tls' | 'starttls';
  /** false: the mailbox has no template_id of its own (only its rules choose one). */
  defaultTemplate?: boolean;
}

export async function mailWorld(dovecot: Dovecot, options: MailWorldOptions = {}): Promise<World> {
  const w = await makeWorld({
    extraYaml: [
      ...(options.http ? ['http: { port: 0 }'] : []),
      'mailboxes:',
      '  - name: invoices',
      '    host: 127.0.0.1',
      `    port: ${options.security === 'starttls' ? dovecot.starttlsPort : dovecot.tlsPort}`,
      ...(options.security ? [`    security: ${options.security}`] : []),
      `    ca_file: ${dovecot.caFile}`,
      '    user: invoices',
      ...(options.credential ?? ['    password_file: ./mail.pw']),
      ...(options.defaultTemplate === false ? [] : ['    template_id: TEMPLATE']),
      '    output: ./mail-results',
      '    failed_dir: ./mail-failed',
      `    poll_interval_ms: ${options.poll_interval_ms ?? 1000}`,
      `    after: ${options.after ?? "{ action: flag, flag: '$DocexTaken' }"}`,
      ...(options.extra ?? []),
    ].join('\n'),
  });
  const yaml = await readFile(w.configFile, 'utf8');
  await writeFile(w.configFile, yaml.replaceAll('TEMPLATE', String(w.templateId)));
  if (!options.credential) await writeFile(join(w.dir, 'mail.pw'), `${dovecot.users[0]!.password}\n`);
  return w;
}

/** The result JSON files of a folder, parsed. */
export const jsonResults = async (dir: string) =>
  Promise.all(
    (await readdir(dir).catch(() => [] as string[]))
      .filter((n) => n.endsWith('.json'))
      .map(async (n) => JSON.parse(await readFile(join(dir, n), 'utf8')) as Record<string, any>),
  );

/**
 * No secret is in a log line, a file under the world (state DB and its WAL, results, spool; the
 * secret files themselves excepted), the status snapshot, or what the HTTP listener serves (page,
 * /api/status, /healthz, /metrics).
 */
export async function expectSecretsNowhere(
  w: World,
  running: RunningDaemon,
  secrets: string[],
  secretFiles: string[],
) {
  const logs = w.logs.join('');
  const snapshot = JSON.stringify(statusSnapshot({ db: running.db, config: w.config() }));
  const files = (await readdir(w.dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  const served: string[] = [];
  if (running.http) {
    const port = (running.http.address() as AddressInfo).port;
    for (const path of ['/', '/api/status', '/healthz', '/metrics'])
      served.push(await (await fetch(`http://127.0.0.1:${port}${path}`)).text());
  }
  for (const secret of secrets) {
    expect(logs.includes(secret), 'the log').toBe(false);
    expect(snapshot.includes(secret), 'the status snapshot').toBe(false);
    served.forEach((body, i) => expect(body.includes(secret), `HTTP answer ${i}`).toBe(false));
    for (const f of files) {
      const path = join(f.parentPath, f.name);
      if (secretFiles.includes(relative(w.dir, path))) continue;
      expect((await readFile(path)).includes(secret), path).toBe(false);
    }
  }
  return { files: files.length, served: served.length };
}
