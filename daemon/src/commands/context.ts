/**
 * What docex-sync's commands share once they run: the config, the client, the logger. Heavy (zod,
 * got, pino), so each command imports it when it runs, never the table.
 */
import type { DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import type { Logger } from 'pino';
import packageJson from '../../package.json' with { type: 'json' };
import { isOn, type Options } from '@docex/cli-kit/args';
import { syncTerms } from '@docex/cli-kit/api-config';
import { apiKeyFrom, baseUrlFrom, connectionFrom, loadConfig, type Config } from '../config/config.ts';
import { createLogger } from '../common/logging.ts';
import { configFileOf, type SyncIo } from './io.ts';

/**
 * The largest answer the daemon reads (docs/daemon.md, "Health"): far above any document's data,
 * and a hostile answer is refused before it holds much memory or long parsing.
 */
const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

export interface Context {
  configFile: string;
  config: Config;
  io: SyncIo;
  /** A client for `config` (the injected factory, or the Node client); --debug traces its requests. */
  client(config: Config, log?: Logger): DocexClient;
  logger(config: Config): Logger;
  /** A line on stdout. */
  out(line: string): void;
}

export function open(options: Options, io: SyncIo): Context {
  const configFile = configFileOf(options, io);
  const debug = isOn(options, 'debug');
  return {
    configFile,
    config: loadConfig(configFile),
    io,
    client: (config, log) => io.client?.(config, log) ?? nodeClient(config, io, debug, log),
    logger: (config) =>
      io.stderr === process.stderr
        ? createLogger(config.log_level)
        : createLogger(config.log_level, { destination: io.stderr, pretty: io.stderr.isTTY === true }),
    out: (line) => void io.stdout.write(`${line}\n`),
  };
}

function nodeClient(config: Config, io: SyncIo, debug: boolean, log?: Logger): DocexClient {
  return createNodeClient({
    baseUrl: baseUrlFrom(config, io.env),
    apiKey: apiKeyFrom(config, io.env),
    concurrency: config.api.concurrency,
    intervalCap: config.api.requests_per_second,
    ...connectionFrom(config, io.env, 'api', debug, (line) => void io.stderr.write(`docex-sync ${line}\n`)),
    intervalMs: 1000,
    rateMarginMs: config.api.rate_margin_ms,
    timeoutMs: config.api.timeout_ms,
    retry: { maxRetries: config.api.max_retries },
    logger: log,
    userAgent: `docex-sync/${packageJson.version}`,
    terms: syncTerms(config),
    maxResponseBytes: MAX_ANSWER_BYTES,
  });
}
