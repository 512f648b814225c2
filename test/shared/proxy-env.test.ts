/** The proxy decision from the environment: which variable, and every NO_PROXY form. */
import { describe, expect, test } from 'vitest';
import { bypassesProxy, parseProxyUrl, proxyFromEnv, redactProxyUrl } from '@docex/shared';

const https = new URL('https://api.docex.test/v1/');
const http = new URL('http://api.docex.test:8080/v1/');

describe('proxyFromEnv', () => {
  test('HTTPS_PROXY for https://, HTTP_PROXY for http://, lower case first', () => {
    const env = {
      HTTPS_PROXY: 'http://upper:1',
      https_proxy: 'http://lower:1',
      HTTP_PROXY: 'http://plain:1',
    };
    expect(proxyFromEnv(https, env)).toBe('http://lower:1');
    expect(proxyFromEnv(http, env)).toBe('http://plain:1');
    expect(proxyFromEnv(https, { HTTPS_PROXY: 'http://upper:1' })).toBe('http://upper:1');
    expect(proxyFromEnv(https, { HTTP_PROXY: 'http://plain:1' })).toBeUndefined();
    expect(proxyFromEnv(https, { HTTPS_PROXY: '  ' })).toBeUndefined();
    expect(proxyFromEnv(https, {})).toBeUndefined();
  });

  test('NO_PROXY (either case) exempts the target', () => {
    expect(proxyFromEnv(https, { HTTPS_PROXY: 'http://p:1', NO_PROXY: 'docex.test' })).toBeUndefined();
    expect(proxyFromEnv(https, { HTTPS_PROXY: 'http://p:1', no_proxy: 'other.test' })).toBe('http://p:1');
  });
});

describe('bypassesProxy: the NO_PROXY forms', () => {
  test.each([
    ['*', https, true],
    ['api.docex.test', https, true],
    ['docex.test', https, true], // a domain covers its hosts, as curl reads it
    ['.docex.test', https, true],
    ['*.docex.test', https, true],
    ['ocex.test', https, false], // suffix of a label is no match
    ['other.test, api.docex.test', https, true],
    ['other.test api.docex.test', https, true],
    ['api.docex.test:443', https, true],
    ['api.docex.test:8443', https, false],
    ['api.docex.test:8080', http, true],
    ['API.DOCEX.TEST', https, true],
    ['', https, false],
  ])('%j for %s: %s', (noProxy, url, expected) => {
    expect(bypassesProxy(url, noProxy)).toBe(expected);
  });

  test.each([
    ['10.0.0.0/8', 'https://10.20.30.40/', true],
    ['10.0.0.0/8', 'https://11.0.0.1/', false],
    ['192.168.1.0/24', 'https://192.168.1.77:8443/', true],
    ['192.168.1.0/24', 'https://192.168.2.1/', false],
    ['0.0.0.0/0', 'https://8.8.8.8/', true],
    ['127.0.0.1', 'http://127.0.0.1:4000/', true],
    ['127.0.0.1:4000', 'http://127.0.0.1:4000/', true],
    ['127.0.0.1:4001', 'http://127.0.0.1:4000/', false],
    ['fd00::/8', 'https://[fd12:3456::1]/', true],
    ['fd00::/8', 'https://[fe80::1]/', false],
    ['::1', 'https://[::1]:9000/', true],
    ['[::1]:9000', 'https://[::1]:9000/', true],
    ['10.0.0.0/8', 'https://ten.example/', false], // a name is never inside a block
  ])('%s for %s: %s', (noProxy, url, expected) => {
    expect(bypassesProxy(new URL(url), noProxy)).toBe(expected);
  });
});

describe('proxy URLs', () => {
  test('credentials never shown', () => {
    expect(redactProxyUrl('http://alice:s3cr%40t@proxy.corp:3128')).toBe('http://[REDACTED]@proxy.corp:3128');
    expect(redactProxyUrl('http://proxy.corp:3128/')).toBe('http://proxy.corp:3128');
    expect(redactProxyUrl('not a url with s3cret')).not.toContain('s3cret');
  });

  test('http:// proxies, host:port read as http://', () => {
    expect(parseProxyUrl('proxy.corp:3128')).toEqual({ url: new URL('http://proxy.corp:3128') });
    expect(parseProxyUrl('https://proxy.corp:3128')).toEqual({
      problem: expect.stringMatching(/^https:\/\/ proxies are not supported/),
    });
    expect(parseProxyUrl('socks5://alice:pw@proxy.corp:1080')).toEqual({
      problem: expect.not.stringContaining('pw') as unknown,
    });
  });
});
