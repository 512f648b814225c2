/** The proxy and TLS trust the transport's agents are made with: a checked proxy URL, extra CA certificates. */
import * as tls from 'node:tls';
import { readFileSync } from 'node:fs';
import { parseProxyUrl } from '../core/proxy.ts';

/** The proxy URL, or a TypeError that says what is wrong with it (never showing its password). */
export function checkedProxyUrl(value: string): URL {
  const parsed = parseProxyUrl(value);
  if ('problem' in parsed) throw new TypeError(`proxy: ${parsed.problem}`);
  return parsed.url;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The `ca` option for the agents, or nothing when no extra CA is given. Node's `ca` replaces its
 * store, so the store in use (public roots, NODE_EXTRA_CA_CERTS, the system's with --use-system-ca)
 * is passed along with the extra certificates.
 */
export function trustedCertificates(
  ca: string | string[] | undefined,
  caFile: string | string[] | undefined,
): { ca?: string[] } {
  const extra: string[] = [];
  for (const text of [ca ?? []].flat()) {
    const found = text.match(PEM_CERTIFICATE);
    if (!found) throw new TypeError('ca: no PEM certificate (-----BEGIN CERTIFICATE-----) in the text given');
    extra.push(...found);
  }
  for (const file of [caFile ?? []].flat()) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new TypeError(
        `CA file ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}): give the path of a PEM file holding the CA certificate(s)`,
      );
    }
    const found = text.match(PEM_CERTIFICATE);
    if (!found) throw new TypeError(`CA file ${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
    extra.push(...found);
  }
  if (extra.length === 0) return {};
  return { ca: [...defaultCertificates(), ...extra] };
}

/** Node's store as it is in use (Node >= 22.15 tells it; before, the roots plus NODE_EXTRA_CA_CERTS). */
function defaultCertificates(): string[] {
  if (typeof tls.getCACertificates === 'function') return tls.getCACertificates('default');
  const extraFile = process.env.NODE_EXTRA_CA_CERTS;
  let extra: string[] = [];
  try {
    extra = extraFile ? (readFileSync(extraFile, 'utf8').match(PEM_CERTIFICATE) ?? []) : [];
  } catch {
    // Node warns about an unreadable NODE_EXTRA_CA_CERTS itself at start.
  }
  return [...tls.rootCertificates, ...extra];
}
