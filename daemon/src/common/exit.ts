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
import { ConfigError } from './config.ts';

/**
 * 5 and up: the service could not be reached, and why, so that a script (or whoever reads its log)
 * knows what to fix: the network's DNS, the address, the proxy, its credentials, a certificate.
 */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  unreachable: 4,
  dns: 5,
  refused: 6,
  proxy: 7,
  proxyAuth: 8,
  tlsUnknownIssuer: 9,
  tlsNameMismatch: 10,
  tlsExpired: 11,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

const EXIT_OF_KIND: Record<ErrorKind, ExitCode> = {
  // Refused the same way next time: the request (or the answer) is wrong, not the moment.
  permanent: EXIT.failure,
  auth: EXIT.auth,
  // Unreachable or unavailable after the client's retries (network, timeout, 429, 5xx): try later.
  transient: EXIT.unreachable,
  aborted: EXIT.failure,
};

export function exitCodeFor(error: unknown): ExitCode {
  if (error instanceof ConfigError) return EXIT.usage;
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
