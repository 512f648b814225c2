/**
 * Which proxy a request goes through, decided from the conventional environment variables or an
 * explicit setting: pure, so the Node transport and the CLIs' diagnostics decide the same way.
 */

/** The variables read, lower case first (curl's and Node's convention when both are set). */
export type ProxyEnv = Readonly<Record<string, string | undefined>>;

/** A proxy URL as it may be shown anywhere: the user and password replaced. */
export function redactProxyUrl(url: string): string {
  if (!URL.canParse(url)) return '(an invalid proxy URL)';
  const parsed = new URL(url);
  const hadCredentials = parsed.username !== '' || parsed.password !== '';
  parsed.username = '';
  parsed.password = '';
  const shown = `${parsed.protocol}//${hadCredentials ? '[REDACTED]@' : ''}${parsed.host}`;
  return shown;
}

/** The proxy's user and password, decoded, for a Proxy-Authorization header and for redaction. */
export function proxyCredentials(url: string): { user: string; password: string } | undefined {
  if (!URL.canParse(url)) return undefined;
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return undefined;
  return { user: decodeURIComponent(parsed.username), password: decodeURIComponent(parsed.password) };
}

/**
 * A proxy URL is usable when it is http:// (the common forward proxy; https:// proxies are rare and
 * not supported yet). A bare `host:port`, as some tools accept, is read as http://host:port.
 */
export function parseProxyUrl(value: string): { url: URL } | { problem: string } {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`;
  if (!URL.canParse(text)) return { problem: `"${redactProxyUrl(text)}" is not a URL` };
  const url = new URL(text);
  if (url.protocol !== 'http:')
    return {
      problem: `${url.protocol}// proxies are not supported (use the proxy's http:// address; HTTPS still goes end to end through a CONNECT tunnel)`,
    };
  if (!url.hostname) return { problem: 'the proxy URL names no host' };
  return { url };
}

const pick = (env: ProxyEnv, name: string): string | undefined => {
  const value = env[name.toLowerCase()] ?? env[name.toUpperCase()];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
};

/**
 * The proxy URL for `target` from HTTPS_PROXY / HTTP_PROXY (by the target's scheme), or undefined
 * when none is set or NO_PROXY exempts the target.
 */
export function proxyFromEnv(target: URL, env: ProxyEnv): string | undefined {
  const proxy = pick(env, target.protocol === 'https:' ? 'https_proxy' : 'http_proxy');
  if (!proxy) return undefined;
  const noProxy = pick(env, 'no_proxy');
  return noProxy && bypassesProxy(target, noProxy) ? undefined : proxy;
}

const defaultPort = (url: URL) => url.port || (url.protocol === 'https:' ? '443' : '80');

/**
 * NO_PROXY, in the forms curl, Go and Node accept: `*`; a host (`api.example.com`, which also covers
 * its sub-domains, as curl does); `.example.com` or `*.example.com` (sub-domains and the domain);
 * any of these with `:port`; an IP address; an IPv4 or IPv6 CIDR block (`10.0.0.0/8`).
 */
export function bypassesProxy(target: URL, noProxy: string): boolean {
  const host = target.hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  const port = defaultPort(target);
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const { name, entryPort } = splitPort(entry);
    if (entryPort !== undefined && entryPort !== port) continue;
    if (name.includes('/')) {
      if (inCidr(host, name)) return true;
      continue;
    }
    const domain = name.replace(/^\*?\./, '').replace(/\.$/, '');
    if (domain === '') continue;
    if (host === domain || host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** `host:port`, `[v6]:port`, a bare IPv6 address (colons, no port) or a CIDR block. */
function splitPort(entry: string): { name: string; entryPort: string | undefined } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1]!, entryPort: bracketed[2] };
  const colons = entry.split(':').length - 1;
  if (colons === 1) {
    const [name, port] = entry.split(':') as [string, string];
    if (/^\d+$/.test(port)) return { name, entryPort: port };
  }
  return { name: entry, entryPort: undefined };
}

function inCidr(host: string, block: string): boolean {
  const [base, bitsText] = block.split('/') as [string, string];
  const bits = Number(bitsText);
  const hostBytes = ipBytes(host);
  const baseBytes = ipBytes(base);
  if (!hostBytes || !baseBytes || hostBytes.length !== baseBytes.length) return false;
  if (!Number.isInteger(bits) || bits < 0 || bits > hostBytes.length * 8) return false;
  for (let bit = 0; bit < bits; bit++) {
    const mask = 0x80 >> (bit % 8);
    if ((hostBytes[bit >> 3]! & mask) !== (baseBytes[bit >> 3]! & mask)) return false;
  }
  return true;
}

/** An IPv4 (4 bytes) or IPv6 (16 bytes) address, or undefined for a host name. */
export function ipBytes(text: string): number[] | undefined {
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) {
    const parts = text.split('.').map(Number);
    return parts.every((p) => p <= 255) ? parts : undefined;
  }
  if (!text.includes(':') || !/^[0-9a-f:.]+$/i.test(text)) return undefined;
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const tail = halves.length === 2 ? groups(halves[1]!) : [];
  const expand = (list: string[]): number[] | undefined => {
    const out: number[] = [];
    for (const group of list) {
      if (group.includes('.')) {
        const v4 = ipBytes(group);
        if (!v4) return undefined;
        out.push(...v4);
      } else {
        if (!/^[0-9a-f]{1,4}$/i.test(group)) return undefined;
        const value = parseInt(group, 16);
        out.push(value >> 8, value & 0xff);
      }
    }
    return out;
  };
  const start = expand(head);
  const end = expand(tail);
  if (!start || !end) return undefined;
  const missing = 16 - start.length - end.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  return [...start, ...new Array<number>(missing).fill(0), ...end];
}
