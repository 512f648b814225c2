/**
 * The exit codes alone, importing nothing: the commands' entries answer --version, --help and usage
 * mistakes with them before anything heavy is loaded (exit.ts maps errors to them).
 * 7 and up: the service could not be reached, and why, so that a script (or whoever reads its log)
 * knows what to fix: the network's DNS, the address, the proxy, its credentials, a certificate.
 * 6 is `docex-sync status`'s "failing" (status/report.ts).
 */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  unreachable: 4,
  stateDb: 5,
  dns: 7,
  refused: 8,
  proxy: 9,
  proxyAuth: 10,
  tlsUnknownIssuer: 11,
  tlsNameMismatch: 12,
  tlsExpired: 13,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
