/**
 * docex-sync's and docex's exit codes come from the client's own classification of an error
 * (DocexError.kind), as the client made it from a real answer: nothing is re-derived from classes.
 */
import nock from 'nock';
import { afterEach, beforeAll, describe, expect, test } from 'vitest';
import { DocexError } from '@docex/shared';
import { EXIT, exitCodeFor } from '../../../cli-kit/src/exit.ts';
import { ConfigError } from '../../../daemon/src/config/config.ts';
import { BASE, fakeTimeClient } from '../../support/client.ts';

beforeAll(() => nock.disableNetConnect());
afterEach(() => nock.cleanAll());

/** The error the client throws for `fetch_all_folders` when the server does `reply`. */
async function failure(
  reply: (scope: nock.Interceptor) => nock.Scope,
  signal?: AbortSignal,
): Promise<DocexError> {
  reply(nock(BASE).get('/v1/fetch_all_folders/').times(10));
  const client = fakeTimeClient({ retry: { maxRetries: 2 } });
  const error = await client.call('fetch_all_folders', {}, { signal }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DocexError);
  return error as DocexError;
}

describe('exit code of a failure from the service', () => {
  test.each([
    [
      '401: the key is refused',
      'auth',
      EXIT.auth,
      (s: nock.Interceptor) => s.reply(401, { detail: 'Invalid API key' }),
    ],
    ['404', 'permanent', EXIT.failure, (s: nock.Interceptor) => s.reply(404, { detail: 'Not found' })],
    ['422', 'permanent', EXIT.failure, (s: nock.Interceptor) => s.reply(422, { detail: 'bad' })],
    ['503 after the retries', 'transient', EXIT.unreachable, (s: nock.Interceptor) => s.reply(503, 'down')],
    ['429 after the retries', 'transient', EXIT.unreachable, (s: nock.Interceptor) => s.reply(429, '')],
    [
      'a refused connection',
      'transient',
      EXIT.unreachable,
      (s: nock.Interceptor) => s.replyWithError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }),
    ],
  ])('%s: kind %s, exit %i', async (_what, kind, code, reply) => {
    const error = await failure(reply);
    expect(error.kind).toBe(kind);
    expect(exitCodeFor(error)).toBe(code);
  });

  test('the caller stopping the call is a plain failure', async () => {
    const controller = new AbortController();
    controller.abort();
    const error = await failure((s) => s.delay(1000).reply(200, []), controller.signal);
    expect(error.kind).toBe('aborted');
    expect(exitCodeFor(error)).toBe(EXIT.failure);
  });

  test('every kind has its code, and the code follows the kind, not the class', () => {
    const made = (kind: DocexError['kind']) => new DocexError('fetch_folder', 'test', { kind });
    expect(
      Object.fromEntries(
        (['permanent', 'transient', 'auth', 'aborted'] as const).map((k) => [k, exitCodeFor(made(k))]),
      ),
    ).toEqual({ permanent: 1, transient: 4, auth: 3, aborted: 1 });
  });
});

test('a config mistake is a usage error; anything else a failure', () => {
  expect(exitCodeFor(new ConfigError('docex.yaml: api.base_url: required'))).toBe(EXIT.usage);
  expect(exitCodeFor(new Error('boom'))).toBe(EXIT.failure);
  expect(exitCodeFor('a string')).toBe(EXIT.failure);
});
