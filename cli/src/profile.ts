/**
 * Which account docex talks to: profiles in one config file, each shaped like docex-sync's `api:`
 * section, with the daemon's rules for the key and the base URL (docs/cli.md).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod/v4';
import type { DocexClient, SettingTerms } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
// The api section only (@docex/cli-kit/api-config), not docex-sync's whole config and its schemas.
import {
  ApiSection,
  apiKeyFrom,
  baseUrlFrom,
  connectionFrom,
  type ApiSettings,
} from '@docex/cli-kit/api-config';
import { CONFIG_MEANINGS } from '@docex/cli-kit/config-meanings';
import { ConfigError } from '@docex/cli-kit/errors';
import { readYamlFile } from '@docex/cli-kit/yaml';

export const CliConfigSchema = z.strictObject({
  default_profile: z.string().min(1).optional(),
  profiles: z.record(z.string(), ApiSection).default({}),
});

export interface Selection {
  profile?: string;
  config?: string;
}

export interface Settings {
  api: ApiSettings;
  /** The profile's key path, for messages: "profiles.prod" ("profiles.default" without a config file). */
  section: string;
  /** The profile in use, if any. */
  profile?: string;
  configFile?: string;
}

export const defaultConfigFile = (env: NodeJS.ProcessEnv) =>
  join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'docex', 'config.yaml');

const expandHome = (path: string) =>
  path === '~' || path.startsWith('~/') ? join(homedir(), path.slice(1)) : path;

export function settingsFor(selection: Selection, env: NodeJS.ProcessEnv): Settings {
  const explicitFile = selection.config ?? env.DOCEX_CONFIG;
  const file = explicitFile ?? defaultConfigFile(env);
  const wanted = selection.profile ?? env.DOCEX_PROFILE;
  const fromEnv = ApiSection.parse({});
  if (!explicitFile && !existsSync(file)) {
    if (wanted) throw new ConfigError(`profile "${wanted}" asked for, but there is no config file (${file})`);
    return { api: fromEnv, section: 'profiles.default' };
  }
  const { data } = readYamlFile(file, CliConfigSchema, { meanings: CONFIG_MEANINGS });
  const names = Object.keys(data.profiles);
  const name = wanted ?? data.default_profile ?? (names.includes('default') ? 'default' : undefined);
  if (name === undefined) return { api: fromEnv, section: 'profiles.default', configFile: file };
  const profile = data.profiles[name];
  if (!profile)
    throw new ConfigError(
      `${file}: no profile "${name}" (profiles: ${names.length ? names.join(', ') : 'none'})`,
    );
  const api = { ...profile };
  if (api.api_key_file) api.api_key_file = resolve(dirname(file), expandHome(api.api_key_file));
  if (api.ca_file) api.ca_file = resolve(dirname(file), expandHome(api.ca_file));
  return { api, section: `profiles.${name}`, profile: name, configFile: file };
}

/**
 * docex's words for its settings in messages (shared/src/core/hints.ts): DOCEX_API_KEY and
 * DOCEX_BASE_URL, the keys of the profile in use, or where profiles are and --profile to choose one.
 */
export function docexTerms(
  settings: Pick<Settings, 'profile' | 'configFile'> & {
    api: Pick<ApiSettings, 'base_url' | 'api_key_file'>;
  },
  env: NodeJS.ProcessEnv,
): SettingTerms {
  const file = settings.configFile ?? defaultConfigFile(env);
  const { profile, api } = settings;
  const own = (key: string) => `profiles.${profile}.${key} in ${file}`;
  const any = (key: string) => `${key} in a profile of ${file}`;
  return {
    baseUrl: profile !== undefined && api.base_url ? own('base_url') : 'DOCEX_BASE_URL',
    apiKey:
      profile !== undefined && api.api_key_file
        ? `DOCEX_API_KEY (or ${own('api_key_file')}; --profile chooses another profile)`
        : `DOCEX_API_KEY (or ${any('api_key_file')}, chosen with --profile)`,
    proxy: profile !== undefined ? own('proxy') : any('proxy'),
    caFile: profile !== undefined ? own('ca_file') : any('ca_file'),
  };
}

export function clientFrom(
  settings: Settings,
  env: NodeJS.ProcessEnv,
  warn: (line: string) => void,
  debug = false,
): DocexClient {
  const config = { api: settings.api };
  const where = settings.configFile ? `${settings.configFile}: ${settings.section}` : settings.section;
  const terms = docexTerms(settings, env);
  if (env.DOCEX_API_KEY && settings.api.api_key_file)
    warn(`docex: DOCEX_API_KEY is set and wins over ${settings.section}.api_key_file`);
  return createNodeClient({
    baseUrl: baseUrlFrom(
      config,
      env,
      where,
      // docex's terms: the variable, or the profiles' file (a profile in use: its own key).
      settings.profile !== undefined
        ? `profiles.${settings.profile}.base_url in ${settings.configFile} or DOCEX_BASE_URL`
        : `DOCEX_BASE_URL (or base_url in a profile of ${settings.configFile ?? defaultConfigFile(env)}, chosen with --profile)`,
    ),
    apiKey: apiKeyFrom(config, env, where, terms),
    terms,
    concurrency: settings.api.concurrency,
    intervalCap: settings.api.requests_per_second,
    intervalMs: 1000,
    rateMarginMs: settings.api.rate_margin_ms,
    timeoutMs: settings.api.timeout_ms,
    retry: { maxRetries: settings.api.max_retries },
    userAgent: 'docex-cli/0.1',
    // One command at a time, nothing else on the event loop: uploads read their files without the
    // thread pool (less CPU per byte; see NodeTransportOptions.syncFileReads).
    syncFileReads: true,
    ...connectionFrom(config, env, where, debug, (line) => warn(`docex ${line}`)),
  });
}
