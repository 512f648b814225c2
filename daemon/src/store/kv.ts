/**
 * The kv table: small values of the run that have no table of their own. Store-internal: the other
 * repositories of store/ (run-flags.ts, pulls.ts, mail.ts) give each key a typed method, so a key
 * is spelled here and its value's shape in one repository, and nothing outside store/ reads kv.
 */
import type { Connection } from './connection.ts';

/** The key-value rows of the state DB: each key is spelled here and nowhere else. */
export const KV = {
  /** Who holds the DB's lock (pid, host, start), named when a second daemon is refused. */
  holder: 'daemon.holder',
  /** `{since, reason}` while the service cannot be reached. */
  unreachable: 'service.unreachable',
  /** `{at, message}` after the service refused the API key (the run stopped, exit 3), until a run's key check passes. */
  keyRefused: 'api.key_refused',
  /** The last pulls, newest first (JSON PullRecord[]). */
  pullHistory: 'pull.history',
  /** The pull's cursor (ms) and the fingerprints of documents seen in its overlap. */
  pullCursor: 'pull.cursor',
  pullSeen: 'pull.seen',
  /** Watches whose native watcher hears nothing (JSON: watch path → BlindWatcherRecord). */
  blindWatchers: 'watch.blind',
} as const;
export type KvKey = (typeof KV)[keyof typeof KV];

export class KvRepository {
  private readonly c: Connection;

  constructor(connection: Connection) {
    this.c = connection;
  }

  get(key: KvKey): string | undefined {
    return (this.c.st(`SELECT value FROM kv WHERE key = ?`).get(key) as { value: string } | undefined)?.value;
  }
  set(key: KvKey, value: string) {
    this.c.write(() =>
      this.c
        .st(`INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`)
        .run(key, value),
    );
  }
  delete(key: KvKey) {
    this.c.write(() => this.c.st(`DELETE FROM kv WHERE key = ?`).run(key));
  }

  /** A mailbox's connection state as its intake last wrote it (JSON; key mailbox.<name>). */
  mailbox(name: string): string | undefined {
    return (
      this.c.st(`SELECT value FROM kv WHERE key = 'mailbox.' || ?`).get(name) as { value: string } | undefined
    )?.value;
  }
  setMailbox(name: string, value: string) {
    this.c.write(() =>
      this.c
        .st(
          `INSERT INTO kv (key, value) VALUES ('mailbox.' || ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
        )
        .run(name, value),
    );
  }
}
