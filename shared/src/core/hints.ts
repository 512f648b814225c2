/**
 * What to do about a failure, once for every program: the client's network errors and both
 * binaries' refused key, said in the words of the program that shows them. docex-sync's user sets
 * `api.base_url` in a config file; docex's sets DOCEX_BASE_URL or a profile; a library user passes
 * `baseUrl`. Each program gives its `SettingTerms`; the sentences are the same.
 */

/** Where a program's user sets what a hint names. */
export interface SettingTerms {
  /** The service's address, e.g. "api.base_url", "DOCEX_BASE_URL". */
  baseUrl: string;
  /** The API key, e.g. "DOCEX_API_KEY (or api.api_key_file)". */
  apiKey: string;
  /** A proxy besides HTTPS_PROXY / HTTP_PROXY, e.g. "api.proxy". */
  proxy: string;
  /** A CA file besides NODE_EXTRA_CA_CERTS, e.g. "api.ca_file". */
  caFile: string;
}

/** The client's own options (createNodeClient), for a program that gives no terms of its own. */
export const CLIENT_OPTION_TERMS: SettingTerms = {
  baseUrl: 'the baseUrl option',
  apiKey: 'the apiKey option',
  proxy: 'the proxy option',
  caFile: 'the caFile option',
};

/** The sentences, each what to do for one kind of failure. */
export const HINTS = {
  keyRefused: (t: SettingTerms) => `set ${t.apiKey} to a key this service accepts`,
  /** A 404 to an operation that names nothing that could be missing: the address is not the service's. */
  noService: (t: SettingTerms) =>
    `no Document Extraction Service answers at this address; check the service URL (${t.baseUrl}): the address without /v1`,
  dns: (t: SettingTerms) =>
    `check the service URL (${t.baseUrl}) and this machine's DNS; inside a company network set HTTPS_PROXY or ${t.proxy}`,
  refused: (t: SettingTerms) =>
    `nothing listens there; check the service URL (${t.baseUrl}) and that the service is up`,
  proxyUnreachable: (t: SettingTerms) =>
    `check HTTPS_PROXY / HTTP_PROXY or ${t.proxy}, or exempt the service with NO_PROXY`,
  proxyCredentialsRefused: (t: SettingTerms) => `correct them in ${t.proxy} or HTTPS_PROXY`,
  proxyCredentialsMissing: (t: SettingTerms) =>
    `give http://USER:PASSWORD@host:port in ${t.proxy} or HTTPS_PROXY`,
  proxyCannotReachService: (t: SettingTerms) =>
    `it could not reach the service; check the service URL (${t.baseUrl})`,
  untrustedIssuer: (t: SettingTerms) =>
    `set ${t.caFile} or NODE_EXTRA_CA_CERTS to the PEM file of the CA that issued it`,
  nameMismatch: (t: SettingTerms) =>
    `use a host name of the certificate in the service URL (${t.baseUrl}), or have the certificate reissued`,
} as const;
