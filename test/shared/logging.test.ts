/** The logger hook with a real pino and REDACT_PATHS: what the client logs, and what redaction catches. */
import { Writable } from 'node:stream';
import nock from 'nock';
import { pino } from 'pino';
import { expect, test } from 'vitest';
import { REDACT_PATHS } from '@docex/shared/node';
import { BASE, KEY, nodeClient } from '../support/client.ts';
import { offlineNock } from './helpers-nock.ts';

offlineNock();

function memoryPino() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = pino({ level: 'debug', redact: REDACT_PATHS }, stream);
  return { logger, lines, text: () => JSON.stringify(lines) };
}

test('REDACT_PATHS hides the key wherever a header set or a config usually lands', () => {
  const { logger, lines, text } = memoryPino();
  const auth = `Bearer ${KEY}`;
  logger.info({ authorization: auth }, 'a');
  logger.info({ headers: { authorization: auth, accept: 'application/json' } }, 'b');
  logger.info({ headers: { Authorization: auth } }, 'c');
  logger.info({ req: { headers: { authorization: auth } } }, 'd');
  logger.info({ request: { options: { headers: { authorization: auth } } } }, 'e');
  logger.info({ apiKey: KEY }, 'f');
  logger.info({ config: { apiKey: KEY, baseUrl: 'https://x' } }, 'g');
  logger.info({ daemon: { client: { apiKey: KEY } } }, 'h');
  logger.info({ credentials: { api_key: KEY } }, 'i');
  expect(lines).toHaveLength(9);
  expect(text()).not.toContain(KEY);
  expect(lines[1]).toMatchObject({ headers: { authorization: '[Redacted]', accept: 'application/json' } });
  expect(lines[6]).toMatchObject({ config: { apiKey: '[Redacted]', baseUrl: 'https://x' } });
});

test('the client logs each request at debug and each retry at warn, through pino, without the key', async () => {
  const { logger, lines, text } = memoryPino();
  nock(BASE).get('/v1/fetch_folder/').query(true).reply(503, `overloaded (${KEY})`);
  nock(BASE).get('/v1/fetch_folder/').query(true).reply(200, { id: 1 });
  const client = nodeClient({ logger, retry: { initialDelayMs: 1, maxDelayMs: 1 } });
  await client.fetchFolder({ folder_id: 1 });
  expect(lines.map((l) => [l.level, l.msg, l.operation, l.status ?? null])).toEqual([
    [20, 'docex request', 'fetch_folder', 503],
    [40, 'docex: retrying', 'fetch_folder', null],
    [20, 'docex request', 'fetch_folder', 200],
  ]);
  expect(lines[1]).toMatchObject({
    attempt: 1,
    error: 'fetch_folder: HTTP 503 Service Unavailable: overloaded ([REDACTED])',
  });
  expect(text()).not.toContain(KEY);
});
