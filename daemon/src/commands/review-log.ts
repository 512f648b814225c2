/** `docex-sync review log`: the audit trail, who approved, rejected, corrected or retried what, and when. */
import { isOn, text } from '@docex/cli-kit/args';
import type { Command } from '@docex/cli-kit/command';
import { UsageError } from '@docex/cli-kit/errors';
import { EXIT } from '@docex/cli-kit/exit-codes';
import { JSON_FLAG } from '@docex/cli-kit/flags';
import type { SyncIo } from './io.ts';

/** `--json`'s schema name (docs/daemon.md). */
export const REVIEW_LOG_SCHEMA = 'docex-sync.review-log/1';

const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** --since: a duration back from now (30m, 24h, 7d) or a date or time (2026-11-27, 2026-11-27T09:00:00Z). */
export function sinceOf(value: string | undefined, now: number): number {
  if (value === undefined) return 0;
  const ago = /^(\d+)\s*([mhd])$/i.exec(value.trim());
  if (ago) return now - Number(ago[1]) * UNITS[ago[2]!.toLowerCase()]!;
  const at = Date.parse(value);
  if (!Number.isNaN(at) && /^\d{4}-\d{2}-\d{2}/.test(value)) return at;
  throw new UsageError(
    `--since ${value}: give how long back (30m, 24h, 7d) or a date or time (2026-11-27, 2026-11-27T09:00:00Z)`,
  );
}

export const command: Command<SyncIo> = {
  name: 'review log',
  usage: 'docex-sync review log --config FILE [--since WHEN] [--json]',
  description: `The audit trail, oldest first: each approve, reject, correct and retry, from the status page or the
command line, with when, who (the name given on the page, or the user who ran the command), the file,
and what changed (a corrected value's old and new value, a rejection's reason).
--since: how long back (30m, 24h, 7d) or from a date or time. --json: the schema in docs/daemon.md.`,
  flags: [
    { name: 'since', value: 'WHEN', help: 'only from then on: 30m, 24h, 7d, or a date or time' },
    JSON_FLAG,
  ],
  async run(options, io) {
    const now = (io.now ?? Date.now)();
    const since = sinceOf(text(options, 'since'), now);
    const [{ open }, { existsSync }, { StateDb }, { AuditTrail, describeAudit }] = await Promise.all([
      import('./context.ts'),
      import('node:fs'),
      import('../store/state.ts'),
      import('../store/audit.ts'),
    ]);
    const { config, out } = open(options, io);
    let rows: ReturnType<InstanceType<typeof AuditTrail>['since']> = [];
    if (existsSync(config.state_db)) {
      const db = new StateDb(config.state_db);
      try {
        rows = new AuditTrail(db.db).since(since);
      } finally {
        db.close();
      }
    }
    if (isOn(options, 'json')) {
      out(
        JSON.stringify(
          {
            schema: REVIEW_LOG_SCHEMA,
            total: rows.length,
            entries: rows.map((r) => ({
              at: new Date(r.at).toISOString(),
              who: r.who,
              via: r.via,
              action: r.action,
              file_id: r.file_id,
              file: r.file,
              field: r.field,
              old_value: r.old_value,
              new_value: r.new_value,
              reason: r.note,
            })),
          },
          null,
          2,
        ),
      );
      return EXIT.ok;
    }
    if (rows.length === 0) {
      out('No review decision recorded' + (since ? ' in that time.' : ' yet.'));
      return EXIT.ok;
    }
    out(rows.map((r) => `${new Date(r.at).toISOString()}  ${describeAudit(r)}`).join('\n'));
    return EXIT.ok;
  },
};
