import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { startEmulator, type Emulator } from '../../emulator/index.ts';
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import { loadConfig, type Config } from '../../daemon/src/common/config.ts';
import { startDaemon, type RunningDaemon } from '../../daemon/src/engine/daemon.ts';
import { createLogger } from '../../daemon/src/common/logging.ts';

export const SECRET = 'sk-docex-very-secret-4711';

export interface World {
  dir: string;
  emulator: Emulator;
  templateId: number;
  configFile: string;
  logs: string[];
  config(): Config;
  start(options?: { apiKey?: string; client?: DocexClient }): Promise<RunningDaemon>;
  cleanup(): Promise<void>;
}

export async function makeWorld(
  options: { taskDelayMs?: number; extraYaml?: string; watchYaml?: string } = {},
): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'docex-sync-test-'));
  await mkdir(join(dir, 'inbox'));
  const emulator = await startEmulator({
    port: 0,
    taskDelayMs: options.taskDelayMs ?? 30,
    companies: [
      { name: 'Acme', apiKey: SECRET },
      { name: 'Other', apiKey: 'other-key' },
    ],
  });
  const client = createNodeClient({ baseUrl: emulator.url, apiKey: SECRET });
  const folder = await client.createFolder({ name: 'AP' });
  const template = await client.createTemplate({
    folder_id: folder.id,
    name: 'Invoice',
    number_locale: 'EU',
  });
  for (const [i, [name, type, format]] of (
    [
      ['Invoice number', 'General fields', 'invoice_number'],
      ['Total', 'General fields', 'total_price'],
      ['Description', 'Line fields', 'text'],
      ['Amount', 'Line fields', 'total_price'],
    ] as const
  ).entries()) {
    await client.createField({ template_id: template.id, name, type, format, position: i + 1 });
  }
  const configFile = join(dir, 'docex-sync.yaml');
  await writeFile(
    configFile,
    [
      'state_db: ./state/sync.db',
      `api: { base_url: "${emulator.url}", concurrency: 4, requests_per_second: 200, max_retries: 2 }`,
      'poll: { interval_ms: 50, max_interval_ms: 200 }',
      'upload: { retry_base_ms: 50, retry_max_ms: 200, max_attempts: 20 }',
      'watch:',
      '  - path: ./inbox',
      `    template_id: ${template.id}`,
      '    output: ./results',
      '    processed_dir: ./processed',
      '    failed_dir: ./failed',
      '    stable_ms: 200',
      '    rescan_interval_ms: 1000',
      options.watchYaml ?? '',
      options.extraYaml ?? '',
      '',
    ].join('\n'),
  );
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(String(chunk));
      done();
    },
  });
  let running: RunningDaemon | undefined;
  return {
    dir,
    emulator,
    templateId: template.id,
    configFile,
    logs,
    config: () => loadConfig(configFile),
    async start(startOptions = {}) {
      const config = loadConfig(configFile);
      const log = createLogger('debug', { pretty: false, destination: sink });
      const syncClient =
        startOptions.client ??
        createNodeClient({
          baseUrl: emulator.url,
          apiKey: startOptions.apiKey ?? SECRET,
          logger: log,
          retry: { initialDelayMs: 20, maxRetries: 2 },
        });
      running = await startDaemon(config, syncClient, log);
      return running;
    },
    async cleanup() {
      await running?.stop().catch(() => undefined);
      await emulator.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function until<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await delay(25);
  }
}

export const invoice = (n: string, total = '10,00') =>
  `Invoice number: ${n}\nTotal: ${total}\nWidget | 4,00\nGadget | 6,00\n`;
