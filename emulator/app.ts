/** The fastify app: auth, fault injection, statistics, error shapes, and the route modules. */
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import type { IncomingMessage } from 'node:http';
import { finished } from 'node:stream/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { HttpError, type Ctx } from './routing.ts';
import { ValidationFailed } from './validation.ts';
import { registerCatalog } from './routes/catalog.ts';
import { registerTasks } from './routes/tasks.ts';
import { registerDocuments } from './routes/documents.ts';
import { registerControls } from './routes/controls.ts';

export function buildApp(
  ctx: Ctx,
  options: { controls: boolean; logger: boolean; tls?: { cert: string | Buffer; key: string | Buffer } },
): FastifyInstance {
  // Fastify types an HTTPS instance apart; the routes see the same requests either way.
  const app = (Fastify as (o: object) => FastifyInstance)({
    ...(options.tls ? { https: { cert: options.tls.cert, key: options.tls.key } } : {}),
    logger: options.logger,
    routerOptions: { ignoreTrailingSlash: true },
    bodyLimit: 64 * 1024 * 1024,
    forceCloseConnections: true,
  });

  app.register(multipart, { limits: { fileSize: 4 * 1024 * 1024 * 1024, files: 1000, fields: 100 } });

  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(
        new ValidationFailed([
          {
            type: 'json_invalid',
            loc: ['body', 0],
            msg: 'JSON decode error',
            input: {},
            ctx: { error: (error as Error).message },
          },
        ]),
        undefined,
      );
    }
  });

  // A request refused here has not had its body read: it is read (and dropped) before the answer,
  // as nginx in front of the service does. Answered first, a client still writing the body sees
  // `write EPIPE` now and then instead of the answer (nodejs/node#12339).
  app.addHook('onRequest', async (request, reply) => {
    try {
      await admit(request, reply);
    } catch (error) {
      if (error instanceof HttpError) await dropBody(request.raw);
      throw error;
    }
  });

  const admit = async (request: FastifyRequest, reply: FastifyReply) => {
    const operation = request.routeOptions.config.operation;
    if (!operation) return;
    const arrivedInLastSecond = ctx.stats.arrive(operation, ctx.now());
    reply.raw.once('close', () => ctx.stats.leave());
    const f = ctx.faults;
    if (f.applies(operation)) {
      const latency = f.latency();
      if (latency > 0) await delay(latency);
      if (f.roll(f.config.dropRate)) {
        request.raw.socket.destroy();
        return reply.hijack();
      }
      const limit = f.config.rateLimit;
      if (limit && arrivedInLastSecond > limit.perSecond) {
        throw new HttpError(
          429,
          { detail: 'Too many requests' },
          { 'retry-after': String(limit.retryAfterSeconds ?? 1) },
        );
      }
      if (f.roll(f.config.errorRate)) {
        const status = f.pickStatus();
        throw new HttpError(status, { detail: `Injected fault (${status})` });
      }
      const max = f.config.maxUploadBytes;
      if (
        max !== undefined &&
        operation === 'upload_file' &&
        Number(request.headers['content-length'] ?? 0) > max
      ) {
        throw new HttpError(413, { detail: `Upload larger than ${max} bytes` });
      }
    }
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
    if (!match) throw new HttpError(401, { detail: 'Not authenticated' }, { 'www-authenticate': 'Bearer' });
    const company = ctx.world.companyByKey(match[1]!);
    if (!company) throw new HttpError(401, { detail: 'Invalid API key' }, { 'www-authenticate': 'Bearer' });
    request.company = company;
  };

  app.addHook('onResponse', async (request, reply) => {
    if (request.routeOptions.config.operation) ctx.stats.answered(reply.statusCode, bodyUnread(request.raw));
    if (request.method !== 'GET' && request.routeOptions.config.operation) ctx.world.save();
  });

  app.setErrorHandler((error: unknown, _request, reply) => {
    if (error instanceof ValidationFailed) return reply.status(422).send({ detail: error.detail });
    if (error instanceof HttpError) return reply.status(error.status).headers(error.headers).send(error.body);
    const e = error as { statusCode?: number; code?: string; message?: string };
    if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.statusCode === 413)
      return reply.status(413).send({ detail: 'Upload too large' });
    if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return reply.status(415).send({ detail: e.message });
    if (e.statusCode && e.statusCode < 500) return reply.status(e.statusCode).send({ detail: e.message });
    app.log.error(error);
    return reply.status(500).send({ detail: 'Internal Server Error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.status(404).send({ detail: 'Not Found' }));

  registerCatalog(app, ctx);
  registerTasks(app, ctx);
  registerDocuments(app, ctx);
  if (options.controls) registerControls(app, ctx);
  return app;
}

/** Reads a request's body to its end and drops it; a client that goes away ends it too. */
async function dropBody(raw: IncomingMessage): Promise<void> {
  if (raw.readableEnded) return;
  raw.resume();
  await finished(raw).catch(() => undefined);
}

/** Whether a request came with a body that nobody has read to its end. */
function bodyUnread(raw: IncomingMessage): boolean {
  const hasBody =
    Number(raw.headers['content-length'] ?? 0) > 0 || raw.headers['transfer-encoding'] !== undefined;
  return hasBody && !raw.readableEnded;
}

export { HttpError, type Ctx } from './routing.ts';
