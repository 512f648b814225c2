/**
 * What `docex-sync check` proves (and `run` checks of it first: the key): a loaded config works
 * before `run` meets it. Each problem is one line
 * naming its key; nothing is created or changed (a watched folder that is missing, e.g. a share not
 * mounted, is a problem, never made).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DocexNotFoundError, DocexPermissionError, HINTS, type DocexClient } from '@docex/shared';
import { syncTerms } from '@docex/cli-kit/api-config';
import type { ConfigSlice } from '../config/config.ts';
import { EXIT, exitCodeFor, type ExitCode } from '@docex/cli-kit/exit';

export interface CheckReport {
  /** One line each: `key: what is wrong`. */
  problems: string[];
  /**
   * 0 fine, 2 config problems, 3 the key was refused, 4 the service could not be reached, 7-13 it
   * could not be reached and why (DNS, refused, proxy, proxy credentials, certificate: EXIT).
   */
  exitCode: ExitCode;
  /** One line per mailbox that logged in: what its folder holds. */
  mailboxes?: string[];
}

const errorCode = (error: unknown) => (error as NodeJS.ErrnoException).code ?? (error as Error).message;

/** A folder docex-sync reads: it must exist and be a folder. */
async function existingFolder(key: string, path: string): Promise<string | undefined> {
  try {
    if (!(await stat(path)).isDirectory()) return `${key}: ${path} is not a folder`;
    await access(path, constants.R_OK | constants.X_OK);
  } catch (error) {
    return errorCode(error) === 'ENOENT'
      ? `${key}: ${path} does not exist (not mounted?); docex-sync never creates a watched folder`
      : `${key}: ${path} cannot be read (${errorCode(error)})`;
  }
  return undefined;
}

/** A folder docex-sync writes: it must be a writable folder, or creatable under a writable one. */
async function writableFolder(key: string, path: string): Promise<string | undefined> {
  let probe = path;
  for (;;) {
    try {
      const info = await stat(probe);
      if (!info.isDirectory())
        return `${key}: ${probe === path ? path : `${path} cannot be created: ${probe}`} is not a folder`;
      await access(probe, constants.W_OK | constants.X_OK);
      return undefined;
    } catch (error) {
      if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTDIR')
        return `${key}: ${probe === path ? `${path} is not writable` : `${path} cannot be created in ${probe}`} (${errorCode(error)})`;
      if (dirname(probe) === probe) return `${key}: ${path} cannot be created`;
      probe = dirname(probe);
    }
  }
}

/** What `check` reads of the config: the folders it names and the templates and folders they use. */
export type CheckConfig = ConfigSlice<'state_db' | 'watch' | 'mailboxes' | 'pull' | 'reruns'>;

/** Local checks: watched folders exist; output, processed, failed, pull and state folders are writable. */
export async function checkPaths(
  config: ConfigSlice<'state_db' | 'watch' | 'mailboxes' | 'pull'>,
): Promise<string[]> {
  const checks: Array<Promise<string | undefined>> = [];
  config.watch.forEach((w, i) => {
    checks.push(existingFolder(`watch[${i}].path`, w.path));
    checks.push(writableFolder(`watch[${i}].output`, w.output));
    checks.push(writableFolder(`watch[${i}].failed_dir`, w.failed_dir));
    if (w.processed_dir) checks.push(writableFolder(`watch[${i}].processed_dir`, w.processed_dir));
  });
  config.mailboxes.forEach((m, i) => {
    checks.push(writableFolder(`mailboxes[${i}].output`, m.output));
    checks.push(writableFolder(`mailboxes[${i}].failed_dir`, m.failed_dir));
    checks.push(writableFolder(`mailboxes[${i}].spool_dir`, m.spool_dir!));
    if (m.processed_dir) checks.push(writableFolder(`mailboxes[${i}].processed_dir`, m.processed_dir));
  });
  checks.push(writableFolder('state_db', dirname(config.state_db)));
  if (config.pull) checks.push(writableFolder('pull.output', config.pull.output));
  return (await Promise.all(checks)).filter((p): p is string => p !== undefined);
}

/** Every template_id / folder_id the config names, with its key. */
function referencedIds(config: ConfigSlice<'watch' | 'mailboxes' | 'pull' | 'reruns'>) {
  const ids: Array<{ key: string; kind: 'template' | 'folder'; id: number }> = [];
  const add = (key: string, item: { template_id?: number | undefined; folder_id?: number | undefined }) => {
    if (item.template_id !== undefined)
      ids.push({ key: `${key}.template_id`, kind: 'template', id: item.template_id });
    if (item.folder_id !== undefined)
      ids.push({ key: `${key}.folder_id`, kind: 'folder', id: item.folder_id });
  };
  config.watch.forEach((w, i) => {
    add(`watch[${i}]`, w);
    w.routes.forEach((r, j) => add(`watch[${i}].routes[${j}] ("${r.name ?? r.match}")`, r));
  });
  config.reruns.forEach((r, i) => add(`reruns[${i}]`, r));
  config.mailboxes.forEach((m, i) => {
    add(`mailboxes[${i}]`, m);
    m.rules.forEach((r, j) => add(`mailboxes[${i}].rules[${j}]`, r));
  });
  if (config.pull) add('pull', config.pull);
  return ids;
}

/** What one check_api_key says: accepted, refused (exit 3) or not reached (exit 4), as one line naming the key or URL. */
export type KeyCheck = { ok: true } | { ok: false; exitCode: ExitCode; problem: string; error: unknown };

export async function checkKey(client: DocexClient, baseUrl: string): Promise<KeyCheck> {
  const refused = (why: string, error: unknown): KeyCheck => ({
    ok: false,
    exitCode: EXIT.auth,
    problem: `API key: refused by ${baseUrl} (${why}); ${HINTS.keyRefused(syncTerms())}`,
    error,
  });
  try {
    const answer = await client.checkApiKey();
    return answer.valid ? { ok: true } : refused('it says the key is not valid', undefined);
  } catch (error) {
    const exitCode = exitCodeFor(error);
    const message = error instanceof Error ? error.message : String(error);
    // A 403 to check_api_key, whatever its words, can only mean the key is not let in.
    if (exitCode === EXIT.auth || error instanceof DocexPermissionError) return refused(message, error);
    if (exitCode === EXIT.unreachable)
      return {
        ok: false,
        exitCode,
        problem: `api.base_url: ${baseUrl} cannot be reached (${message})`,
        error,
      };
    // DNS, refused, proxy, certificate: the client's message already says what to do.
    if (exitCode > EXIT.unreachable)
      return { ok: false, exitCode, problem: `api.base_url: ${baseUrl}: ${message}`, error };
    throw error;
  }
}

/** Each mailbox: logs in, opens its folder and says what is there; a refusal is a problem naming the mailbox. */
export async function checkMailboxes(config: ConfigSlice<'mailboxes'>, env: NodeJS.ProcessEnv) {
  const problems: string[] = [];
  const lines: string[] = [];
  if (config.mailboxes.length === 0) return { problems, lines };
  // Loaded only when needed: imapflow and mailparser cost seconds of start-up on a busy machine.
  const { checkMailbox, describeImapError, MailboxError } = await import('../mail/connection.ts');
  for (const [i, m] of config.mailboxes.entries()) {
    try {
      const seen = await checkMailbox(m, env);
      lines.push(
        `mailbox ${m.name}: logged in as ${m.user} at ${m.host}; ${seen.folder} holds ${seen.messages} message(s), ${seen.pending} not taken yet; ${seen.idle ? 'IDLE' : `no IDLE, polled every ${m.poll_interval_ms} ms`}`,
      );
    } catch (error) {
      problems.push(
        error instanceof MailboxError
          ? error.message
          : `mailboxes[${i}] (${m.name}, ${m.user} at ${m.host}): ${describeImapError(error, m)}`,
      );
    }
  }
  return { problems, lines };
}

export async function checkConfig(
  config: CheckConfig,
  client: DocexClient,
  baseUrl: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<CheckReport> {
  const mail = await checkMailboxes(config, env);
  const problems = [...(await checkPaths(config)), ...mail.problems];
  const key = await checkKey(client, baseUrl);
  if (!key.ok) return { problems: [...problems, key.problem], exitCode: key.exitCode };
  for (const { key, kind, id } of referencedIds(config)) {
    try {
      if (kind === 'template') await client.fetchTemplate({ template_id: id });
      else await client.fetchFolder({ folder_id: id });
    } catch (error) {
      if (!(error instanceof DocexNotFoundError || error instanceof DocexPermissionError)) throw error;
      problems.push(`${key}: ${kind} ${id} does not exist for this API key`);
    }
  }
  return { problems, exitCode: problems.length ? 2 : 0, mailboxes: mail.lines };
}
