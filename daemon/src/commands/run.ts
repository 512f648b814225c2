/**
 * `docex-sync run`: opens the config and hands the run to app/run.ts, which holds its lifecycle
 * (start, signals, SIGHUP reload, shutdown order). Light: the table and --help load this file.
 */
import type { Command } from '@docex/cli-kit/command';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'run',
  usage: 'docex-sync run --config FILE',
  description: `Runs until SIGINT/SIGTERM, then lets work in flight reach a safe state and exits 0.
SIGHUP reloads the config (a config with mistakes is refused and the running one kept).`,
  flags: [],
  async run(options, io) {
    // The run is imported here, not at the top: `run --help` loads this file.
    const { open } = await import('./context.ts');
    const { configFile, config, client, logger } = open(options, io); // a config's mistakes stop here
    const { runUntilStopped } = await import('../app/run.ts');
    return runUntilStopped({
      configFile,
      config,
      env: io.env,
      now: io.now ?? Date.now,
      signals: io.signals ?? process,
      logger,
      client,
    });
  },
};
