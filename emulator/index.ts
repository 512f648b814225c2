/**
 * A stateful emulator of the Document Extraction Service, over real HTTP (docs/emulator.md).
 *   const emu = await startEmulator({ port: 0 }); emu.url; emu.keys; await emu.stop();
 */
import type { AddressInfo } from 'node:net';
import { buildApp } from './app.ts';
import type { Ctx } from './routing.ts';
import { Faults, StatsRecorder, type FaultConfig, type Stats } from './faults.ts';
import { createAgent } from './routes/controls.ts';
import { World, type Agent } from './state.ts';

export type { FaultConfig, Stats } from './faults.ts';

export interface EmulatorOptions {
  port?: number;
  host?: string;
  /** IN PROGRESS → final after this many ms (default 300). */
  taskDelayMs?: number;
  companies?: Array<{ name: string; apiKey: string }>;
  /** Serve /__emulator/* control routes (default false). */
  controls?: boolean;
  /** Keep state in this folder across restarts. */
  dataDir?: string;
  logger?: boolean;
  /** The clock for created/updated times (tests of date filters). */
  now?: () => number;
  /** Serve HTTPS with this certificate chain and key (PEM); `url` then starts with https://. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * The host name put in `url` instead of the address listened on: the certificate's name, mapped
   * to that address in /etc/hosts (default: the address).
   */
  urlHost?: string;
}

export interface Emulator {
  /** The URL to use from this machine (127.0.0.1 when bound to a wildcard address). */
  url: string;
  /** The address and port the socket is bound to (e.g. 0.0.0.0 for --host 0.0.0.0). */
  bound: AddressInfo;
  keys: string[];
  faults: { set(config: FaultConfig): void; clear(): void };
  stats(): Stats;
  resetStats(): void;
  reset(): void;
  /** Agents of other kinds or links, to reach every rule of upload_csv. */
  createAgent(apiKey: string, options: { type?: string; templateIds?: number[]; active?: boolean }): Agent;
  agent(id: number): Agent | undefined;
  stop(): Promise<void>;
}

export const DEFAULT_COMPANIES = [
  { name: 'Acme', apiKey: 'demo-key-acme' },
  { name: 'Globex', apiKey: 'demo-key-globex' },
];

export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const companies = options.companies ?? DEFAULT_COMPANIES;
  const world = new World(companies, options.dataDir);
  const timers = new Set<NodeJS.Timeout>();
  const taskDelayMs = options.taskDelayMs ?? 300;
  const ctx: Ctx = {
    world,
    faults: new Faults(),
    stats: new StatsRecorder(),
    taskDelayMs,
    timers,
    now: options.now ?? Date.now,
    later: (fn) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        fn();
        world.save();
      }, taskDelayMs);
      timers.add(timer);
    },
  };
  // Tasks left IN PROGRESS by a restart with a data folder cannot resume their upload: they fail visibly.
  for (const task of world.tasks.values()) {
    if (task.status === 'IN PROGRESS' && !task.childTaskIds) {
      task.status = 'FAILED';
      task.statusMessage = 'Interrupted by a restart of the service';
    }
  }
  const app = buildApp(ctx, {
    controls: options.controls ?? false,
    logger: options.logger ?? false,
    tls: options.tls,
  });
  await app.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' });
  const bound = app.server.address() as AddressInfo;
  const wildcard = bound.address === '0.0.0.0' || bound.address === '::';
  const host = options.urlHost ?? (wildcard ? '127.0.0.1' : bound.address);

  return {
    url: `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${bound.port}`,
    bound,
    keys: world.companies.map((c) => c.apiKey),
    faults: { set: (config) => ctx.faults.set(config), clear: () => ctx.faults.clear() },
    stats: () => ctx.stats.snapshot(),
    resetStats: () => ctx.stats.reset(),
    reset: () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      world.reset();
      ctx.stats.reset();
      ctx.faults.clear();
    },
    createAgent: (apiKey, o) => {
      const company = world.companyByKey(apiKey);
      if (!company) throw new Error('unknown API key');
      return createAgent(ctx, company.id, o.type ?? 'datatable_match', o.templateIds ?? [], o.active ?? true);
    },
    agent: (id) => world.agents.get(id),
    stop: async () => {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      world.save();
      await app.close();
    },
  };
}
