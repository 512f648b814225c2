/**
 * `docex-sync run`: the daemon, until SIGINT/SIGTERM (exit 0) or a refused API key (exit 3). SIGHUP
 * reloads the config: a changed config that is invalid is refused with its problems in the log, and
 * the running one stays.
 */
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import type { Command } from '@docex/cli-kit/command';
import type { Config, ConfigError } from '../config/config.ts';
import type { RunningDaemon, StartOptions } from '../app/daemon.ts';
import type { Context } from './context.ts';
import type { Signals, SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'run',
  usage: 'docex-sync run --config FILE',
  description: `Runs until SIGINT/SIGTERM, then lets work in flight reach a safe state and exits 0.
SIGHUP reloads the config (a config with mistakes is refused and the running one kept).`,
  flags: [],
  async run(options, io) {
    const { open } = await import('./context.ts');
    return runUntilStopped(open(options, io));
  },
};

/** The work `run` loads when it runs (the table and --help never load it). */
const engine = async () => {
  const [
    { existsSync },
    { loadConfig, ConfigError, baseUrlFrom },
    daemon,
    preflight,
    exit,
    { StateDb },
    disk,
    { stateDbSpace },
    { setTimeout: delay },
  ] = await Promise.all([
    import('node:fs'),
    import('../config/config.ts'),
    import('../app/daemon.ts'),
    import('../app/preflight.ts'),
    import('@docex/cli-kit/exit'),
    import('../store/state.ts'),
    import('../domain/disk-space.ts'),
    import('../store/room.ts'),
    import('node:timers/promises'),
  ]);
  /**
   * Starts the daemon; when that fails for lack of room for the state DB (a full disk cannot even
   * open it), says so once and starts again when there is room, as a running daemon pauses and
   * resumes. Undefined when SIGINT/SIGTERM came first.
   */
  const startWithRoom = async (
    config: Config,
    log: Logger,
    signals: { next(): Promise<NodeJS.Signals> },
    start: () => Promise<RunningDaemon>,
  ): Promise<RunningDaemon | undefined> => {
    for (;;) {
      let failure: unknown;
      try {
        return await start();
      } catch (error) {
        failure = error;
      }
      const space = stateDbSpace(config);
      if (!space || !disk.isDiskFull(failure, space)) throw failure;
      const error = (failure as Error).message;
      const paused = { since: Date.now(), freeBytes: space.freeBytes, error };
      log.error(
        { path: space.path, freeBytes: space.freeBytes, minFreeBytes: space.minFreeBytes },
        disk.diskReason(space, error),
      );
      let signal = signals.next();
      for (;;) {
        const woken = await Promise.race([delay(disk.DISK_RECHECK_MS), signal]);
        if (woken === 'SIGHUP') signal = signals.next();
        else if (woken) return undefined;
        const now = stateDbSpace(config);
        if (now && disk.diskStep(paused, now) === 'resume') break;
      }
      log.warn('the state DB has room again: work resumes');
    }
  };
  /** A watched folder is never created: a missing one is usually a share that is not mounted (yet). */
  const requireWatchedFolders = (config: Config) => {
    const missing = config.watch.flatMap((w, i) =>
      existsSync(w.path)
        ? []
        : [
            `watch[${i}].path: ${w.path} does not exist (not mounted?); docex-sync never creates a watched folder`,
          ],
    );
    if (missing.length) throw new ConfigError(missing.join('\n'), missing);
  };
  /**
   * One check_api_key before anything starts (no DB opened, no watcher): a refused key stops here
   * with check's message (exit 3); an unreachable service does not, the run starts and checks again.
   */
  const keyFirst = async (
    config: Config,
    client: DocexClient,
    env: NodeJS.ProcessEnv,
    now: () => number,
  ): Promise<StartOptions> => {
    const baseUrl = baseUrlFrom(config, env);
    const key = await preflight.checkKey(client, baseUrl);
    if (key.ok) return { keyAccepted: true };
    if (key.exitCode === exit.EXIT.auth) {
      recordKeyRefusal(config, key.problem, now);
      throw new exit.KeyRefusedError(key.problem);
    }
    return { keyUnchecked: { reason: key.problem, check: () => preflight.checkKey(client, baseUrl) } };
  };
  /**
   * The refusal goes into the state DB (made if there is none yet), so `status` says it after this
   * run exits 3 - unless another daemon holds the DB: that one runs with its own key, and a refusal
   * of this one's must not make it look broken. Nothing else happens: no file is looked at.
   */
  const recordKeyRefusal = (config: Config, message: string, now: () => number) => {
    let db: InstanceType<typeof StateDb> | undefined;
    try {
      db = new StateDb(config.state_db);
      db.lockExclusive(now());
      db.flags.markKeyRefused(now(), message);
    } catch {
      // Held by a running daemon, or not usable: the message on stderr is the record then.
    } finally {
      db?.close();
    }
  };
  return {
    loadConfig,
    requireWatchedFolders,
    keyFirst,
    startDaemon: daemon.startDaemon,
    startWithRoom,
    EXIT: exit.EXIT,
  };
};

async function runUntilStopped(ctx: Context): Promise<number> {
  const { loadConfig, requireWatchedFolders, keyFirst, startDaemon, startWithRoom, EXIT } = await engine();
  const { configFile, io } = ctx;
  const now = io.now ?? Date.now;
  let config = ctx.config;
  let log = ctx.logger(config);
  let client = ctx.client(config, log);
  requireWatchedFolders(config);
  const signals = signalQueue(io.signals ?? process, ['SIGINT', 'SIGTERM', 'SIGHUP']);
  try {
    const first = await keyFirst(config, client, io.env, now);
    let daemon = await startWithRoom(config, log, signals, () => startDaemon(config, client, log, first));
    if (!daemon) return EXIT.ok; // stopped while waiting for room
    for (;;) {
      const event = await Promise.race([
        daemon.failure.then((error) => ({ error })),
        signals.next().then((signal) => ({ signal })),
      ]);
      if ('signal' in event && event.signal === 'SIGHUP') {
        let next: { config: Config; log: Logger; client: DocexClient };
        try {
          const nextConfig = loadConfig(configFile);
          requireWatchedFolders(nextConfig);
          const nextLog = ctx.logger(nextConfig);
          next = { config: nextConfig, log: nextLog, client: ctx.client(nextConfig, nextLog) };
        } catch (error) {
          log.error(
            { config: configFile, problems: (error as ConfigError).problems ?? [(error as Error).message] },
            'SIGHUP: the changed config is refused; running on with the previous one',
          );
          continue;
        }
        let options: StartOptions;
        try {
          options = await keyFirst(next.config, next.client, io.env, now);
        } catch (error) {
          log.fatal(
            { config: configFile, err: (error as Error).message },
            'SIGHUP: the API key is refused; stopping',
          );
          daemon.db.flags.markKeyRefused(now(), (error as Error).message);
          await daemon.stop();
          throw error;
        }
        log.info({ config: configFile }, 'SIGHUP: reloading the config');
        await daemon.stop();
        ({ config, log, client } = next);
        const started = await startWithRoom(config, log, signals, () =>
          startDaemon(config, client, log, options),
        );
        if (!started) return EXIT.ok;
        daemon = started;
        log.info({ config: configFile }, 'config reloaded');
        continue;
      }
      await daemon.stop();
      if ('error' in event) throw event.error;
      return EXIT.ok;
    }
  } finally {
    signals.close();
  }
}

/** Signals as a queue, listened to for the whole run: one arriving during a reload is not lost (nor fatal). */
function signalQueue(source: Signals, names: NodeJS.Signals[]) {
  const queue: NodeJS.Signals[] = [];
  let wake: (() => void) | undefined;
  const handler = (signal: NodeJS.Signals) => {
    queue.push(signal);
    wake?.();
  };
  for (const name of names) source.on(name, handler);
  return {
    async next(): Promise<NodeJS.Signals> {
      while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      return queue.shift()!;
    },
    close: () => names.forEach((name) => source.off(name, handler)),
  };
}
