/**
 * Exit codes shared by docex-sync and docex (docs/daemon.md, docs/cli.md). A failure from the
 * service exits with what its classification says (DocexError.kind, decided once where the error is
 * made), never with a second guess from here.
 */
import {
  DocexConnectionRefusedError,
  DocexDnsError,
  DocexError,
  DocexProxyAuthError,
  DocexProxyError,
  DocexTlsError,
  type ErrorKind,
} from '@docex/shared';
import { ConfigError, UsageError } from './errors.ts';
import { EXIT, type ExitCode } from './exit-codes.ts';

export { EXIT, type ExitCode } from './exit-codes.ts';

const EXIT_OF_KIND: Record<ErrorKind, ExitCode> = {
  // Refused the same way next time: the request (or the answer) is wrong, not the moment.
  permanent: EXIT.failure,
  auth: EXIT.auth,
  // Unreachable or unavailable after the client's retries (network, timeout, 429, 5xx): try later.
  transient: EXIT.unreachable,
  aborted: EXIT.failure,
};

/** The service refused the API key (check_api_key at start or after a reload): names the key and what to do. */
export class KeyRefusedError extends ConfigError {}

/** The state DB cannot be used (not a SQLite file, damaged): names it, how to move it aside and the cost. */
export class StateDbUnusableError extends Error {}

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof KeyRefusedError) return EXIT.auth;
  if (error instanceof StateDbUnusableError) return EXIT.stateDb;
  if (error instanceof ConfigError || error instanceof UsageError) return EXIT.usage;
  if (error instanceof DocexError) return networkExitCode(error) ?? EXIT_OF_KIND[error.kind];
  return EXIT.failure;
}

/** The code of a failure to reach the service that the client told apart (see EXIT). */
function networkExitCode(error: DocexError): ExitCode | undefined {
  if (error instanceof DocexDnsError) return EXIT.dns;
  if (error instanceof DocexConnectionRefusedError) return EXIT.refused;
  if (error instanceof DocexProxyAuthError) return EXIT.proxyAuth;
  if (error instanceof DocexProxyError) return EXIT.proxy;
  if (error instanceof DocexTlsError) {
    if (error.reason === 'unknown-issuer') return EXIT.tlsUnknownIssuer;
    if (error.reason === 'name-mismatch') return EXIT.tlsNameMismatch;
    if (error.reason === 'expired' || error.reason === 'not-yet-valid') return EXIT.tlsExpired;
    return EXIT.tlsUnknownIssuer;
  }
  return undefined;
}
