/**
 * What the route modules share with the app: the context, the error answer, ownership checks and
 * route registration. Apart from app.ts so that the routes need not import the app that imports them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Company, World } from './state.ts';
import type { Faults, StatsRecorder } from './faults.ts';

declare module 'fastify' {
  interface FastifyRequest {
    company: Company;
  }
  interface FastifyContextConfig {
    operation?: string;
  }
}

export interface Ctx {
  world: World;
  faults: Faults;
  stats: StatsRecorder;
  taskDelayMs: number;
  timers: Set<NodeJS.Timeout>;
  now: () => number;
  /** Runs `fn` after the task delay (immediately scheduled; cleared on stop). */
  later: (fn: () => void) => void;
}

/** An answer other than 200, with its JSON body. */
export class HttpError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string>;
  constructor(status: number, body: unknown, headers: Record<string, string> = {}) {
    super(
      typeof body === 'object' && body && 'detail' in body
        ? String((body as { detail: unknown }).detail)
        : `HTTP ${status}`,
    );
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

export const notFound = (what: string, id: unknown) =>
  new HttpError(404, { detail: `${what} ${String(id)} not found` });

/** The resource if it exists and belongs to the caller's company; 404 otherwise (existence is not revealed). */
export function owned<T extends { companyId: number }>(
  map: Map<number, T> | Map<string, T>,
  id: number | string,
  company: Company,
  what: string,
): T {
  const item = (map as Map<number | string, T>).get(id);
  if (!item || item.companyId !== company.id) throw notFound(what, id);
  return item;
}

export type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown> | unknown;

/** Registers a public operation under its API name (paths work with and without the trailing slash). */
export function route(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  operation: string,
  handler: Handler,
) {
  app.route({
    method,
    url,
    config: { operation },
    handler: async (request, reply) => handler(request, reply),
  });
}
