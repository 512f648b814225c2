/**
 * Kept apart from helpers.ts: loading nock patches Node's http module for the whole file, which
 * would put the streaming tests' real uploads through nock's interceptor.
 */
import nock from 'nock';
import { afterEach, beforeAll } from 'vitest';

/** For a test file that talks to nock only: no real connections, and no interceptor outlives its test. */
export function offlineNock() {
  beforeAll(() => {
    nock.disableNetConnect();
    return () => nock.enableNetConnect();
  });
  afterEach(() => {
    nock.cleanAll();
  });
}
