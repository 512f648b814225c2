/**
 * What the e2e global set-up (test/e2e/global-setup.ts) makes once per run, as a test file gets it:
 * the packed tarballs, the one-time installs, and a shared, running n8n (n8n-instance.ts, N8N_VERSION).
 *
 * ## A test file on the shared n8n
 *
 * ```ts
 * import { sharedN8n, SHARED_N8N_WAIT_MS, type SharedN8n } from './shared.ts';
 *  *
 * let n8n: SharedN8n;
 * beforeAll(async () => {
 *   n8n = await sharedN8n({ taskDelayMs: 20 }); // this file's emulator options
 * }, SHARED_N8N_WAIT_MS);
 * afterAll(() => n8n?.cleanup());
 *
 * it('extracts', async () => {
 *   const runData = await n8n.execute(workflowWith(CREDENTIAL)); // its manual trigger, as the Run button
 * });
 * ```
 *
 * The n8n is the run's, the rest is the file's own: an emulator started for the file, a Docex
 * credential pointing at it (the workflows' CREDENTIAL is mapped to it on import), a folder of its
 * own under the only one n8n may read (`filesDir`), and the workflows it imports. So:
 *
 * - give workflows IDs no other file uses (n8n refuses an ID it has: the import fails saying so);
 * - read and write files in `n8n.filesDir` only;
 * - what is published (`publish`) is unpublished by `cleanup`; executions and the database are
 *   shared: filter them by your workflow's ID;
 * - don't change n8n's settings or restart it: a file that needs other settings (a proxy, queue mode)
 *   starts an n8n of its own (real-n8n.ts, `prepareN8n`, then services.ts, `startN8n`).
 *
 * A configuration other than `default` is a row in CONFIGURATIONS of test/e2e/global-setup.ts,
 * asked for by name: `sharedN8n({}, 'editor')`.
 */
import { mkdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { expect, inject } from 'vitest';
import { startEmulator, type Emulator, type EmulatorOptions } from '../../emulator/index.ts';
import { timed } from '../support/timing.ts';
import type { SharedN8nInstance, SharedPack } from './global-setup.ts';
import { CREDENTIAL, N8nRest, type CredentialRef, type RunData } from './n8n-rest.ts';
import { packedIn, type Packed } from './pack.ts';
import { until } from './services.ts';

/**
 * The time limit of a beforeAll that waits for the shared n8n: on a new machine it includes n8n's
 * one-time install (minutes; that install has no limit of its own but npm's) and the pack.
 */
export const SHARED_N8N_WAIT_MS = 3_600_000;

/** Waits for something the global set-up makes (`what`: pack, n8n/default, installs/n8n...). */
async function fromGlobalSetup<T>(what: string): Promise<T> {
  const broker = inject('docexE2eBroker');
  if (!broker)
    throw new Error(
      `test/e2e/shared.ts needs the e2e project's global set-up (test/e2e/global-setup.ts in vitest.config.ts) for ${what}`,
    );
  return await until(
    `the e2e global set-up to make ${what}`,
    async () => {
      // A GET: asked again when a kept-alive connection was closed under it.
      const response = await fetch(`${broker}/${what}`).catch(() => undefined);
      if (!response || response.status === 202) return undefined;
      const text = await response.text();
      if (response.status !== 200) throw new Error(`the e2e global set-up failed to make ${what}:\n${text}`);
      return { value: JSON.parse(text) as T };
    },
    SHARED_N8N_WAIT_MS,
  ).then((r) => r.value);
}

/** The run's one pack of both packages; read-only: copy what you change. Removed at the end of the run. */
export async function sharedPack(): Promise<Omit<Packed, 'remove'>> {
  const { dir, tarballs } = await timed('waiting for the shared pack', () =>
    fromGlobalSetup<SharedPack>('pack'),
  );
  const { remove: _remove, ...packed } = packedIn(dir, tarballs);
  return packed;
}

/**
 * The path of n8n's binary (the suite's version, N8N_VERSION of n8n-instance.ts, or `version`), once
 * the global set-up has installed (or found) it.
 */
export const installedN8n = (version?: string) =>
  timed(`waiting for the n8n${version ? ` ${version}` : ''} install`, () =>
    fromGlobalSetup<string>(version ? `installs/n8n/${version}` : 'installs/n8n'),
  );

/**
 * Waits until the global set-up has installed (or found) the Debian packages and the browser, so
 * that a file's own check finds them and no two apt-get or npm installs of them run at once. Its
 * failure is not reported here: the file's own install then runs and says what is missing.
 */
export async function oneTimeInstallsDone(): Promise<void> {
  if (!inject('docexE2eBroker')) return;
  await timed('waiting for the one-time installs', () =>
    fromGlobalSetup<null>('installs/debian').catch(() => null),
  );
}

export interface SharedN8n {
  /** n8n's base URL. */
  url: string;
  /** The owner's session cookie (sign in as OWNER of services.ts in a browser). */
  cookie: string;
  /** How long the shared n8n took to be ready at its boot (a measure of the machine's speed). */
  readyMs: number;
  /** n8n's user folder: shared, read it only (its database.sqlite holds every file's executions). */
  home: string;
  installDir: string;
  /** The n8n version. */
  version: string;
  /** This file's folder inside the one folder n8n may read and write. */
  filesDir: string;
  /** This file's emulator. */
  emulator: Emulator;
  /** The REST calls of the editor, signed in as the owner, with this file's credentials. */
  rest: N8nRest;
  /** This file's Docex credential (what CREDENTIAL in the file's workflows is mapped to). */
  credentials: { docexApi: CredentialRef };
  /** Creates a credential for the ID the file's workflows use (`wanted.id`). */
  createCredential(
    wanted: CredentialRef & { type: string; data: Record<string, unknown> },
  ): Promise<CredentialRef>;
  importWorkflow(workflow: { id: string; [key: string]: unknown }): Promise<void>;
  /** Imports a workflow and runs it from its manual trigger; fails on a workflow error. */
  execute(workflow: { id: string; [key: string]: unknown }): Promise<RunData>;
  /** Publishes an imported workflow and waits until its triggers are active (unpublished by cleanup). */
  publish(workflowId: string): Promise<void>;
  /** The shared n8n's last output, for failure messages. */
  log(): Promise<string>;
  cleanup(): Promise<void>;
}

/** The run's shared n8n (`configuration`, `default` unless said) with this file's emulator, credential and folder. */
export async function sharedN8n(
  emulatorOptions: EmulatorOptions = {},
  configuration = 'default',
): Promise<SharedN8n> {
  const instance = await timed(`waiting for the shared n8n (${configuration})`, () =>
    fromGlobalSetup<SharedN8nInstance>(`n8n/${configuration}`),
  );
  const broker = inject('docexE2eBroker');
  const log = async () =>
    await fetch(`${broker}/n8n/${configuration}/log`).then(
      (r) => r.text(),
      () => '',
    );
  const rest = new N8nRest(instance.url, instance.cookie, instance.installDir, log);
  const emulator = await startEmulator({ port: 0, taskDelayMs: 100, ...emulatorOptions });
  const testPath = expect.getState().testPath ?? 'e2e';
  const file = basename(testPath, '.test.ts');
  const filesDir = join(instance.home, 'files', `${file}-${emulator.url.split(':').at(-1)}`);
  await mkdir(filesDir, { recursive: true });
  const docexApi = await rest.createCredential({
    id: CREDENTIAL.docexApi.id,
    name: `Docex (${file})`,
    type: 'docexApi',
    data: { baseUrl: emulator.url, apiKey: emulator.keys[0] },
  });
  const published = new Set<string>();
  return {
    url: instance.url,
    cookie: instance.cookie,
    readyMs: instance.readyMs,
    home: instance.home,
    installDir: instance.installDir,
    version: instance.version,
    filesDir,
    emulator,
    rest,
    credentials: { docexApi },
    createCredential: (wanted) => rest.createCredential(wanted),
    importWorkflow: async (workflow) => {
      await rest.importWorkflow(workflow);
    },
    execute: (workflow) => rest.execute(workflow),
    async publish(workflowId) {
      published.add(workflowId);
      await rest.publish(workflowId);
    },
    log,
    async cleanup() {
      // Its triggers would go on polling an emulator that is gone.
      await Promise.allSettled([...published].map((id) => rest.unpublish(id)));
      await emulator.stop();
      await rm(filesDir, { recursive: true, force: true });
      // The global set-up stops this n8n once the run's last file that uses it is done.
      await fetch(`${broker}/n8n/${configuration}/done?file=${encodeURIComponent(testPath)}`).catch(
        () => undefined,
      );
    },
  };
}
