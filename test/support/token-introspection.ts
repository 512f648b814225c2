/**
 * A stand-in for an identity provider's OAuth2 token-introspection endpoint (RFC 7662), the one
 * part of the mail tests that is not real: no identity provider runs here. The real dovecot's
 * oauth2 passdb POSTs `token=...` to it and logs the user in when the answer says `active: true`
 * with the user's name. Started on a free loopback port, stopped after.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TokenIntrospection {
  /** The introspection URL for dovecot's `introspection_url`. */
  url: string;
  /** From now on only these tokens are active (every other is refused: `{"active": false}`). */
  accept(tokens: string[]): void;
  /** Every question dovecot asked, in order, with the answer given. */
  answers: Array<{ token: string; active: boolean }>;
  stop(): Promise<void>;
}

export async function startTokenIntrospection(username: string): Promise<TokenIntrospection> {
  let active = new Set<string>();
  const answers: TokenIntrospection['answers'] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const token = new URLSearchParams(body).get('token') ?? '';
      const ok = req.method === 'POST' && active.has(token);
      answers.push({ token, active: ok });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(ok ? { active: true, username } : { active: false }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/introspect`,
    accept(tokens) {
      active = new Set(tokens);
    },
    answers,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
