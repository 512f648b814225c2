/**
 * `docex-sync status`: the status page's snapshot (http.ts, also GET /api/status), read from the
 * state DB without a running daemon. `--json` prints it with two keys in front, `schema` and
 * `state_db`; docs/daemon.md ("status --json") documents the schema. Without a state DB the
 * snapshot is taken of an empty in-memory one, so the shape is the same, with zeros.
 */
import { existsSync } from 'node:fs';
import type { Config } from '../common/config.ts';
import { statusSnapshot, type StatusSnapshot } from '../status/read-model.ts';
import { StateDb } from '../store/state.ts';

export const STATUS_SCHEMA = 'docex-sync.status/1';

export type CliStatus = {
  schema: typeof STATUS_SCHEMA;
  state_db: { path: string; exists: boolean };
} & StatusSnapshot;

export function cliStatus(config: Config, now = Date.now): CliStatus {
  const exists = existsSync(config.state_db);
  const db = new StateDb(exists ? config.state_db : ':memory:');
  try {
    return {
      schema: STATUS_SCHEMA,
      state_db: { path: config.state_db, exists },
      ...statusSnapshot({ db, config, now }),
    };
  } finally {
    db.close();
  }
}

/** For a person: what needs attention first, then the counts. */
export function renderStatus(s: CliStatus): string {
  const lines: string[] = [];
  if (!s.state_db.exists) lines.push(`No state DB yet at ${s.state_db.path}: the daemon has not run.`);
  const paused = s.watches.filter((w) => w.paused);
  if (s.failed.total || paused.length || s.blocked.length || !s.health.ok) {
    lines.push('Needs attention:');
    for (const reason of s.health.reasons) lines.push(`  ${reason}`);
    for (const f of s.failed.files) lines.push(`  failed ${f.file}: ${f.reason ?? 'no reason recorded'}`);
    if (s.failed.total > s.failed.files.length)
      lines.push(`  ... and ${s.failed.total - s.failed.files.length} more failed file(s)`);
    for (const f of s.blocked) lines.push(`  held back ${f.file}: ${f.problem}`);
    if (s.failed.total)
      lines.push('  After fixing the cause: docex-sync retry --config FILE --all (or name the files).');
  }
  const total = Object.values(s.files).reduce((a, b) => a + b, 0);
  lines.push(`Files: ${total}`);
  for (const [state, n] of Object.entries(s.files)) lines.push(`  ${state.padEnd(11)} ${n}`);
  for (const w of s.watches) {
    const busy = Object.entries(w.files).filter(([, n]) => n > 0);
    lines.push(
      `Watch ${w.path}${w.paused ? ` (paused since ${w.paused.since})` : ''}: ${busy.map(([k, n]) => `${k} ${n}`).join(', ') || 'no files yet'}`,
    );
  }
  for (const m of s.mailboxes) {
    const connection = m.login_refused
      ? `login refused: ${m.login_refused}`
      : m.connected
        ? 'connected'
        : `not connected${m.last_error ? ` (${m.last_error.message})` : ''}`;
    lines.push(
      `Mailbox ${m.name} (${m.user} at ${m.host}, ${m.folder}): ${connection}; last seen ${m.last_seen ?? 'never'}; ${m.messages.taken ?? 0} message(s) taken, ${m.attachments} attachment(s), ${m.messages.duplicate ?? 0} duplicate(s), ${m.messages.skipped ?? 0} skipped`,
    );
    for (const k of m.skipped.slice(0, 3))
      lines.push(`  not taken: ${k.name} from "${k.subject}": ${k.reason}`);
  }
  lines.push(
    `Last hour: ${s.throughput.last_hour.processed} processed, ${s.throughput.last_hour.failed} failed`,
  );
  if (s.reruns.length) {
    lines.push('Last reruns:');
    for (const r of s.reruns)
      lines.push(
        `  ${r.started_at}  ${r.name}: ${r.status}, ${r.documents ?? '?'} document(s), ${r.rerun ?? 0} rerun, ${r.not_rerun ?? 0} not rerun`,
      );
  }
  if (s.pulls.length) {
    lines.push('Last pulls:');
    for (const p of s.pulls)
      lines.push(`  ${p.at}  ${p.status}, ${p.documents} document(s)${p.error ? `: ${p.error}` : ''}`);
  }
  return lines.join('\n');
}
