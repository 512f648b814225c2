/**
 * The daemon's HTTP listener: the status page (/), its data (/api/status), retry (/api/retry),
 * approval of documents waiting for review (/api/approve), /healthz and /metrics. Loopback by default. The page and /api/* answer only to the listener's own
 * host names (DNS rebinding), changes need a JSON request with a custom header from the same origin
 * (a form or script on another site cannot send one), and off loopback a token (docs/daemon.md).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Metrics } from './metrics.ts';
import { renderMain, renderPage, SCRIPT_HASH } from './page.ts';
import { healthOf, statusSnapshot, type Health, type HealthLevel, type StatusSource } from './read-model.ts';
import { retryFailed, type RetryConfig, type RetryOutcome } from '../actions/retry.ts';
import { approveAndNote } from '../actions/approve.ts';
import { pageActor, reviewChange, reviewPage, serveOriginal } from './review-routes.ts';
import { REVIEW_PAGE_CSP } from './review-page.ts';

export interface HttpDeps extends StatusSource {
  /** The read model's slice, and retry's and approve's for the page's buttons. */
  config: StatusSource['config'] & RetryConfig;
  metrics: Metrics;
  log?: Logger;
  /** Wakes the pipeline after a retry or an approval. */
  wake?: () => void;
}

const HEALTHZ_STATUS: Record<HealthLevel, string> = {
  healthy: 'ok',
  attention: 'attention',
  failing: 'unhealthy',
};
const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const TOKEN_COOKIE = 'docex_sync_token';
const MAX_BODY = 64 * 1024;

const digest = (s: string) => createHash('sha256').update(s).digest();
const sameToken = (given: string | undefined, token: string) =>
  given !== undefined && timingSafeEqual(digest(given), digest(token));

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const json = typeof body !== 'string';
  res
    .writeHead(status, {
      'content-type': json ? 'application/json' : 'text/plain; charset=utf-8',
      'cache-control': 'no-store',
      ...headers,
    })
    .end(json ? JSON.stringify(body) : body);
};

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return decodeURIComponent(v.join('='));
  }
  return undefined;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
}

/** The page's changes: each is a JSON POST of `{"ids": [...]}` or `{"all": true}`, guarded alike. */
const CHANGES = new Set(['/api/retry', '/api/approve', '/api/reject', '/api/correct']);
/** The review station's pages (status/review-routes.ts): the page, and a held document's original by id. */
const REVIEW_ORIGINAL = /^\/review\/original\/([^/]*)$/;
const isReviewPath = (path: string) => path === '/review' || REVIEW_ORIGINAL.test(path);

function parseWhich(body: unknown): number[] | 'all' | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as { ids?: unknown; all?: unknown };
  if (b.all === true) return 'all';
  if (
    Array.isArray(b.ids) &&
    b.ids.length > 0 &&
    b.ids.length <= 10_000 &&
    b.ids.every((id) => Number.isSafeInteger(id) && id > 0)
  )
    return b.ids as number[];
  return undefined;
}

export async function startHttp(deps: HttpDeps): Promise<Server> {
  const settings = deps.config.http!;
  const token = settings.token_file ? readFileSync(settings.token_file, 'utf8').trim() : undefined;
  if (settings.token_file && !token) throw new Error(`http.token_file: ${settings.token_file} is empty`);
  let allowedHosts = new Set<string>();

  /** Host names the page answers to: the listen address, loopback names, and http.allowed_hosts. */
  const checkHost = (req: IncomingMessage) => allowedHosts.has((req.headers.host ?? '').toLowerCase());
  /** A browser sends Origin on a cross-site POST; it must be one of ours. No Origin: not a browser form. */
  const sameOrigin = (req: IncomingMessage) => {
    if (req.headers['sec-fetch-site'] === 'cross-site') return false;
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    try {
      return allowedHosts.has(new URL(origin).host.toLowerCase());
    } catch {
      return false;
    }
  };
  const authorized = (req: IncomingMessage, url: URL, forChange: boolean) => {
    if (!token) return true;
    const header = req.headers['x-docex-sync-token'];
    const bearer = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const given = (typeof header === 'string' ? header : undefined) ?? bearer;
    if (forChange) return sameToken(given, token); // never a cookie alone: a cookie rides along cross-site
    return sameToken(given ?? url.searchParams.get('token') ?? cookie(req, TOKEN_COOKIE), token);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    if (path === '/healthz') {
      let health: Health;
      let files: Record<string, number> | undefined;
      try {
        health = healthOf(deps);
        files = deps.db.fileCounts.counts();
      } catch (error) {
        health = {
          level: 'failing',
          ok: false,
          reasons: [`the state DB cannot be read: ${(error as Error).message}`],
        };
      }
      // Only failing is 503: a monitor that restarts on it must not restart for a failed file.
      return send(res, health.level === 'failing' ? 503 : 200, {
        status: HEALTHZ_STATUS[health.level],
        level: health.level,
        ...(health.ok ? {} : { reasons: health.reasons }),
        files,
      });
    }
    if (path === '/metrics')
      return send(res, 200, await deps.metrics.registry.metrics(), {
        'content-type': deps.metrics.registry.contentType,
      });
    if (
      path !== '/' &&
      path !== '/partial' &&
      path !== '/api/status' &&
      !CHANGES.has(path) &&
      !isReviewPath(path)
    )
      return send(res, 404, 'not found\n');
    if (!checkHost(req)) return send(res, 421, 'this page answers only to its own host name\n');
    if (CHANGES.has(path)) {
      if (req.method !== 'POST') return send(res, 405, { error: 'use POST' }, { allow: 'POST' });
      if (!sameOrigin(req)) return send(res, 403, { error: 'cross-origin requests are refused' });
      if (!/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
        return send(res, 415, { error: 'send JSON (content-type: application/json)' });
      if (req.headers['x-docex-sync-request'] === undefined)
        return send(res, 403, { error: 'the x-docex-sync-request header is required' });
      if (!authorized(req, url, true))
        return send(res, 401, { error: 'a valid x-docex-sync-token is required' });
      let body: unknown;
      try {
        body = await readJson(req);
      } catch (error) {
        return send(res, 400, { error: (error as Error).message });
      }
      const actor = pageActor(body, req);
      if (path === '/api/reject' || path === '/api/correct') {
        const answer = await reviewChange(path, body, deps, actor);
        return send(res, answer.status, answer.body);
      }
      const which = parseWhich(body);
      if (!which) return send(res, 400, { error: 'send {"ids": [file ids]} or {"all": true}' });
      if (path === '/api/approve') {
        // "all" from the page leaves fraud-flagged documents out unless include_fraud says otherwise.
        const includeFraud = (body as { include_fraud?: unknown }).include_fraud === true;
        const approved = await approveAndNote({ ...deps, actor }, which, { includeFraud });
        deps.log?.info(
          { approved: approved.approved.length, skipped: approved.skipped.length },
          'approved on the status page',
        );
        return send(res, 200, approved);
      }
      const outcome: RetryOutcome = await retryFailed({ ...deps, actor }, which);
      deps.log?.info(
        { retried: outcome.retried.length, skipped: outcome.skipped.length },
        'retry from the status page',
      );
      return send(res, 200, outcome);
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'use GET\n', { allow: 'GET' });
    if (!authorized(req, url, false))
      return send(res, 401, 'a token is required: open the page as /?token=... (see docs/daemon.md)\n');
    if (token && url.searchParams.has('token'))
      // Keep the token out of the address bar and history: a same-site cookie from here on.
      return send(res, 303, '', {
        location: path,
        'set-cookie': `${TOKEN_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`,
      });
    const original = REVIEW_ORIGINAL.exec(path);
    if (original) return serveOriginal(deps, original[1]!, res, req.method === 'HEAD');
    if (path === '/review')
      return send(res, 200, await reviewPage(deps, url, token), {
        'content-security-policy': REVIEW_PAGE_CSP,
        'x-frame-options': 'DENY',
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
        'content-type': 'text/html; charset=utf-8',
      });
    const snapshot = statusSnapshot(deps);
    if (path === '/api/status') return send(res, 200, snapshot);
    const security = {
      'content-security-policy': `default-src 'none'; script-src ${SCRIPT_HASH}; style-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
    };
    if (path === '/partial')
      return send(res, 200, renderMain(snapshot), {
        ...security,
        'content-type': 'text/html; charset=utf-8',
      });
    return send(res, 200, renderPage(snapshot, { token }), {
      ...security,
      'content-type': 'text/html; charset=utf-8',
    });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      deps.log?.error({ err: (error as Error).message, path: req.url }, 'http request failed');
      if (!res.headersSent) send(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) =>
    server.once('error', reject).listen(settings.port, settings.host, () => resolve()),
  );
  const port = (server.address() as AddressInfo).port;
  const names = [
    '127.0.0.1',
    'localhost',
    '[::1]',
    settings.host.includes(':') ? `[${settings.host}]` : settings.host,
  ];
  allowedHosts = new Set([
    ...names.map((n) => `${n}:${port}`.toLowerCase()),
    ...settings.allowed_hosts.map((h) => h.toLowerCase()),
  ]);
  if (!LOOPBACK.has(settings.host))
    deps.log?.warn(
      { host: settings.host, port },
      'the status page listens beyond loopback; a token is required',
    );
  return server;
}
