/**
 * The review station (GET /review): one held document at a time, keyboard-first. Its original
 * inline beside its values: the general fields (value, confidence, the rule that fired, highlighted)
 * and the line items as a table; Approve, Reject (with a reason), Correct (edit values, then approve)
 * and Approve all (lists what it approves, asks, leaves fraud-flagged documents out unless ticked).
 * Server-rendered, every text from files or the service escaped; one inline script, allowed by its hash.
 */
import { createHash } from 'node:crypto';
import { extname } from 'node:path';
import { generalFieldsOf, lineItemTable, type DocumentData, type ReviewReason } from '@docex/shared';
import type { FileRow } from '../domain/lifecycle.ts';
import { heldReview } from '../outputs/review.ts';

const esc = (v: unknown) =>
  String(v ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
const show = (v: unknown) =>
  v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);

/** How the original is shown: the browser's PDF viewer, an image, text, or only a download. */
export type OriginalKind = 'pdf' | 'image' | 'text' | 'download';

/** By the name's extension, from a short list; anything else is a download (never run or sniffed). */
export const ORIGINAL_TYPES: Readonly<Record<string, { type: string; kind: OriginalKind }>> = {
  '.pdf': { type: 'application/pdf', kind: 'pdf' },
  '.png': { type: 'image/png', kind: 'image' },
  '.jpg': { type: 'image/jpeg', kind: 'image' },
  '.jpeg': { type: 'image/jpeg', kind: 'image' },
  '.gif': { type: 'image/gif', kind: 'image' },
  '.webp': { type: 'image/webp', kind: 'image' },
  '.txt': { type: 'text/plain; charset=utf-8', kind: 'text' },
  '.csv': { type: 'text/plain; charset=utf-8', kind: 'text' },
};
export const originalType = (path: string) =>
  ORIGINAL_TYPES[extname(path).toLowerCase()] ?? {
    type: 'application/octet-stream',
    kind: 'download' as const,
  };

export interface ReviewView {
  /** The documents waiting, oldest first (ids, names, whether a fraud rule held them). */
  queue: Array<{ id: number; file: string; fraud: boolean; reasons: string[] }>;
  /** The one shown; undefined when none waits. */
  current?: {
    row: FileRow;
    /** The document's data from its review.json, or why it cannot be read. */
    document: DocumentData | { problem: string };
  };
  counts: { review: number; held: number; failed: number };
  /** Open the Approve all panel at once (the status page's "Approve all" link). */
  approveAll: boolean;
}

const LINES_SHOWN = 500;

function fieldsTable(document: DocumentData, reasons: ReviewReason[]): string {
  const fields = generalFieldsOf(document);
  const byField = new Map<string, ReviewReason[]>();
  for (const r of reasons)
    if (r.field !== undefined) byField.set(r.field, [...(byField.get(r.field) ?? []), r]);
  // A required field the service did not return is a row too: it can be filled in.
  const names = [
    ...fields.map((f) => f.name),
    ...[...byField.keys()].filter((n) => !fields.some((f) => f.name === n)),
  ];
  const rows = names.map((name) => {
    const f = fields.find((x) => x.name === name) ?? { name, value: null, confidence: null };
    const fired = byField.get(name) ?? [];
    const raw = (document.General_fields as Record<string, unknown> | null | undefined)?.[name];
    const entry = (raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {}) as Record<
      string,
      unknown
    >;
    const corrected =
      'service_value' in entry
        ? `<div class="muted" data-testid="service-value">service said: ${esc(show(entry.service_value))} (confidence ${esc(
            show(entry.service_confidence ?? '—'),
          )})</div>`
        : '';
    return `<tr data-testid="field" data-field="${esc(name)}" class="${fired.length ? 'fired' : ''}"><th>${esc(name)}</th>
<td><span class="value" data-testid="field-value">${esc(show(f.value))}</span>${corrected}<input class="edit" name="${esc(name)}" value="${esc(show(f.value))}" aria-label="${esc(name)}" hidden></td>
<td data-testid="field-confidence">${f.confidence === null ? '—' : esc(f.confidence)}</td>
<td>${fired.map((r) => `<span class="rule" data-testid="field-rule">${esc(r.rule)}: ${esc(r.message)}</span>`).join('<br>')}</td></tr>`;
  });
  return `<table data-testid="fields"><thead><tr><th>Field</th><th>Value</th><th>Confidence</th><th>Rule that fired</th></tr></thead><tbody>${rows.join('\n')}</tbody></table>`;
}

function linesTable(document: DocumentData): string {
  const table = lineItemTable(document);
  if (table.count === 0) return '<p class="muted">No line items.</p>';
  const shown = Math.min(table.count, LINES_SHOWN);
  const rows: string[] = [];
  for (let i = 0; i < shown; i++) {
    const line = table.line(i);
    rows.push(
      `<tr data-testid="line"><td>${i + 1}</td>${table.names
        .map((n) => {
          const c = line[n]?.confidence;
          return `<td title="confidence ${c ?? '—'}">${esc(show(line[n]?.value))}</td>`;
        })
        .join('')}</tr>`,
    );
  }
  return `<table data-testid="lines"><thead><tr><th>#</th>${table.names.map((n) => `<th>${esc(n)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table>${
    table.count > shown ? `<p class="muted">First ${shown} of ${table.count} lines shown.</p>` : ''
  }`;
}

function original(row: FileRow): string {
  if (row.review_path === null)
    return '<p class="muted" data-testid="original">The original stays in the watched folder (on_success: keep); it is not served here.</p>';
  const { kind } = originalType(row.review_path);
  const src = `review/original/${row.id}`;
  if (kind === 'pdf' || kind === 'text')
    return `<iframe data-testid="original" data-kind="${kind}" src="${src}" title="the original document"></iframe>`;
  if (kind === 'image')
    return `<img data-testid="original" data-kind="image" src="${src}" alt="the original document">`;
  return `<p data-testid="original" data-kind="download">This type is not shown here: <a href="${src}" download>download the original</a>.</p>`;
}

export function renderReviewPage(view: ReviewView, options: { token?: string } = {}): string {
  const { queue, current, counts } = view;
  const index = current ? queue.findIndex((q) => q.id === current.row.id) : -1;
  const prev = index > 0 ? queue[index - 1]!.id : '';
  const next = index >= 0 && index < queue.length - 1 ? queue[index + 1]!.id : '';
  const now = `<p class="now" data-testid="now"><span data-testid="review-total">${counts.review}</span> waiting for review ·
<span data-testid="held-total">${counts.held}</span> held · <span data-testid="failed-total">${counts.failed}</span> failed</p>`;
  let body: string;
  if (!current) body = '<p data-testid="empty">No document waits for review.</p>';
  else {
    const { row } = current;
    const held = heldReview(row);
    const doc = current.document;
    const values =
      'problem' in doc
        ? `<p class="bad" data-testid="problem">Its values cannot be shown: ${esc(doc.problem)}</p>`
        : `<h3>General fields</h3>${fieldsTable(doc, held.reasons)}<h3>Line items</h3>${linesTable(doc)}`;
    body = `<article data-testid="document" data-id="${row.id}" data-next="${next}" data-prev="${prev}">
<h2><span data-testid="position">${index + 1} of ${queue.length}</span>: <span data-testid="file">${esc(row.path)}</span></h2>
<p>${row.route === null ? '' : `Route ${esc(row.route)} · `}Fraud: <span data-testid="fraud">${esc(held.fraud.verdict ?? '—')}${
      held.fraud.score === null ? '' : ` (${esc(held.fraud.score)})`
    }</span></p>
<ul data-testid="reasons">${held.reasons.map((r) => `<li>${esc(r.message)}</li>`).join('')}</ul>
<p class="actions"><button type="button" data-action="approve" data-testid="approve"><kbd>a</kbd> Approve</button>
<button type="button" data-action="reject" data-testid="reject"><kbd>r</kbd> Reject…</button>
<button type="button" data-action="edit" data-testid="edit"${'problem' in doc ? ' disabled' : ''}><kbd>e</kbd> Correct…</button>
<button type="button" data-action="prev"${prev === '' ? ' disabled' : ''}><kbd>k</kbd> Previous</button>
<button type="button" data-action="next"${next === '' ? ' disabled' : ''}><kbd>j</kbd> Next</button></p>
<form id="reject-form" data-testid="reject-form" hidden><label>Reason <input name="reason" data-testid="reject-reason" required maxlength="500" size="50"></label>
<button type="submit" data-testid="reject-confirm">Reject: to the failed folder</button> <button type="button" data-action="cancel">Cancel</button></form>
<p id="edit-bar" hidden><button type="button" data-action="save" data-testid="save">Save corrections and approve</button> <button type="button" data-action="cancel">Cancel</button></p>
<div class="split"><div class="doc">${original(row)}</div><div class="values">${values}</div></div></article>`;
  }
  const approveAll = queue.length
    ? `<section id="approve-all" data-testid="approve-all-panel"${view.approveAll ? '' : ' hidden'}><h2>Approve all</h2>
<p>These documents will be approved: their results go to output and their originals to the processed folder. A fraud-flagged one is left out unless you tick it.</p>
<ul>${queue
        .map(
          (q) =>
            `<li><label><input type="checkbox" data-testid="approve-all-item" value="${q.id}"${q.fraud ? '' : ' checked'}> ${esc(q.file)}${
              q.fraud ? ' <strong class="bad" data-testid="fraud-flag">fraud-flagged</strong>' : ''
            }</label> <span class="muted">${esc(q.reasons.join('; '))}</span></li>`,
        )
        .join('')}</ul>
<p><button type="button" data-action="approve-selected" data-testid="approve-all-confirm">Approve the ticked documents</button> <button type="button" data-action="cancel-all">Cancel</button></p></section>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="docex-sync-token" content="${esc(options.token ?? '')}">
<title>docex-sync review</title><style>${STYLE}</style></head>
<body><header><h1>Review</h1> <a href="./">status page</a>
<label class="who">Your name <input id="who" data-testid="who" maxlength="80" autocomplete="name"></label>
<button type="button" data-action="approve-all" data-testid="approve-all"${queue.length ? '' : ' disabled'}>Approve all ${queue.length}…</button></header>
${now}<p id="note" role="status" data-testid="note"></p>
<p class="muted keys">Keys: j next · k previous · a approve · r reject · e correct · Esc cancel</p>
${approveAll}${body}
<script>${SCRIPT}</script></body></html>`;
}

const STYLE = `body{font:15px/1.45 system-ui,sans-serif;margin:0;padding:.6rem 1.2rem;color:#1d2327}
header{display:flex;gap:1rem;align-items:baseline}h1{font-size:1.3rem;margin:.2rem 0}h2{font-size:1.05rem}h3{font-size:1rem;margin:.8rem 0 .3rem}
.who{margin-left:auto}.now{font-size:1.1rem}.muted{color:#667}.bad{color:#b42318}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.25rem .45rem;border-bottom:1px solid #dde;vertical-align:top}
tr.fired{background:#fff4e5}tr.fired th{border-left:4px solid #d97706}.rule{color:#8a4b00}
.split{display:flex;gap:1rem}.doc{flex:1 1 50%;min-width:0}.values{flex:1 1 50%;min-width:0;overflow:auto;max-height:80vh}
.doc iframe{width:100%;height:80vh;border:1px solid #ccd}.doc img{max-width:100%;border:1px solid #ccd}
button{font:inherit;padding:.2rem .7rem;cursor:pointer}kbd{font-size:.8em;border:1px solid #aab;border-radius:3px;padding:0 .25em}
#approve-all{background:#f4f6f8;padding:.4rem 1rem;border-radius:4px}`;

/** Keys and actions: each a JSON POST guarded like the status page's, then the next document. */
const SCRIPT = `
const token = document.querySelector('meta[name="docex-sync-token"]').content;
const note = document.getElementById('note');
const who = document.getElementById('who');
const doc = document.querySelector('[data-testid="document"]');
const rejectForm = document.getElementById('reject-form');
const editBar = document.getElementById('edit-bar');
const panel = document.getElementById('approve-all');
who.value = localStorage.getItem('docex-sync-reviewer') || '';
who.addEventListener('change', () => localStorage.setItem('docex-sync-reviewer', who.value.trim()));
const go = (id) => { location.href = id ? 'review?id=' + id : 'review'; };
let editing = false;
async function post(path, body) {
  const headers = { 'content-type': 'application/json', 'x-docex-sync-request': 'review' };
  if (token) headers['x-docex-sync-token'] = token;
  const answer = await fetch(path, { method: 'POST', headers, body: JSON.stringify({ ...body, by: who.value.trim() }) });
  const result = await answer.json().catch(() => ({ error: 'HTTP ' + answer.status }));
  if (!answer.ok) throw new Error(result.error || ('HTTP ' + answer.status));
  return result;
}
async function act(path, body, done) {
  try {
    const result = await post(path, body);
    const skipped = (result.skipped || []).map((s) => s.reason);
    if (result.reason) skipped.push(result.reason);
    note.textContent = done(result) + (skipped.length ? '; not done: ' + skipped.join('; ') : '');
    if (!skipped.length) setTimeout(() => go(doc && (doc.dataset.next || doc.dataset.prev)), 600);
  } catch (error) {
    note.textContent = 'Refused: ' + error.message;
  }
}
function edit(on) {
  editing = on;
  for (const input of document.querySelectorAll('input.edit')) input.hidden = !on;
  for (const span of document.querySelectorAll('span.value')) span.hidden = on;
  editBar.hidden = !on;
  if (on) { const first = document.querySelector('tr.fired input.edit') || document.querySelector('input.edit'); if (first) first.focus(); }
}
function cancel() { edit(false); rejectForm.hidden = true; if (panel) panel.hidden = true; }
const actions = {
  approve: () => doc && act('api/approve', { ids: [Number(doc.dataset.id)] }, (r) => r.approved.length + ' document(s) approved'),
  reject: () => { if (!doc) return; rejectForm.hidden = false; rejectForm.reason.focus(); },
  edit: () => doc && edit(true),
  save: () => {
    const values = {};
    for (const input of document.querySelectorAll('input.edit')) if (input.value !== input.defaultValue) values[input.name] = input.value;
    act('api/correct', { id: Number(doc.dataset.id), values }, (r) => r.approved ? 'approved' + (r.corrected.length ? ', corrected: ' + r.corrected.join(', ') : '') : 'not approved');
  },
  cancel,
  next: () => doc && doc.dataset.next && go(doc.dataset.next),
  prev: () => doc && doc.dataset.prev && go(doc.dataset.prev),
  'approve-all': () => { if (panel) panel.hidden = false; },
  'cancel-all': () => { panel.hidden = true; },
  'approve-selected': () => {
    const ids = [...panel.querySelectorAll('input[type=checkbox]:checked')].map((c) => Number(c.value));
    if (!ids.length) { note.textContent = 'Nothing ticked.'; return; }
    act('api/approve', { ids }, (r) => r.approved.length + ' document(s) approved').then(() => setTimeout(() => go(''), 600));
  },
};
document.addEventListener('click', (event) => {
  const button = event.target.closest('button[data-action]');
  if (button && actions[button.dataset.action]) actions[button.dataset.action]();
});
rejectForm && rejectForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const reason = rejectForm.reason.value.trim();
  if (!reason) return;
  act('api/reject', { ids: [Number(doc.dataset.id)], reason }, (r) => r.rejected.length + ' document(s) rejected: on their way to the failed folder');
});
document.addEventListener('keydown', (event) => {
  if (event.key === 'Escape') return cancel();
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.target.closest('input, textarea')) {
    if (editing && event.key === 'Enter' && event.target.classList.contains('edit')) actions.save();
    return;
  }
  const key = { j: 'next', k: 'prev', a: 'approve', r: 'reject', e: 'edit' }[event.key];
  if (key) { event.preventDefault(); actions[key](); }
});
`;

/** For the Content-Security-Policy: this script runs, no other inline script would. */
export const REVIEW_SCRIPT_HASH = `'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`;

/** The review page's CSP: its own script; the original framed or shown from this origin only. */
export const REVIEW_PAGE_CSP = `default-src 'none'; script-src ${REVIEW_SCRIPT_HASH}; style-src 'unsafe-inline'; img-src 'self'; frame-src 'self'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`;
