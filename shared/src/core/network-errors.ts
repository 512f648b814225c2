/**
 * A network failure the transport told apart (DNS, refused, proxy, TLS) as its error, with a message
 * that says what to do in the words of the program that shows it (hints.ts).
 */
import {
  DocexConnectionError,
  DocexConnectionRefusedError,
  DocexDnsError,
  DocexProxyAuthError,
  DocexProxyError,
  DocexTlsError,
} from './errors.ts';
import { CLIENT_OPTION_TERMS, HINTS, type SettingTerms } from './hints.ts';
import type { NetworkFailure } from './transport.ts';

/**
 * The error for a failure the transport told apart, with a message that says what to do in the
 * words of the program that shows it (`terms`, common/hints.ts).
 */
export function networkError(
  operation: string,
  failure: NetworkFailure,
  code: string | undefined,
  cause?: unknown,
  terms: SettingTerms = CLIENT_OPTION_TERMS,
): DocexConnectionError {
  const options = { code, failure, cause };
  const codeNote = code ? ` (${code})` : '';
  switch (failure.type) {
    case 'dns':
      return new DocexDnsError(
        operation,
        `cannot resolve the host name ${failure.host}${codeNote}: ${HINTS.dns(terms)}`,
        options,
      );
    case 'refused':
      return new DocexConnectionRefusedError(
        operation,
        `connection refused by ${failure.address}${codeNote}: ${HINTS.refused(terms)}`,
        options,
      );
    case 'proxy-unreachable':
      return new DocexProxyError(
        operation,
        `the proxy ${failure.proxy} cannot be reached: ${failure.detail}${codeNote}; ${HINTS.proxyUnreachable(terms)}`,
        options,
      );
    case 'proxy-auth':
      return new DocexProxyAuthError(
        operation,
        failure.credentialsSent
          ? `the proxy ${failure.proxy} refused its user name and password (${failure.status} ${failure.statusText}): ${HINTS.proxyCredentialsRefused(terms)}`
          : `the proxy ${failure.proxy} requires authentication (${failure.status} ${failure.statusText}): ${HINTS.proxyCredentialsMissing(terms)}`,
        options,
      );
    case 'proxy-refused':
      return new DocexProxyError(
        operation,
        `the proxy ${failure.proxy} refused the tunnel to ${failure.target} (${failure.status} ${failure.statusText}): ${
          failure.status >= 500
            ? HINTS.proxyCannotReachService(terms)
            : 'its rules forbid this destination; ask its administrator to allow it (for a port other than 443, its list of CONNECT ports), or exempt the service with NO_PROXY'
        }`,
        options,
      );
    case 'tls':
      return new DocexTlsError(operation, tlsMessage(failure, terms), options);
  }
}

function tlsMessage(f: Extract<NetworkFailure, { type: 'tls' }>, terms: SettingTerms): string {
  const subject = f.subject ? ` (subject ${f.subject})` : '';
  switch (f.reason) {
    case 'unknown-issuer':
      return `TLS: the certificate of ${f.host}${subject} is issued by ${f.issuer ? `"${f.issuer}"` : 'an authority'}, which this machine does not trust (${f.code}): ${HINTS.untrustedIssuer(terms)} (a proxy that inspects TLS signs with the company's CA)`;
    case 'name-mismatch':
      return `TLS: the certificate presented for ${f.host}${subject} is not valid for that name; it names ${f.names ?? 'other hosts'} (${f.code}): ${HINTS.nameMismatch(terms)}`;
    case 'expired':
      return `TLS: the certificate of ${f.host}${subject} expired${f.validTo ? ` on ${f.validTo}` : ''} (${f.code}): the service must renew it; check this machine's clock too`;
    case 'not-yet-valid':
      return `TLS: the certificate of ${f.host}${subject} is not valid before ${f.validFrom ?? 'a later date'} (${f.code}): check this machine's clock`;
    case 'other':
      return `TLS: the certificate of ${f.host}${subject} was refused (${f.code})${f.issuer ? `, issuer "${f.issuer}"` : ''}: ${HINTS.untrustedIssuer(terms)} if it is a private CA`;
  }
}
