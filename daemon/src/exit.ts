/** Exit codes shared by docex-sync and docex (docs/daemon.md, docs/cli.md), and which error gives which. */
import { DocexAuthenticationError, DocexConnectionError } from '@docex/shared';
import { ConfigError } from './config.ts';

export const EXIT = { ok: 0, failure: 1, usage: 2, auth: 3, unreachable: 4 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof ConfigError) return EXIT.usage;
  if (error instanceof DocexAuthenticationError) return EXIT.auth;
  if (error instanceof DocexConnectionError) return EXIT.unreachable;
  return EXIT.failure;
}
