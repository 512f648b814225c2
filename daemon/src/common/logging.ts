/**
 * pino on stderr (stdout is for a command's results, so `docex-sync rerun ... | jq` works): JSON
 * lines, or readable lines when stderr is a terminal; colours only on a terminal and never with
 * NO_COLOR set. The Authorization header and the key are redacted.
 */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { REDACT_PATHS } from '@docex/shared/node';
import { aboveTheBar } from './progressbar.ts';

/** https://no-color.org: present and not empty turns colours off. */
export const colorAllowed = (stream: object, env: NodeJS.ProcessEnv = process.env) =>
  (stream as { isTTY?: boolean }).isTTY === true && !env.NO_COLOR;

export function createLogger(
  level: string,
  options: { pretty?: boolean; destination?: NodeJS.WritableStream } = {},
): Logger {
  const base = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    base: { service: 'docex-sync' },
  };
  if (options.pretty ?? process.stderr.isTTY)
    return pino(
      base,
      pretty({
        colorize: colorAllowed(options.destination ?? process.stderr),
        translateTime: 'SYS:HH:MM:ss',
        ignore: 'pid,hostname,service',
        // on stderr, log lines go above a progress bar drawn there, not into its line
        destination: options.destination ?? aboveTheBar(process.stderr),
        sync: true,
      }),
    );
  return pino(base, options.destination ?? pino.destination({ dest: 2, sync: true }));
}
