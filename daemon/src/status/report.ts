/**
 * What `docex-sync status` prints: the status page's snapshot (http.ts, also GET /api/status), read from the
 * state DB without a running daemon. `--json` prints it with two keys in front, `schema` and
 * `state_db`; docs/reference/status.md ("status --json") documents the schema. Without a state DB the
 * snapshot is taken of an empty in-memory one, so the shape is the same, with zeros.
 */
import { existsSync } from 'node:fs';
import type { ConfigSlice } from '../config/config.ts';
import {
  HEADLINE,
  statusSnapshot,
  type HealthLevel,
  type StatusConfig,
  type StatusSnapshot,
} from './read-model.ts';
import { StateDb } from '../store/state.ts';
import { stateDbSpace } from '../store/room.ts';
import { isDiskFull } from '../domain/disk-space.ts';
import { ACTIVE_STATES } from '../domain/lifecycle.ts';

export const STATUS_SCHEMA = 'docex-sync.status/1';

export type CliStatus = {
  schema: typeof STATUS_SCHEMA;
  state_db: { path: string; exists: boolean };
} & StatusSnapshot;

export function cliStatus(config: StatusConfig & ConfigSlice<'state_db'>, now = Date.now): CliStatus {
  const exists = existsSync(config.state_db);
  const db = exists ? openForStatus(config) : new StateDb(':memory:');
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

/** `status`'s exit code (docs/reference/exit-codes.md): 0 healthy, 1 needs attention, 6 failing. */
export const STATUS_EXIT: Record<HealthLevel, number> = { healthy: 0, attention: 1, failing: 6 };

/** For a person: the health and its reasons first, then the counts. */
export function renderStatus(s: CliStatus): string {
  const lines: string[] = [];
  if (!s.state_db.exists) lines.push(`No state DB yet at ${s.state_db.path}: the daemon has not run.`);
  lines.push(HEADLINE[s.health.level] + (s.health.reasons.length ? ':' : ''));
  for (const reason of s.health.reasons) lines.push(`  ${reason}`);
  for (const h of s.held.files) lines.push(`  held ${h.file}: ${h.reason ?? 'no reason recorded'}`);
  if (s.held.total > s.held.files.length)
    lines.push(`  ... and ${s.held.total - s.held.files.length} more held file(s)`);
  for (const r of s.review.files)
    lines.push(
      `  review ${r.file} (waiting in ${r.original}): ${r.reasons.join('; ') || 'no reason recorded'}`,
    );
  if (s.review.total > s.review.files.length)
    lines.push(`  ... and ${s.review.total - s.review.files.length} more file(s) waiting for review`);
  for (const f of s.failed.files) lines.push(`  failed ${f.file}: ${f.reason ?? 'no reason recorded'}`);
  if (s.failed.total > s.failed.files.length)
    lines.push(`  ... and ${s.failed.total - s.failed.files.length} more failed file(s)`);
  for (const f of s.blocked) lines.push(`  held back ${f.file}: ${f.problem}`);
  const total = Object.values(s.files).reduce((a, b) => a + b, 0);
  const queued = ACTIVE_STATES.reduce((n, state) => n + (s.files[state] ?? 0), 0);
  lines.push(
    `Now: ${queued} in the queue, ${s.review.total} waiting for review, ${s.held.total} held, ${s.failed.total} failed, ${s.files.archived ?? 0} finished (archived)`,
  );
  lines.push(`Files: ${total}`);
  for (const [state, n] of Object.entries(s.files)) lines.push(`  ${state.padEnd(11)} ${n}`);
  const busy = (files: Record<string, number>) =>
    Object.entries(files)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'no files yet';
  for (const w of s.watches) {
    lines.push(
      `Watch ${w.path}${w.paused ? ` (paused since ${w.paused.since})` : ''}${
        w.blind_watcher ? ` (watcher blind since ${w.blind_watcher.since}: ${w.blind_watcher.advice})` : ''
      }: ${busy(w.files)}`,
    );
    for (const r of w.routes)
      lines.push(
        `  route ${r.route === null ? '(top folder)' : r.route} → ${
          r.template_id !== null
            ? `template ${r.template_id}`
            : r.folder_id !== null
              ? `folder ${r.folder_id}`
              : 'held'
        }: ${busy(r.files)}`,
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
    for (const k of m.left?.last.slice(0, 3) ?? [])
      lines.push(`  ${m.left!.where}: "${k.subject}": ${k.reason}`);
  }
  lines.push(
    `Last hour: ${s.throughput.last_hour.processed} processed, ${s.throughput.last_hour.review} to review, ${s.throughput.last_hour.failed} failed`,
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

/** The state DB; on a disk too full to open it, a copy read into memory (health then says the disk is full). */
function openForStatus(config: StatusConfig): StateDb {
  try {
    return new StateDb(config.state_db);
  } catch (error) {
    const space = stateDbSpace(config);
    if (!space || !isDiskFull(error, space)) throw error;
    return StateDb.copyOf(config.state_db);
  }
}
