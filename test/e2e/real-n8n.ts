/**
 * A real n8n (installed once into the user cache by scripts/n8n-install.sh, from the e2e
 * global set-up) in a fresh user folder of the test file's own, with the n8n-nodes-docex tarball of
 * the run's one plain `npm pack` (test/e2e/pack.ts) installed the way users install it, and a Docex
 * credential pointing at an emulator started for the test.
 *
 * For a file that needs n8n settings of its own (a proxy, queue mode). A file that does not takes
 * the run's shared n8n instead (test/e2e/shared.ts, `sharedN8n`): no boot of its own.
 *
 * Each `run`, `importWorkflow` and `execute` is an n8n CLI command: a whole n8n boot (tens of
 * seconds, a minute under load). Once a server runs on the folder (services.ts, `startN8n`),
 * `signIn` gives the same through the server's REST API, in milliseconds.
 */
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../emulator/index.ts';
import { timed } from '../support/timing.ts';
import {
  HEADLESS_N8N,
  installDirOf,
  migratedSqliteFolder,
  n8nEnvironment,
  prepareUserFolder,
} from './n8n-instance.ts';
import { CREDENTIAL, N8nRest, type RunData } from './n8n-rest.ts';
import { setUpOwner } from './services.ts';
import { installedN8n, sharedPack } from './shared.ts';

export type { RunData } from './n8n-rest.ts';

export interface RealN8n {
  home: string;
  /** n8n's install folder (its node_modules hold n8n's own dependencies). */
  installDir: string;
  bin: string;
  env: NodeJS.ProcessEnv;
  emulator: Emulator;
  /** Runs an n8n CLI command to its end (a boot). */
  run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Imports a workflow (its JSON carries an id) with `n8n import:workflow`. */
  importWorkflow(workflow: { id: string; [key: string]: unknown }): Promise<void>;
  /** Imports and runs a workflow with `n8n execute`; fails on a workflow error. */
  execute(workflow: { id: string; [key: string]: unknown }): Promise<RunData>;
  /**
   * Sets up the owner of a server started on this folder and signs in: the REST calls of the
   * editor (no boot each), with the Docex credential created (CREDENTIAL is mapped to it).
   */
  signIn(server: { url: string; output(): string }): Promise<N8nRest>;
  cleanup(): Promise<void>;
}

/** What n8n printed last, for a failure message: it reports start-up errors on stdout. */
export const tail = (r: { stdout: string; stderr: string }) =>
  `${r.stdout.slice(-1500)}\n${r.stderr.slice(-1500)}`;

export { CREDENTIAL } from './n8n-rest.ts';

/** `env`: more environment for every n8n command (a database, queue mode, an encryption key). */
export async function prepareN8n(
  emulatorOptions: EmulatorOptions = {},
  {
    env: extraEnv = {},
    parts,
  }: {
    env?: NodeJS.ProcessEnv;
    /**
     * n8n's binary and the n8n-nodes-docex tarball, for a caller outside vitest (a bench), which has
     * no e2e global set-up to take them from.
     */
    parts?: { bin: string; tarball: string };
  } = {},
): Promise<RealN8n> {
  const [bin, tarball] = parts
    ? [parts.bin, parts.tarball]
    : await Promise.all([installedN8n(), sharedPack().then((packed) => packed.tarballs['n8n-nodes-docex']!)]);
  // A SQLite database starts as a copy of the version's migrated one; PostgreSQL (queue mode) is
  // migrated by the file's own main instance.
  const sqlite = (extraEnv.DB_TYPE ?? 'sqlite') === 'sqlite';
  const home = await timed('n8n user folder', async () =>
    prepareUserFolder(tarball, sqlite ? await migratedSqliteFolder(bin) : undefined),
  );
  const emulator = await startEmulator({ port: 0, taskDelayMs: 100, ...emulatorOptions });
  // No browser opens these n8n: headless, unless the caller's settings say otherwise.
  const env = await n8nEnvironment(home, { ...HEADLESS_N8N, ...extraEnv });
  const cliRun = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
  const run = (args: string[]) => timed(`n8n ${args[0]} (CLI: a boot)`, () => cliRun(args));
  // The CLI's credential, imported before the first CLI command that needs it (a boot of its own),
  // so that a file that only uses the REST API after its server started never pays for it.
  let credentialImported: Promise<void> | undefined;
  const importCredential = () =>
    (credentialImported ??= (async () => {
      await writeFile(
        join(home, 'creds.json'),
        JSON.stringify([
          {
            ...CREDENTIAL.docexApi,
            type: 'docexApi',
            data: { baseUrl: emulator.url, apiKey: emulator.keys[0] },
          },
        ]),
      );
      const creds = await run(['import:credentials', `--input=${join(home, 'creds.json')}`]);
      expect(creds.code, tail(creds)).toBe(0);
    })());
  const importWorkflow = async (workflow: { id: string }) => {
    await importCredential();
    const file = join(home, `${workflow.id}.json`);
    await writeFile(file, JSON.stringify(workflow));
    const imported = await run(['import:workflow', `--input=${file}`]);
    expect(imported.code, tail(imported)).toBe(0);
  };

  return {
    home,
    installDir: installDirOf(bin),
    bin,
    env,
    emulator,
    run,
    importWorkflow,
    async execute(workflow) {
      await importWorkflow(workflow as { id: string });
      const result = await run(['execute', '--id', workflow.id, '--rawOutput']);
      // n8n may print log lines around the run's JSON: take the block from a line "{" to the last line "}".
      const lines = result.stdout.split('\n');
      const json = lines.slice(lines.indexOf('{'), lines.lastIndexOf('}') + 1).join('\n');
      let parsed: {
        status?: string;
        data: { resultData: { runData: RunData; error?: { message: string } } };
      };
      try {
        parsed = JSON.parse(json);
      } catch {
        throw new Error(
          `n8n execute printed no JSON (exit ${result.code}):\n${result.stdout.slice(-2000)}\n${result.stderr.slice(-2000)}`,
        );
      }
      expect(parsed.data.resultData.error?.message, 'workflow error').toBeUndefined();
      expect(parsed.status).toBe('success');
      return parsed.data.resultData.runData;
    },
    async signIn(server) {
      const cookie = await setUpOwner(server.url);
      const rest = new N8nRest(server.url, cookie, installDirOf(bin), () => server.output().slice(-3000));
      await rest.createCredential({
        ...CREDENTIAL.docexApi,
        type: 'docexApi',
        data: { baseUrl: emulator.url, apiKey: emulator.keys[0] },
      });
      return rest;
    },
    async cleanup() {
      await emulator.stop();
      await rm(home, { recursive: true, force: true });
    },
  };
}
