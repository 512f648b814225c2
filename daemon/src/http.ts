/**
 * The daemon's HTTP listener: the status page (/), its data (/api/status), retry (/api/retry),
 * /healthz and /metrics. Loopback by default. The page and /api/* answer only to the listener's own
 * host names (DNS rebinding), changes need a JSON request with a custom header from the same origin
 * (a form or script on another site cannot send one), and off loopback a token (docs/daemon.md).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { FILE_STATES, type FileState } from './lifecycle.ts';
import type { Metrics } from './metrics.ts';
import { renderMain, renderPage, SCRIPT_HASH } from './page.ts';
import { retryFailed, type RetryOutcome } from './retry.ts';
import type { StateDb } from './state.ts';

/** What the page shows; also GET /api/status. */
export interface StatusSnapshot {
  generated_at: string;
  health: Health;
  files: Record<FileState, number>;
  outcomes: Record<string, number>;
  watches: Array<{
    path: string;
    template_id: number | null;
    folder_id: number | null;
    files: Record<FileState, number>;
    paused: { reason: string; since: string } | null;
  }>;
  failed: {
    total: number;
    files: Array<{
      id: number;
      file: string;
      watch: string;
      reason: string | null;
      attempts: number;
      task_id: string | null;
      at: string;
      /** Moved to the failed folder with its .error.json (false: still being moved). */
      moved: boolean;
    }>;
  };
  blocked: Array<{ id: number; file: string; state: FileState; problem: string }>;
  service: { reachable: boolean; since: string | null; reason: string | null; key_refused: boolean };
  reruns: Array<{
    name: string;
    status: string;
    started_at: string;
    finished_at: string | null;
    documents: number | null;
    rerun: number | null;
    not_rerun: number | null;
  }>;
  pulls: PullRecord[];
  throughput: {
    /** Files finished (archived) and failed in the last hour, and per 10 minutes, newest first. */
    last_hour: { processed: number; failed: number };
    per_10_minutes: Array<{ from: string; processed: number; failed: number }>;
  };
}

export interface Health {
  ok: boolean;
  reasons: string[];
}

export interface PullRecord {
  at: string;
  status: 'done' | 'failed';
  documents: number;
  error?: string;
}
export const PULL_HISTORY = 'pull.history';

/** The last pulls, newest first (kept in the state DB's key-value table). */
export function recordPull(db: StateDb, record: PullRecord, keep = 10) {
  const history = readPulls(db);
  db.setValue(PULL_HISTORY, JSON.stringify([record, ...history].slice(0, keep)));
}
function readPulls(db: StateDb): PullRecord[] {
  try {
    const value = JSON.parse(db.getValue(PULL_HISTORY) ?? '[]') as unknown;
    return Array.isArray(value) ? (value as PullRecord[]) : [];
  } catch {
    return [];
  }
}

const UNREACHABLE = 'service.unreachable';
const iso = (ms: number | null | undefined) => (ms == null ? null : new Date(ms).toISOString());
const zero = () => Object.fromEntries(FILE_STATES.map((s) => [s, 0])) as Record<FileState, number>;

export interface StatusSource {
  db: StateDb;
  config: Config;
  now?: () => number;
  /** Set when the service refused the API key (the run stops). */
  keyRefused?: () => boolean;
}

export function healthOf(source: StatusSource): Health {
  const { db, config } = source;
  const now = (source.now ?? Date.now)();
  const reasons: string[] = [];
  if (source.keyRefused?.()) reasons.push('the service refused the API key');
  const down = unreachable(db);
  const limit = config.http?.unhealthy_after_ms ?? 300_000;
  if (down && now - down.since >= limit)
    reasons.push(
      `the service has been unreachable for ${Math.round((now - down.since) / 1000)} s: ${down.reason}`,
    );
  for (const w of db.pausedWatches()) reasons.push(`watch ${w.path} is paused: ${w.paused_reason}`);
  return { ok: reasons.length === 0, reasons };
}

function unreachable(db: StateDb): { since: number; reason: string } | undefined {
  const value = db.getValue(UNREACHABLE);
  if (!value) return undefined;
  try {
    const parsed = JSON.parse(value) as { since: number; reason: string };
    return { since: Number(parsed.since), reason: String(parsed.reason) };
  } catch {
    return { since: 0, reason: value };
  }
}

export function statusSnapshot(source: StatusSource, failedLimit = 100): StatusSnapshot {
  const { db, config } = source;
  const now = (source.now ?? Date.now)();
  db.flush();
  const sql = db.db;
  const perWatch = new Map<string, Record<FileState, number>>();
  for (const r of sql
    .prepare(`SELECT watch, state, COUNT(*) AS n FROM files GROUP BY watch, state`)
    .all() as Array<{
    watch: string;
    state: FileState;
    n: number;
  }>) {
    const counts = perWatch.get(r.watch) ?? zero();
    counts[r.state] = r.n;
    perWatch.set(r.watch, counts);
  }
  const paused = new Map(db.pausedWatches().map((w) => [w.path, w]));
  const failedRows = sql
    .prepare(`SELECT * FROM files WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT ?`)
    .all(failedLimit) as Array<{
    id: number;
    path: string;
    watch: string;
    reason: string | null;
    attempts: number;
    task_id: string | null;
    updated_at: number;
    finalized: number;
  }>;
  const hourAgo = now - 3_600_000;
  const finished = sql
    .prepare(
      `SELECT state, updated_at FROM files WHERE state IN ('archived', 'failed') AND updated_at >= ? ORDER BY updated_at`,
    )
    .all(hourAgo) as Array<{ state: FileState; updated_at: number }>;
  const buckets = Array.from({ length: 6 }, (_, i) => ({
    from: now - (i + 1) * 600_000,
    processed: 0,
    failed: 0,
  }));
  for (const f of finished) {
    const bucket = buckets[Math.min(5, Math.floor((now - f.updated_at) / 600_000))]!;
    if (f.state === 'archived') bucket.processed++;
    else bucket.failed++;
  }
  const down = unreachable(db);
  const reruns = db.lastReruns(5) as Array<{
    name: string;
    status: string;
    started_at: number;
    finished_at: number | null;
    documents: number | null;
    rerun: number | null;
    not_rerun: number | null;
  }>;
  const files = db.counts();
  return {
    generated_at: iso(now)!,
    health: healthOf(source),
    files,
    outcomes: db.outcomes(),
    watches: config.watch.map((w) => ({
      path: w.path,
      template_id: w.template_id ?? null,
      folder_id: w.folder_id ?? null,
      files: perWatch.get(w.path) ?? zero(),
      paused: paused.has(w.path)
        ? { reason: paused.get(w.path)!.paused_reason, since: iso(paused.get(w.path)!.paused_at)! }
        : null,
    })),
    failed: {
      total: files.failed,
      files: failedRows.map((r) => ({
        id: r.id,
        file: r.path,
        watch: r.watch,
        reason: r.reason,
        attempts: r.attempts,
        task_id: r.task_id,
        at: iso(r.updated_at)!,
        moved: r.finalized === 1,
      })),
    },
    blocked: db
      .blocked(20)
      .map((r) => ({ id: r.id, file: r.path, state: r.state, problem: r.blocked ?? '' })),
    service: {
      reachable: !down,
      since: iso(down?.since),
      reason: down?.reason ?? null,
      key_refused: source.keyRefused?.() ?? false,
    },
    reruns: reruns.map((r) => ({
      name: r.name,
      status: r.status,
      started_at: iso(r.started_at)!,
      finished_at: iso(r.finished_at),
      documents: r.documents,
      rerun: r.rerun,
      not_rerun: r.not_rerun,
    })),
    pulls: readPulls(db).slice(0, 5),
    throughput: {
      last_hour: {
        processed: finished.filter((f) => f.state === 'archived').length,
        failed: finished.filter((f) => f.state === 'failed').length,
      },
      per_10_minutes: buckets.map((b) => ({ ...b, from: iso(b.from)! })),
    },
  };
}

export interface HttpDeps extends StatusSource {
  metrics: Metrics;
  log?: Logger;
  /** Wakes the pipeline after a retry. */
  wake?: () => void;
}

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

function parseRetry(body: unknown): number[] | 'all' | undefined {
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
        files = deps.db.counts();
      } catch (error) {
        health = { ok: false, reasons: [`the state DB cannot be read: ${(error as Error).message}`] };
      }
      return send(res, health.ok ? 200 : 503, {
        status: health.ok ? 'ok' : 'unhealthy',
        ...(health.ok ? {} : { reasons: health.reasons }),
        files,
      });
    }
    if (path === '/metrics')
      return send(res, 200, await deps.metrics.registry.metrics(), {
        'content-type': deps.metrics.registry.contentType,
      });
    if (path !== '/' && path !== '/partial' && path !== '/api/status' && path !== '/api/retry')
      return send(res, 404, 'not found\n');
    if (!checkHost(req)) return send(res, 421, 'this page answers only to its own host name\n');
    if (path === '/api/retry') {
      if (req.method !== 'POST') return send(res, 405, { error: 'use POST' }, { allow: 'POST' });
      if (!sameOrigin(req)) return send(res, 403, { error: 'cross-origin requests are refused' });
      if (!/^application\/json\b/i.test(req.headers['content-type'] ?? ''))
        return send(res, 415, { error: 'send JSON (content-type: application/json)' });
      if (req.headers['x-docex-sync-request'] === undefined)
        return send(res, 403, { error: 'the x-docex-sync-request header is required' });
      if (!authorized(req, url, true))
        return send(res, 401, { error: 'a valid x-docex-sync-token is required' });
      let which;
      try {
        which = parseRetry(await readJson(req));
      } catch (error) {
        return send(res, 400, { error: (error as Error).message });
      }
      if (!which) return send(res, 400, { error: 'send {"ids": [file ids]} or {"all": true}' });
      const outcome: RetryOutcome = await retryFailed(deps, which);
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
