/**
 * The status page: server-rendered HTML; a small script swaps in a fresh <main> every few seconds
 * and sends Retry as a JSON POST. Every text from files or the service is escaped.
 */
import { createHash } from 'node:crypto';
import { HEADLINE, type StatusSnapshot } from './read-model.ts';
import { FILE_STATES } from '../domain/lifecycle.ts';

const esc = (v: unknown) =>
  String(v ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

const when = (isoTime: string | null) =>
  isoTime
    ? `<time datetime="${esc(isoTime)}">${esc(isoTime.replace('T', ' ').slice(0, 19))} UTC</time>`
    : '—';

const QUEUED = ['discovered', 'stable', 'uploading', 'uploaded', 'done'] as const;

function counts(files: Record<string, number>, testid: string) {
  return FILE_STATES.map(
    (s) => `<td data-testid="${esc(testid)}-${s}" class="${files[s] ? '' : 'zero'}">${files[s] ?? 0}</td>`,
  ).join('');
}

export function renderMain(s: StatusSnapshot): string {
  const queued = QUEUED.reduce((n, state) => n + (s.files[state] ?? 0), 0);
  const health = `<div class="banner ${s.health.level}" data-testid="health" data-level="${s.health.level}"><strong>${
    HEADLINE[s.health.level]
  }</strong>${
    s.health.reasons.length ? `<ul>${s.health.reasons.map((r) => `<li>${esc(r)}</li>`).join('')}</ul>` : ''
  }</div>`;
  const service = s.service.key_refused
    ? `<span class="bad">the API key was refused</span>`
    : s.service.reachable
      ? `<span class="ok">reachable</span>`
      : `<span class="bad">unreachable since ${when(s.service.since)}: ${esc(s.service.reason)}</span>`;
  const summary = `<section><h2>Now</h2>
<p class="big"><span data-testid="queued">${queued}</span> in the queue ·
<span data-testid="review-total">${s.review.total}</span> waiting for review ·
<span data-testid="held-total">${s.held.total}</span> held ·
<span data-testid="failed-total">${s.failed.total}</span> failed ·
<span data-testid="archived">${s.files.archived ?? 0}</span> finished (archived)</p>
<p>Service: ${service}</p>
<p>Last hour: <strong data-testid="hour-processed">${s.throughput.last_hour.processed}</strong> processed,
<strong data-testid="hour-review">${s.throughput.last_hour.review}</strong> to review,
<strong>${s.throughput.last_hour.failed}</strong> failed</p>
<p class="muted" data-testid="per-10-minutes">Per 10 minutes, newest first: ${s.throughput.per_10_minutes
    .map(
      (b) =>
        `${b.processed} processed${b.review ? `, ${b.review} to review` : ''}${b.failed ? `, ${b.failed} failed` : ''}`,
    )
    .join('; ')}.</p></section>`;
  const watches = `<section><h2>Watched folders</h2><table><thead><tr><th>Folder</th>${FILE_STATES.map(
    (st) => `<th>${st}</th>`,
  ).join('')}</tr></thead><tbody>
<tr class="total"><th>All</th>${counts(s.files, 'files')}</tr>
${s.watches
  .map(
    (w, i) =>
      `<tr><th>${esc(w.path)}${
        w.paused
          ? `<div class="bad" data-testid="paused-${i}">paused since ${when(w.paused.since)}: ${esc(w.paused.reason)}</div>`
          : ''
      }${
        w.blind_watcher
          ? `<div class="bad" data-testid="blind-${i}">watcher hears nothing since ${when(w.blind_watcher.since)}: ${w.blind_watcher.rescans} rescans found ${w.blind_watcher.files} file(s) no event reported; ${esc(w.blind_watcher.advice)}</div>`
          : ''
      }</th>${counts(w.files, `watch-${i}`)}</tr>${w.routes
        .map(
          (r, j) =>
            `<tr class="route"><td>↳ ${r.route === null ? '(top folder)' : esc(r.route)} <span class="muted">${
              r.template_id !== null
                ? `template ${r.template_id}`
                : r.folder_id !== null
                  ? `folder ${r.folder_id}`
                  : 'held'
            }</span></td>${counts(r.files, `route-${i}-${j}`)}</tr>`,
        )
        .join('')}`,
  )
  .join('\n')}
</tbody></table>
<p class="muted" data-testid="states-legend">discovered: waiting to settle · stable: ready to upload · uploading · uploaded: the service is extracting · done: results written, the original not moved yet · archived: finished, the original moved to the processed folder (or deleted or kept, per on_success) · failed: see below.</p></section>`;
  const mailboxes = s.mailboxes.length
    ? `<section><h2>Mailboxes</h2><table><thead><tr><th>Mailbox</th><th>Connection</th><th>Last seen</th><th>Messages taken</th><th>Attachments</th><th>Duplicates</th><th>Skipped</th></tr></thead><tbody>${s.mailboxes
        .map(
          (m, i) =>
            `<tr data-testid="mailbox-${i}"><th>${esc(m.name)} <span class="muted">${esc(m.user)} · ${esc(m.host)} · ${esc(m.folder)}</span></th><td>${
              m.login_refused
                ? `<span class="bad">login refused: ${esc(m.login_refused)}</span>`
                : m.connected
                  ? `<span class="ok">connected${m.idle ? ' (IDLE)' : ' (polling)'}</span>`
                  : `<span class="bad">not connected</span>${m.last_error ? `: ${esc(m.last_error.message)}` : ''}`
            }</td><td>${when(m.last_seen)}</td><td>${m.messages.taken ?? 0}</td><td>${m.attachments}</td><td>${m.messages.duplicate ?? 0}</td><td>${m.messages.skipped ?? 0}</td></tr>${m.skipped
              .map(
                (k) =>
                  `<tr><td></td><td colspan="6" class="muted">not taken: ${esc(k.name)} from “${esc(k.subject)}” (${esc(k.from)}): ${esc(k.reason)}</td></tr>`,
              )
              .join('')}${(m.left?.last ?? [])
              .map(
                (k) =>
                  `<tr><td></td><td colspan="6" class="muted">${esc(m.left!.where)}: “${esc(k.subject)}” (${esc(k.from)}): ${esc(k.reason)}</td></tr>`,
              )
              .join('')}`,
        )
        .join('')}</tbody></table></section>`
    : '';
  const failed = `<section><h2>Failed files</h2>${
    s.failed.total === 0
      ? '<p class="muted" data-testid="no-failed">None.</p>'
      : `<p><button type="button" data-retry="all" data-testid="retry-all">Retry all ${s.failed.total}</button>${
          s.failed.total > s.failed.files.length
            ? ` <span class="muted">(newest ${s.failed.files.length} shown)</span>`
            : ''
        }</p>
<table data-testid="failed"><thead><tr><th>File</th><th>Reason</th><th>Attempts</th><th>When</th><th></th></tr></thead><tbody>
${s.failed.files
  .map(
    (f) =>
      `<tr data-testid="failed-row" data-id="${f.id}"><td>${esc(f.file)}</td><td>${esc(f.reason)}</td><td>${f.attempts}</td><td>${when(
        f.at,
      )}</td><td><button type="button" data-retry="${f.id}">Retry</button></td></tr>`,
  )
  .join('\n')}
</tbody></table>`
  }</section>`;
  const review = s.review.total
    ? `<section><h2>Waiting for review</h2><p class="muted">A review rule held them: their original and results are in the watch's review_dir. Approve moves them on to the processed folder and the output folder.</p>
<p><a href="review" data-testid="open-review">Open the review station</a> (one document at a time, beside its values) ·
<a href="review?all=1" data-testid="approve-all">Approve all ${s.review.total}…</a> (lists them and asks first)${
        s.review.total > s.review.files.length
          ? ` <span class="muted">(oldest ${s.review.files.length} shown)</span>`
          : ''
      }</p>
<table data-testid="review"><thead><tr><th>File</th><th>Why</th><th>Waiting in</th><th>Since</th><th></th></tr></thead><tbody>
${s.review.files
  .map(
    (f) =>
      `<tr data-testid="review-row" data-id="${f.id}"><td>${esc(f.file)}${
        f.route === null ? '' : ` <span class="muted">(${esc(f.route)})</span>`
      }</td><td><ul>${f.reasons.map((r) => `<li>${esc(r)}</li>`).join('')}</ul></td><td>${esc(f.original)}</td><td>${when(
        f.since,
      )}</td><td><button type="button" data-approve="${f.id}">Approve</button></td></tr>`,
  )
  .join('\n')}
</tbody></table></section>`
    : '';
  const held = s.held.total
    ? `<section><h2>Held: no route maps them</h2><p class="muted">Add a route for their subfolder (the daemon looks at them again after a reload), or move them into a mapped one.</p><ul data-testid="held">${s.held.files
        .map((h) => `<li data-testid="held-row">${esc(h.file)}: ${esc(h.reason)}</li>`)
        .join('')}</ul></section>`
    : '';
  const blocked = s.blocked.length
    ? `<section><h2>Held back by a local problem</h2><ul>${s.blocked
        .map((b) => `<li>${esc(b.file)} (${esc(b.state)}): ${esc(b.problem)}</li>`)
        .join('')}</ul></section>`
    : '';
  const reruns = `<section><h2>Last reruns</h2>${
    s.reruns.length
      ? `<table><thead><tr><th>Name</th><th>Status</th><th>Started</th><th>Finished</th><th>Documents</th><th>Rerun</th><th>Not rerun</th></tr></thead><tbody>${s.reruns
          .map(
            (r) =>
              `<tr><td>${esc(r.name)}</td><td>${esc(r.status)}</td><td>${when(r.started_at)}</td><td>${when(
                r.finished_at,
              )}</td><td>${r.documents ?? '—'}</td><td>${r.rerun ?? '—'}</td><td>${r.not_rerun ?? '—'}</td></tr>`,
          )
          .join('')}</tbody></table>`
      : '<p class="muted">None yet.</p>'
  }</section>`;
  const pulls = `<section><h2>Last pulls</h2>${
    s.pulls.length
      ? `<table><thead><tr><th>When</th><th>Status</th><th>Documents</th></tr></thead><tbody>${s.pulls
          .map(
            (p) =>
              `<tr><td>${when(p.at)}</td><td>${esc(p.status)}${p.error ? `: ${esc(p.error)}` : ''}</td><td>${p.documents}</td></tr>`,
          )
          .join('')}</tbody></table>`
      : '<p class="muted">None yet.</p>'
  }</section>`;
  return `${health}${summary}${watches}${mailboxes}${review}${held}${failed}${blocked}${reruns}${pulls}
<p class="muted">Updated <span data-testid="generated-at">${when(s.generated_at)}</span></p>`;
}

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:1rem 1.5rem;color:#1d2327}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:1.6rem}table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #dde}td{font-variant-numeric:tabular-nums}
.zero{color:#aab}.ok{color:#1a7f37}.bad{color:#b42318}.banner{padding:.5rem .8rem;border-radius:4px}.banner.healthy{background:#e6f4ea;color:#1a7f37}.banner.attention{background:#fff4e5;color:#8a4b00}.banner.failing{background:#fde8e8;color:#b42318}.muted{color:#667}.big{font-size:1.25rem}
.total{background:#f4f6f8}button{font:inherit;padding:.2rem .8rem;cursor:pointer}#note{min-height:1.4em}`;

/** The whole page; the token (when the listener has one) is in a meta tag for the script's requests. */
export function renderPage(s: StatusSnapshot, options: { token?: string } = {}): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="docex-sync-token" content="${esc(options.token ?? '')}">
<title>docex-sync status</title><style>${STYLE}</style></head>
<body><h1>docex-sync</h1><p id="note" role="status" data-testid="note"></p>
<main id="status">${renderMain(s)}</main>
<script>${SCRIPT}</script></body></html>`;
}

/** Refresh without reload (every 3 s while the tab is visible), Retry and Approve (one file, or all). */
const SCRIPT = `
const token = document.querySelector('meta[name="docex-sync-token"]').content;
const main = document.getElementById('status');
const note = document.getElementById('note');
const headers = token ? { 'x-docex-sync-token': token } : {};
let busy = false;
async function refresh() {
  if (busy) return;
  busy = true;
  try {
    const answer = await fetch('partial', { headers, cache: 'no-store' });
    if (answer.ok) main.innerHTML = await answer.text();
    else note.textContent = 'Could not refresh: HTTP ' + answer.status;
  } catch (error) {
    note.textContent = 'The daemon cannot be reached: ' + error.message;
  } finally {
    busy = false;
  }
}
setInterval(() => { if (!document.hidden) refresh(); }, 3000);
document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(); });
main.addEventListener('click', async (event) => {
  const button = event.target.closest('button[data-retry], button[data-approve]');
  if (!button) return;
  button.disabled = true;
  const approve = button.dataset.approve !== undefined;
  const which = approve ? button.dataset.approve : button.dataset.retry;
  const what = approve ? 'Approve' : 'Retry';
  try {
    const answer = await fetch(approve ? 'api/approve' : 'api/retry', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'x-docex-sync-request': approve ? 'approve' : 'retry' },
      body: JSON.stringify(which === 'all' ? { all: true } : { ids: [Number(which)] }),
    });
    const result = await answer.json();
    const skipped = answer.ok && result.skipped.length
      ? '; not ' + (approve ? 'approved' : 'retried') + ': ' + result.skipped.map((s) => s.reason).join('; ')
      : '';
    note.textContent = answer.ok
      ? (approve
          ? result.approved.length + ' file(s) approved: on their way to the processed and output folders'
          : result.retried.length + ' file(s) back in the queue') + skipped
      : what + ' refused: ' + result.error;
  } catch (error) {
    note.textContent = what + ' failed: ' + error.message;
  }
  await refresh();
});
`;

/** For the Content-Security-Policy: this script runs, no other inline script would. */
export const SCRIPT_HASH = `'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`;
