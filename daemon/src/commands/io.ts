/**
 * What a docex-sync command gets besides its options: the common Io, plus the client factory and the
 * signals `run` listens to, so a test runs any command in-process against the emulator. Light: the
 * table and --help load this.
 */
import type { Logger } from 'pino';
import type { DocexClient } from '@docex/shared';
import { text, type Options } from '@docex/cli-kit/args';
import type { Io } from '@docex/cli-kit/command';
import type { Config } from '../config/config.ts';
import { UsageError } from '@docex/cli-kit/errors';
import type { Signals } from '../app/run.ts';

export interface SyncIo extends Io {
  /** The client for a config (default: the Node client with the config's api section). */
  client?: (config: Config, log?: Logger) => DocexClient;
  /** Where `run` hears SIGINT, SIGTERM and SIGHUP (default: the process). */
  signals?: Signals;
}

/** --config FILE, else DOCEX_SYNC_CONFIG; every docex-sync command needs one. */
export function configFileOf(options: Options, io: Io): string {
  const file = text(options, 'config') ?? io.env.DOCEX_SYNC_CONFIG;
  if (!file) throw new UsageError('--config FILE is required (or DOCEX_SYNC_CONFIG)');
  return file;
}
