/** `docex-sync prune`: what retention says is old enough, deleted (or, with --dry-run, only listed). */
import { isOn } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { EXIT } from '@docex/cli-kit/exit-codes';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'prune',
  usage: 'docex-sync prune --config FILE [--dry-run]',
  description: `Deletes the processed originals, failed originals (with their .error.json) and result files that are
older than their watch's retention days, counted from when the state DB recorded them. Only files the
state DB records as moved or written by docex-sync, and only while they are unchanged; nothing else.
A file waiting for review is never deleted.`,
  flags: [{ name: 'dry-run', help: 'print each file it would delete and the bytes; delete nothing' }],
  async run(options, io) {
    // The work is imported here, not at the top: `prune --help` loads this file.
    const [{ open }, { prune }] = await Promise.all([import('./context.ts'), import('../jobs/retention.ts')]);
    const { config, out } = open(options, io);
    const report = await prune(config, { dryRun: isOn(options, 'dry-run'), out, now: io.now });
    return report.entries.some((e) => e.outcome === 'error') ? EXIT.failure : EXIT.ok;
  },
};
