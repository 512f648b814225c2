/**
 * `docex-sync check`: proves a loaded config works before `run` meets it. Each problem is one line
 * naming its key; nothing is created or changed (a watched folder that is missing, e.g. a share not
 * mounted, is a problem, never made).
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { DocexNotFoundError, DocexPermissionError, type DocexClient } from '@docex/shared';
import type { Config } from '../common/config.ts';
import { EXIT, exitCodeFor, type ExitCode } from '../common/exit.ts';

export interface CheckReport {
  /** One line each: `key: what is wrong`. */
  problems: string[];
  /**
   * 0 fine, 2 config problems, 3 the key was refused, 4 the service could not be reached, 5-11 it
   * could not be reached and why (DNS, refused, proxy, proxy credentials, certificate: EXIT).
   */
  exitCode: ExitCode;
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

/** Local checks: watched folders exist; output, processed, failed, pull and state folders are writable. */
export async function checkPaths(config: Config): Promise<string[]> {
  const checks: Array<Promise<string | undefined>> = [];
  config.watch.forEach((w, i) => {
    checks.push(existingFolder(`watch[${i}].path`, w.path));
    checks.push(writableFolder(`watch[${i}].output`, w.output));
    checks.push(writableFolder(`watch[${i}].failed_dir`, w.failed_dir));
    if (w.processed_dir) checks.push(writableFolder(`watch[${i}].processed_dir`, w.processed_dir));
  });
  checks.push(writableFolder('state_db', dirname(config.state_db)));
  if (config.pull) checks.push(writableFolder('pull.output', config.pull.output));
  return (await Promise.all(checks)).filter((p): p is string => p !== undefined);
}

/** Every template_id / folder_id the config names, with its key. */
function referencedIds(config: Config) {
  const ids: Array<{ key: string; kind: 'template' | 'folder'; id: number }> = [];
  const add = (key: string, item: { template_id?: number | undefined; folder_id?: number | undefined }) => {
    if (item.template_id !== undefined)
      ids.push({ key: `${key}.template_id`, kind: 'template', id: item.template_id });
    if (item.folder_id !== undefined)
      ids.push({ key: `${key}.folder_id`, kind: 'folder', id: item.folder_id });
  };
  config.watch.forEach((w, i) => add(`watch[${i}]`, w));
  config.reruns.forEach((r, i) => add(`reruns[${i}]`, r));
  if (config.pull) add('pull', config.pull);
  return ids;
}

export async function checkConfig(
  config: Config,
  client: DocexClient,
  baseUrl: string,
): Promise<CheckReport> {
  const problems = await checkPaths(config);
  try {
    const answer = await client.checkApiKey();
    if (!answer.valid)
      return { problems: [...problems, `API key: ${baseUrl} says it is not valid`], exitCode: EXIT.auth };
  } catch (error) {
    const exitCode = exitCodeFor(error);
    const message = error instanceof Error ? error.message : String(error);
    // A 403 to check_api_key, whatever its words, can only mean the key is not let in.
    if (exitCode === EXIT.auth || error instanceof DocexPermissionError)
      return { problems: [...problems, `API key: refused by ${baseUrl} (${message})`], exitCode: EXIT.auth };
    if (exitCode === EXIT.unreachable)
      return {
        problems: [...problems, `api.base_url: ${baseUrl} cannot be reached (${message})`],
        exitCode,
      };
    // DNS, refused, proxy, certificate: the client's message already says what to do.
    if (exitCode > EXIT.unreachable)
      return { problems: [...problems, `api.base_url: ${baseUrl}: ${message}`], exitCode };
    throw error;
  }
  for (const { key, kind, id } of referencedIds(config)) {
    try {
      if (kind === 'template') await client.fetchTemplate({ template_id: id });
      else await client.fetchFolder({ folder_id: id });
    } catch (error) {
      if (!(error instanceof DocexNotFoundError || error instanceof DocexPermissionError)) throw error;
      problems.push(`${key}: ${kind} ${id} does not exist for this API key`);
    }
  }
  return { problems, exitCode: problems.length ? 2 : 0 };
}
