/** `docex-sync status`: what needs attention, files per state and per watch; the exit code says the health. */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { JSON_FLAG } from '@docex/cli-kit/flags';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'status',
  usage: 'docex-sync status --config FILE [--json]',
  description: `What needs attention (failed files with reasons, paused watches), files per state and per watch,
the oldest file still waiting, the last reruns and pull. --json: the schema in docs/daemon.md.
Exit code: 0 healthy, 1 needs attention, 6 failing.`,
  flags: [JSON_FLAG],
  async run(options, io) {
    const [{ open }, { cliStatus, renderStatus, STATUS_EXIT }] = await Promise.all([
      import('./context.ts'),
      import('../status/report.ts'),
    ]);
    const { config, out } = open(options, io);
    const snapshot = cliStatus(config, io.now);
    out(isOn(options, 'json') ? JSON.stringify(snapshot, null, 2) : renderStatus(snapshot));
    return STATUS_EXIT[snapshot.health.level];
  },
};
