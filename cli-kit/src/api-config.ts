/**
 * How to reach the service: the daemon's `api:` section and each profile of docex's config
 * (docs/cli.md), with the rules for the key, the base URL and the connection. Apart from
 * config/config.ts (which re-exports it) so that docex, which reads only this section, does not
 * build the schemas of docex-sync's whole config (watch folders, mail, review, ...) at every start:
 * ~15-25 ms of `docex folders list` (docs/cli.md, "Start-up").
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod/v4';
import { formatRequestTrace, parseProxyUrl, type RequestTrace, type SettingTerms } from '@docex/shared';
import { ConfigError } from './errors.ts';

export const positiveInt = z.number().int().positive();

/**
 * A base URL ending in /v1 is refused, never shortened behind the user's back: every request adds
 * /v1/... itself (it would ask for /v1/v1/...), and the docs, the n8n credential and both binaries
 * say "the address without /v1" (docs/decisions.md, "Base URL").
 */
export function baseUrlProblem(url: string): string | undefined {
  const trimmed = url.replace(/\/+$/, '');
  if (!/\/v1$/i.test(trimmed)) return undefined;
  return `"${url}" ends in /v1: give the service's address without it, ${trimmed.slice(0, -3)} (every request adds /v1/... itself)`;
}

/** How to reach the service: the daemon's `api:` section, and each profile of docex's config (docs/cli.md). */
export const ApiSection = z.strictObject({
  base_url: z
    .url()
    .check((ctx) => {
      const problem = baseUrlProblem(ctx.value);
      if (problem) ctx.issues.push({ code: 'custom', input: ctx.value, message: problem });
    })
    .optional(),
  api_key_file: z.string().optional(),
  concurrency: positiveInt.default(4),
  requests_per_second: positiveInt.default(10),
  /** Widens the rate limit's window for the path's jitter (default: the client's, 50 ms; docs/decisions.md). */
  rate_margin_ms: z.number().int().min(0).max(10_000).optional(),
  timeout_ms: positiveInt.default(120_000),
  max_retries: z.number().int().min(0).default(4),
  /** http://[user:password@]host:port; wins over HTTPS_PROXY (the password is a secret, never shown). */
  proxy: z.string().min(1).optional(),
  /** A PEM file of CA certificates trusted besides Node's store (a private CA, a TLS-inspecting proxy's). */
  ca_file: z.string().min(1).optional(),
});
export type ApiSettings = z.output<typeof ApiSection>;

/**
 * docex-sync's words for its settings in messages (shared/src/core/hints.ts): its config's `api:`
 * keys, and DOCEX_BASE_URL when the config gives no base_url.
 */
export function syncTerms(config?: { api: ApiSettings }): SettingTerms {
  return {
    baseUrl: config && !config.api.base_url ? 'DOCEX_BASE_URL' : 'api.base_url',
    apiKey: 'DOCEX_API_KEY (or api.api_key_file)',
    proxy: 'api.proxy',
    caFile: 'api.ca_file',
  };
}

/** The API key: DOCEX_API_KEY, else the key file named in the config. Never logged. */
export function apiKeyFrom(
  config: { api: ApiSettings },
  env: NodeJS.ProcessEnv,
  section = 'api',
  terms: SettingTerms = syncTerms(config),
): string {
  if (env.DOCEX_API_KEY) return env.DOCEX_API_KEY.trim();
  if (config.api.api_key_file) {
    try {
      return readFileSync(config.api.api_key_file, 'utf8').trim();
    } catch (error) {
      throw new ConfigError(
        `${section}.api_key_file: cannot read ${config.api.api_key_file} (${(error as NodeJS.ErrnoException).code})`,
      );
    }
  }
  throw new ConfigError(`no API key: set ${terms.apiKey}`);
}

/**
 * The base URL: the config's (checked when it was read), else DOCEX_BASE_URL, checked here.
 * `whereToSet`: where a missing one goes, in the program's own terms (default: the config's key or
 * the variable).
 */
export function baseUrlFrom(
  config: { api: ApiSettings },
  env: NodeJS.ProcessEnv,
  section = 'api',
  whereToSet = `${section}.base_url in the config or DOCEX_BASE_URL`,
): string {
  const url = config.api.base_url ?? env.DOCEX_BASE_URL;
  if (!url) throw new ConfigError(`no base URL: set ${whereToSet}`);
  const problem = baseUrlProblem(url);
  if (problem)
    throw new ConfigError(`${config.api.base_url ? `${section}.base_url` : 'DOCEX_BASE_URL'}: ${problem}`);
  return url;
}

/**
 * The proxy, extra CA and request trace for the client: api.proxy (else HTTPS_PROXY / HTTP_PROXY /
 * NO_PROXY), api.ca_file, and one stderr line per request with DOCEX_DEBUG=http or --debug.
 */
export function connectionFrom(
  config: { api: ApiSettings },
  env: NodeJS.ProcessEnv,
  section: string,
  debug: boolean,
  writeTrace: (line: string) => void,
): { proxy?: string; caFile?: string; env: NodeJS.ProcessEnv; trace?: (t: RequestTrace) => void } {
  if (config.api.proxy) {
    const parsed = parseProxyUrl(config.api.proxy);
    if ('problem' in parsed) throw new ConfigError(`${section}.proxy: ${parsed.problem}`);
  }
  if (config.api.ca_file) {
    try {
      readFileSync(config.api.ca_file, 'utf8');
    } catch (error) {
      throw new ConfigError(
        `${section}.ca_file: cannot read ${config.api.ca_file} (${(error as NodeJS.ErrnoException).code}): give a PEM file holding the CA certificate(s)`,
      );
    }
  }
  const traced = debug || (env.DOCEX_DEBUG ?? '').split(',').includes('http');
  return {
    proxy: config.api.proxy,
    caFile: config.api.ca_file,
    env,
    trace: traced ? (t) => writeTrace(formatRequestTrace(t)) : undefined,
  };
}
