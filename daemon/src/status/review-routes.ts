/**
 * The review station's routes, behind the status page's guards (status/http.ts: its own host names
 * only, changes as same-origin JSON with the custom header, the token off loopback):
 *
 * - GET /review[?id=N]: the page (status/review-page.ts);
 * - GET /review/original/N: the original of held file N, served only from its watch's review_dir,
 *   found by the row's id, never by a path from the request: the row must wait for review, its
 *   recorded place must resolve (links followed) inside review_dir and be a regular file. A type from
 *   a short list, else a download; Content-Disposition, nosniff and a CSP of its own;
 * - POST /api/reject {ids, reason, by}, POST /api/correct {id, values, by}.
 */
import { constants } from 'node:fs';
import { open, realpath } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, isAbsolute, relative } from 'node:path';
import { correctAndApprove } from '../actions/correct.ts';
import { rejectReviewed } from '../actions/reject.ts';
import type { RetryConfig } from '../actions/retry.ts';
import { allWatches } from '../intake/sources.ts';
import { readOwnReview, fraudFlagged } from '../outputs/review-decisions.ts';
import { cleanText, heldReview } from '../outputs/review.ts';
import type { Actor } from '../store/audit.ts';
import type { StateDb } from '../store/state.ts';
import { originalType, renderReviewPage, type ReviewView } from './review-page.ts';

export interface ReviewDeps {
  db: StateDb;
  config: RetryConfig;
  wake?: () => void;
}

/** Who acts on the page: the name its user typed (kept by their browser), else the page and the caller's address. */
export function pageActor(body: unknown, req: IncomingMessage): Actor {
  const by = body && typeof body === 'object' ? (body as { by?: unknown }).by : undefined;
  const name = typeof by === 'string' ? cleanText(by.trim(), 80) : '';
  return { who: name || `status page user at ${req.socket.remoteAddress ?? 'unknown address'}`, via: 'page' };
}

type Answer = { status: number; body: unknown };

export async function reviewChange(
  path: '/api/reject' | '/api/correct',
  body: unknown,
  deps: ReviewDeps,
  actor: Actor,
): Promise<Answer> {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  const context = { ...deps, actor };
  if (path === '/api/reject') {
    const ids = b.ids;
    const reason = typeof b.reason === 'string' ? b.reason.trim() : '';
    if (
      !Array.isArray(ids) ||
      ids.length === 0 ||
      ids.length > 1000 ||
      !ids.every((id) => Number.isSafeInteger(id) && id > 0)
    )
      return { status: 400, body: { error: 'send {"ids": [file ids], "reason": "why"}' } };
    if (!reason || reason.length > 500)
      return { status: 400, body: { error: 'a reason (at most 500 characters) is required to reject' } };
    return { status: 200, body: await rejectReviewed(context, ids as number[], reason) };
  }
  const values = b.values;
  if (
    !Number.isSafeInteger(b.id) ||
    (b.id as number) <= 0 ||
    !values ||
    typeof values !== 'object' ||
    Array.isArray(values) ||
    !Object.values(values).every((v) => typeof v === 'string')
  )
    return { status: 400, body: { error: 'send {"id": file id, "values": {"field": "text", ...}}' } };
  return {
    status: 200,
    body: await correctAndApprove(context, b.id as number, values as Record<string, string>),
  };
}

/** The page for `?id=N` (else the oldest waiting). */
export async function reviewPage(deps: ReviewDeps, url: URL, token: string | undefined): Promise<string> {
  const { db } = deps;
  const waiting = db.fileCounts.inReview(1000);
  const counts = db.fileCounts.counts();
  const wanted = Number(url.searchParams.get('id'));
  const row = waiting.find((r) => r.id === wanted) ?? waiting[0];
  const view: ReviewView = {
    queue: waiting.map((r) => ({
      id: r.id,
      file: r.path,
      fraud: fraudFlagged(r),
      reasons: heldReview(r).reasons.map((x) => x.message),
    })),
    counts: { review: counts.review ?? 0, held: counts.held ?? 0, failed: counts.failed ?? 0 },
    approveAll: url.searchParams.has('all'),
  };
  if (row) {
    const watch = allWatches(deps.config).get(row.watch);
    const own = watch?.review_dir
      ? await readOwnReview(watch, row)
      : { problem: 'its watched folder is no longer configured' };
    view.current = { row, document: 'problem' in own ? own : own.review.document };
  }
  return renderReviewPage(view, { token });
}

const notFound = (res: ServerResponse, why: string) =>
  res
    .writeHead(404, {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    })
    .end(`${why}\n`);

/** `inner` is `root` or below it (both real paths). */
const within = (root: string, inner: string) => {
  const rel = relative(root, inner);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

/** RFC 6266: an ASCII fallback and the UTF-8 name. */
const disposition = (kind: 'inline' | 'attachment', name: string) =>
  `${kind}; filename="${name.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`;

export async function serveOriginal(deps: ReviewDeps, idText: string, res: ServerResponse, head: boolean) {
  if (!/^[1-9]\d{0,15}$/.test(idText)) return notFound(res, 'no such document');
  const row = deps.db.files.get(Number(idText));
  if (row?.state !== 'review' || row.review_path === null)
    return notFound(res, 'no document with this id waits for review in a review folder');
  const watch = allWatches(deps.config).get(row.watch);
  if (!watch?.review_dir) return notFound(res, 'its watched folder is no longer configured');
  let real: string;
  let root: string;
  try {
    [root, real] = await Promise.all([realpath(watch.review_dir), realpath(row.review_path)]);
  } catch {
    return notFound(res, 'the original is not in the review folder');
  }
  if (!within(root, real)) return notFound(res, 'the original is not in the review folder');
  // No link followed at the last step either: what was checked is what is opened.
  const handle = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!handle) return notFound(res, 'the original is not in the review folder');
  const info = await handle.stat();
  if (!info.isFile()) {
    await handle.close();
    return notFound(res, 'the original is not a file');
  }
  const { type, kind } = originalType(row.review_path);
  const inline = kind !== 'download';
  res.writeHead(200, {
    'content-type': type,
    'content-length': String(info.size),
    'content-disposition': disposition(inline ? 'inline' : 'attachment', basename(row.review_path)),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'cross-origin-resource-policy': 'same-origin',
    'x-frame-options': 'SAMEORIGIN',
    // Nothing in it runs; a PDF keeps the browser's viewer, which a sandboxed document would not get.
    'content-security-policy': `default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; frame-ancestors 'self'${
      kind === 'pdf' ? '' : '; sandbox'
    }`,
  });
  if (head) {
    await handle.close();
    return res.end();
  }
  // Read through the handle opened above: the file checked is the file sent.
  handle.createReadStream().pipe(res);
}
