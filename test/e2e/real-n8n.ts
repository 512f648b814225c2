/**
 * A real n8n 2.40.7 (installed once into the user cache by scripts/n8n-install.sh) in a fresh user
 * folder, with the n8n-nodes-docex tarball of a plain `npm pack` (test/e2e/pack.ts) installed the
 * way users install it, and a Docex credential pointing at an emulator started for the test.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../emulator/index.ts';
import { packAsDocumented, repo } from './pack.ts';
import { freePort } from './services.ts';

/** A run's data per node, as `n8n execute --rawOutput` prints it. */
export type RunData = Record<
  string,
  Array<{
    data?: {
      main: Array<
        Array<{
          json: Record<string, unknown>;
          binary?: Record<string, { fileName?: string; mimeType?: string }>;
        }>
      >;
    };
    inputOverride?: Record<string, Array<Array<{ json: Record<string, unknown> }>>>;
    error?: { message: string };
  }>
>;

export interface RealN8n {
  home: string;
  /** n8n's install folder (its node_modules hold n8n's own dependencies). */
  installDir: string;
  bin: string;
  env: NodeJS.ProcessEnv;
  emulator: Emulator;
  /** Runs an n8n CLI command to its end. */
  run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Imports a workflow (its JSON carries an id). */
  importWorkflow(workflow: { id: string; [key: string]: unknown }): Promise<void>;
  /** Imports and runs a workflow with `n8n execute`; fails on a workflow error. */
  execute(workflow: { id: string; [key: string]: unknown }): Promise<RunData>;
  cleanup(): Promise<void>;
}

/** What n8n printed last, for a failure message: it reports start-up errors on stdout. */
export const tail = (r: { stdout: string; stderr: string }) =>
  `${r.stdout.slice(-1500)}\n${r.stderr.slice(-1500)}`;

export const CREDENTIAL = { docexApi: { id: 'docexcred0000001', name: 'Docex' } };

/** `env`: more environment for every n8n command (a database, queue mode, an encryption key). */
export async function prepareN8n(
  emulatorOptions: EmulatorOptions = {},
  { env: extraEnv = {} }: { env?: NodeJS.ProcessEnv } = {},
): Promise<RealN8n> {
  const bin = execFileSync('bash', [join(repo, 'scripts/n8n-install.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  const home = await mkdtemp(join(tmpdir(), 'docex-n8n-e2e-'));
  const nodesDir = join(home, '.n8n', 'nodes');
  await mkdir(join(nodesDir, 'node_modules'), { recursive: true });
  const packed = packAsDocumented(['n8n-nodes-docex']);
  execFileSync('tar', ['-xzf', packed.tarballs['n8n-nodes-docex']!, '-C', home]);
  packed.remove();
  await rename(join(home, 'package'), join(nodesDir, 'node_modules', 'n8n-nodes-docex'));
  await writeFile(
    join(nodesDir, 'package.json'),
    JSON.stringify({ dependencies: { 'n8n-nodes-docex': '0.1.0' } }),
  );

  const emulator = await startEmulator({ port: 0, taskDelayMs: 100, ...emulatorOptions });
  await mkdir(join(home, 'files'));
  // vitest sets NODE_ENV=test and VITEST*: n8n must not run in its own test mode.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'NODE_ENV' && k !== 'TEST'),
  );
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    NODE_ENV: 'production',
    N8N_USER_FOLDER: home,
    N8N_DIAGNOSTICS_ENABLED: 'false',
    N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
    N8N_RUNNERS_ENABLED: 'false',
    // `n8n execute` binds its task broker's port even with runners off (default 5679): two test
    // runs on one machine collided there ("n8n Task Broker's port 5679 is already in use").
    N8N_RUNNERS_BROKER_PORT: String(await freePort()),
    N8N_RESTRICT_FILE_ACCESS_TO: join(home, 'files'),
    N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
    ...extraEnv,
  };
  const run = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    });
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
  const importWorkflow = async (workflow: { id: string }) => {
    const file = join(home, `${workflow.id}.json`);
    await writeFile(file, JSON.stringify(workflow));
    const imported = await run(['import:workflow', `--input=${file}`]);
    expect(imported.code, tail(imported)).toBe(0);
  };

  return {
    home,
    installDir: dirname(dirname(dirname(bin))),
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
    async cleanup() {
      await emulator.stop();
      await rm(home, { recursive: true, force: true });
    },
  };
}
