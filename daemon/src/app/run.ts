/**
 * A run's lifecycle, from start to stop, for `docex-sync run` (commands/run.ts parses and calls):
 * the watched folders must exist, one key check before anything starts, the daemon started (and,
 * on a disk too full to open the state DB, started again when there is room), then it runs until
 * SIGINT/SIGTERM (stopped, exit 0) or a refused API key (exit 3). SIGHUP reloads the config: a
 * changed config that is invalid is refused with its problems in the log, and the running one stays;
 * a valid one stops the daemon and starts it again on the new config.
 */
import { existsSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import { EXIT, KeyRefusedError } from '@docex/cli-kit/exit';
import { baseUrlFrom, ConfigError, loadConfig, type Config } from '../config/config.ts';
import { diskReason, diskStep, DISK_RECHECK_MS, isDiskFull } from '../domain/disk-space.ts';
import { stateDbSpace } from '../store/room.ts';
import { StateDb } from '../store/state.ts';
import { startDaemon, type RunningDaemon, type StartOptions } from './daemon.ts';
import { checkKey } from './preflight.ts';

/** Where a run hears SIGINT, SIGTERM and SIGHUP (the process, or a test's emitter). */
export interface Signals {
  on(signal: NodeJS.Signals, handler: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, handler: (signal: NodeJS.Signals) => void): unknown;
}

/** What a run is given by its command: the config as loaded, and how to make its logger and client. */
export interface RunInputs {
  /** The config's file, read again on SIGHUP. */
  configFile: string;
  config: Config;
  env: NodeJS.ProcessEnv;
  now: () => number;
  signals: Signals;
  logger(config: Config): Logger;
  client(config: Config, log?: Logger): DocexClient;
}

/** Runs the daemon until it is stopped; the exit code (a refused key or a failure is thrown). */
export async function runUntilStopped(inputs: RunInputs): Promise<number> {
  const { configFile, env, now } = inputs;
  let config = inputs.config;
  let log = inputs.logger(config);
  let client = inputs.client(config, log);
  requireWatchedFolders(config);
  const signals = signalQueue(inputs.signals, ['SIGINT', 'SIGTERM', 'SIGHUP']);
  try {
    const first = await keyFirst(config, client, env, now);
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
          const nextLog = inputs.logger(nextConfig);
          next = { config: nextConfig, log: nextLog, client: inputs.client(nextConfig, nextLog) };
        } catch (error) {
          log.error(
            { config: configFile, problems: (error as ConfigError).problems ?? [(error as Error).message] },
            'SIGHUP: the changed config is refused; running on with the previous one',
          );
          continue;
        }
        let options: StartOptions;
        try {
          options = await keyFirst(next.config, next.client, env, now);
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

/**
 * Starts the daemon; when that fails for lack of room for the state DB (a full disk cannot even
 * open it), says so once and starts again when there is room, as a running daemon pauses and
 * resumes. Undefined when SIGINT/SIGTERM came first.
 */
async function startWithRoom(
  config: Config,
  log: Logger,
  signals: { next(): Promise<NodeJS.Signals> },
  start: () => Promise<RunningDaemon>,
): Promise<RunningDaemon | undefined> {
  for (;;) {
    let failure: unknown;
    try {
      return await start();
    } catch (error) {
      failure = error;
    }
    const space = stateDbSpace(config);
    if (!space || !isDiskFull(failure, space)) throw failure;
    const error = (failure as Error).message;
    const paused = { since: Date.now(), freeBytes: space.freeBytes, error };
    log.error(
      { path: space.path, freeBytes: space.freeBytes, minFreeBytes: space.minFreeBytes },
      diskReason(space, error),
    );
    let signal = signals.next();
    for (;;) {
      const woken = await Promise.race([delay(DISK_RECHECK_MS), signal]);
      if (woken === 'SIGHUP') signal = signals.next();
      else if (woken) return undefined;
      const now = stateDbSpace(config);
      if (now && diskStep(paused, now) === 'resume') break;
    }
    log.warn('the state DB has room again: work resumes');
  }
}

/** A watched folder is never created: a missing one is usually a share that is not mounted (yet). */
function requireWatchedFolders(config: Config) {
  const missing = config.watch.flatMap((w, i) =>
    existsSync(w.path)
      ? []
      : [
          `watch[${i}].path: ${w.path} does not exist (not mounted?); docex-sync never creates a watched folder`,
        ],
  );
  if (missing.length) throw new ConfigError(missing.join('\n'), missing);
}

/**
 * One check_api_key before anything starts (no DB opened, no watcher): a refused key stops here
 * with check's message (exit 3); an unreachable service does not, the run starts and checks again.
 */
async function keyFirst(
  config: Config,
  client: DocexClient,
  env: NodeJS.ProcessEnv,
  now: () => number,
): Promise<StartOptions> {
  const baseUrl = baseUrlFrom(config, env);
  const key = await checkKey(client, baseUrl);
  if (key.ok) return { keyAccepted: true };
  if (key.exitCode === EXIT.auth) {
    recordKeyRefusal(config, key.problem, now);
    throw new KeyRefusedError(key.problem);
  }
  return { keyUnchecked: { reason: key.problem, check: () => checkKey(client, baseUrl) } };
}

/**
 * The refusal goes into the state DB (made if there is none yet), so `status` says it after this
 * run exits 3 - unless another daemon holds the DB: that one runs with its own key, and a refusal
 * of this one's must not make it look broken. Nothing else happens: no file is looked at.
 */
function recordKeyRefusal(config: Config, message: string, now: () => number) {
  let db: StateDb | undefined;
  try {
    db = new StateDb(config.state_db);
    db.lockExclusive(now());
    db.flags.markKeyRefused(now(), message);
  } catch {
    // Held by a running daemon, or not usable: the message on stderr is the record then.
  } finally {
    db?.close();
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
