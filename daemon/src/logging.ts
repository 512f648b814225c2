/** pino: JSON lines, or pretty on a terminal; the Authorization header and the key redacted. */
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import { REDACT_PATHS } from '../../shared/src/node/index.ts';

export function createLogger(
  level: string,
  options: { pretty?: boolean; destination?: NodeJS.WritableStream } = {},
): Logger {
  const base = {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    base: { service: 'docex-sync' },
  };
  if (options.pretty ?? process.stdout.isTTY)
    return pino(
      base,
      pretty({
        colorize: true,
        translateTime: 'SYS:HH:MM:ss',
        ignore: 'pid,hostname,service',
        destination: options.destination ?? 1,
      }),
    );
  return options.destination ? pino(base, options.destination) : pino(base);
}
