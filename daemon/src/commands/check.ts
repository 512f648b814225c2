/** `docex-sync check`: proves the config (keys, folders, key, ids) and exits; one line per problem. */
import type { Command } from '@docex/cli-kit/command';
import type { SyncIo } from './io.ts';

export const command: Command<SyncIo> = {
  name: 'check',
  usage: 'docex-sync check --config FILE',
  description: `Proves the config: the keys and cron expressions, the watched folders exist (never created), the output,
processed, failed and state folders are writable or can be created, the API key works and every
template_id / folder_id exists for it. One line per problem; exit 2 (3: key refused, 4: unreachable).`,
  flags: [],
  async run(options, io) {
    const [{ open }, { baseUrlFrom }, { checkConfig }] = await Promise.all([
      import('./context.ts'),
      import('../config/config.ts'),
      import('../app/preflight.ts'),
    ]);
    const ctx = open(options, io);
    const { config, configFile } = ctx;
    const baseUrl = baseUrlFrom(config, io.env);
    const report = await checkConfig(config, ctx.client(config), baseUrl, io.env);
    for (const problem of report.problems) io.stderr.write(`docex-sync check: ${configFile}: ${problem}\n`);
    for (const line of report.mailboxes ?? []) ctx.out(line);
    if (report.exitCode === 0)
      ctx.out(
        `${configFile}: the config is valid, its folders are usable, the API key is accepted by ${baseUrl}, and every template and folder it names exists.`,
      );
    return report.exitCode;
  },
};
