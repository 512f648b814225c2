/** What the sandbox says about where it listens: the address the socket is bound to, not the one asked for. */
import type { AddressInfo } from 'node:net';
import type { NetworkInterfaceInfo } from 'node:os';

const urlOf = (address: string, port: number) =>
  `http://${address.includes(':') ? `[${address}]` : address}:${port}`;

/**
 * One line: the bound address and port; for a wildcard (0.0.0.0, ::) also the URL to use on this
 * machine and the URLs other machines can use (the non-internal addresses of `interfaces`).
 */
export function listeningLine(bound: AddressInfo, interfaces: NodeJS.Dict<NetworkInterfaceInfo[]>): string {
  const wildcard = bound.address === '0.0.0.0' || bound.address === '::';
  if (!wildcard) return `listening on ${urlOf(bound.address, bound.port)}`;
  const ipv4Only = bound.address === '0.0.0.0';
  const others = Object.values(interfaces)
    .flatMap((list) => list ?? [])
    .filter((i) => !i.internal && (i.family === 'IPv4' || !ipv4Only) && !i.address.startsWith('fe80:'))
    .map((i) => urlOf(i.address, bound.port));
  const scope = ipv4Only ? 'every IPv4 address of this machine' : 'every address of this machine';
  const remote = others.length
    ? `; from other machines: ${others.join(', ')}`
    : '; this machine has no other network address';
  return `listening on ${bound.address}:${bound.port} (${scope}): ${urlOf('127.0.0.1', bound.port)} here${remote}`;
}
