/**
 * The state DB's schema: each entry takes it from version i to i + 1, and SQLite's user_version
 * holds the version. Only ever appended to: a DB written by an older docex-sync is brought up to
 * date by the entries it has not run yet, all in one transaction.
 */
import type Database from 'better-sqlite3';
import { NEVER } from '../domain/lifecycle.ts';

const MIGRATIONS = [
  // 1: the first schema (docex-sync 0.1 created it without a version).
  `CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    watch TEXT NOT NULL,
    path TEXT NOT NULL,
    rel TEXT NOT NULL,
    size INTEGER NOT NULL DEFAULT 0,
    mtime_ms INTEGER NOT NULL DEFAULT 0,
    sha256 TEXT,
    state TEXT NOT NULL,
    outcome TEXT,
    task_id TEXT,
    document_id INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    reason TEXT,
    finalized INTEGER NOT NULL DEFAULT 0,
    next_at INTEGER NOT NULL DEFAULT 0,
    poll_interval_ms INTEGER NOT NULL DEFAULT 0,
    stable_since INTEGER NOT NULL DEFAULT 0,
    discovered_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS files_state ON files(state, next_at);
  CREATE INDEX IF NOT EXISTS files_path ON files(path);
  CREATE INDEX IF NOT EXISTS files_sha ON files(sha256);
  CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS reruns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    finished_at INTEGER,
    dry_run INTEGER NOT NULL,
    override INTEGER NOT NULL,
    documents INTEGER,
    rerun INTEGER,
    not_rerun INTEGER,
    errors TEXT,
    status TEXT NOT NULL
  );`,
  // 2: file identity (inode), the task timeout's start, local problems, paused watches; rows at rest
  // are never due (next_at = NEVER), so finding due work never reads them.
  `ALTER TABLE files ADD COLUMN ino INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE files ADD COLUMN blocked TEXT;
  ALTER TABLE files ADD COLUMN uploaded_at INTEGER;
  UPDATE files SET uploaded_at = updated_at WHERE state = 'uploaded';
  UPDATE files SET next_at = ${NEVER} WHERE state = 'archived' OR (state = 'failed' AND finalized = 1);
  UPDATE files SET next_at = 0 WHERE state = 'failed' AND finalized = 0;
  CREATE INDEX IF NOT EXISTS files_watch ON files(watch);
  CREATE TABLE IF NOT EXISTS watches (
    path TEXT PRIMARY KEY,
    paused_reason TEXT NOT NULL,
    paused_at INTEGER NOT NULL,
    probe_at INTEGER NOT NULL
  );`,
  // 3: finding the next time something comes due is one index seek.
  `CREATE INDEX IF NOT EXISTS files_next ON files(next_at);`,
  // 4: the route a file is sent by (routing by subfolder), counted per route by status.
  `ALTER TABLE files ADD COLUMN route TEXT;`,
  // 5: mail intake (daemon/src/mail): each message seen, keyed by mailbox + UIDVALIDITY + UID, and
  // which file rows its attachments became.
  `CREATE TABLE IF NOT EXISTS mail_messages (
    id INTEGER PRIMARY KEY,
    mailbox TEXT NOT NULL,
    uidvalidity INTEGER NOT NULL,
    uid INTEGER NOT NULL,
    message_id TEXT,
    sender TEXT NOT NULL,
    subject TEXT NOT NULL,
    sent_at TEXT,
    outcome TEXT NOT NULL,
    reason TEXT,
    attachments INTEGER NOT NULL,
    skipped TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    done_at INTEGER,
    UNIQUE (mailbox, uidvalidity, uid)
  );
  CREATE INDEX IF NOT EXISTS mail_messages_mid ON mail_messages(mailbox, message_id);
  CREATE INDEX IF NOT EXISTS mail_messages_pending ON mail_messages(mailbox, done_at);
  CREATE TABLE IF NOT EXISTS mail_attachments (
    file_id INTEGER PRIMARY KEY,
    message INTEGER NOT NULL,
    name TEXT NOT NULL
  );`,
  // 6: names from the data, decided once per file (a replay or a rerun finds the same files).
  `ALTER TABLE files ADD COLUMN archive_rel TEXT;
  ALTER TABLE files ADD COLUMN result_base TEXT;`,
  // 7: the review queue: why a document waits for a person, where its original waits, when it was approved.
  `ALTER TABLE files ADD COLUMN review TEXT;
  ALTER TABLE files ADD COLUMN review_path TEXT;
  ALTER TABLE files ADD COLUMN approved_at INTEGER;`,
  // 8: retention. Where an original was actually moved (freeTarget may have given "a (2).pdf"), and
  // each file retention settled: deleted, found gone, or kept because it is no longer what
  // docex-sync wrote. A file row with an entry of a kind is not looked at again for that kind.
  `ALTER TABLE files ADD COLUMN archive_path TEXT;
  CREATE TABLE IF NOT EXISTS pruned (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    path TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT,
    at INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS pruned_file ON pruned(file_id, kind);`,
  // 9: fewer index entries per new row (issue #22: recording 1,000,000 files at start-up spent most
  // of its time writing six B-trees per row). A new row goes into the table, files_path and
  // files_state only:
  // - files_next went: nextDue finds the earliest next_at through files_state, a seek per state;
  // - files_sha holds only rows with a hash (every query of it has `sha256 = ?`), not the NULL of
  //   every file not yet read;
  // - files_watch holds only the rows retention pages through (archived, failed): the one query
  //   that needs watch order (pruneDue) names the state.
  `DROP INDEX IF EXISTS files_next;
  DROP INDEX IF EXISTS files_sha;
  CREATE INDEX files_sha ON files(sha256) WHERE sha256 IS NOT NULL;
  DROP INDEX IF EXISTS files_watch;
  CREATE INDEX files_watch ON files(watch) WHERE state = 'archived' OR state = 'failed';`,
  // 10: the rows of a document, found by a seek. pruneDue's results read, for each archived row, the
  // other rows of its document through files_state instead: every row in those states, so paging
  // through 20,000 archived rows took 79 s (73 ms with it). Partial: a row gets its entry when it
  // gets a document id (a task done), never at discovery.
  `CREATE INDEX files_document ON files(document_id) WHERE document_id IS NOT NULL;`,
  // 11: the status page, /healthz and /metrics read what the files at rest add up to from a tally
  // kept by triggers, and find the latest finished and held-back rows through partial indexes.
  // They counted and sorted every row instead: with 1,000,000 archived rows a refresh of the page
  // (every 3 s while it is open) read for ~1.5 s. Rows at rest (archived, failed) are the ones that
  // pile up; the others are work in flight, counted through files_state. The triggers fire when a
  // row enters, leaves or changes at rest. None fires on INSERT: a row is always inserted in flight
  // (INSERT_ROW), and a trigger on insert, even one whose WHEN is false, costs every row of a
  // start-up scan that inserts a million.
  `CREATE TABLE rest_tallies (
    watch TEXT NOT NULL,
    route TEXT NOT NULL,
    state TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (watch, route, state, outcome)
  ) WITHOUT ROWID;
  INSERT INTO rest_tallies
    SELECT watch, IFNULL(route, ''), state, IFNULL(outcome, ''), COUNT(*) FROM files
    WHERE state = 'archived' OR state = 'failed' GROUP BY 1, 2, 3, 4;
  CREATE TRIGGER rest_tally_delete AFTER DELETE ON files
  WHEN OLD.state = 'archived' OR OLD.state = 'failed' BEGIN
    UPDATE rest_tallies SET n = n - 1
      WHERE watch = OLD.watch AND route = IFNULL(OLD.route, '') AND state = OLD.state AND outcome = IFNULL(OLD.outcome, '');
  END;
  CREATE TRIGGER rest_tally_update AFTER UPDATE OF watch, route, state, outcome ON files
  WHEN (OLD.state = 'archived' OR OLD.state = 'failed' OR NEW.state = 'archived' OR NEW.state = 'failed')
    AND (OLD.watch IS NOT NEW.watch OR OLD.route IS NOT NEW.route OR OLD.state IS NOT NEW.state
      OR OLD.outcome IS NOT NEW.outcome) BEGIN
    UPDATE rest_tallies SET n = n - 1
      WHERE (OLD.state = 'archived' OR OLD.state = 'failed') AND watch = OLD.watch
        AND route = IFNULL(OLD.route, '') AND state = OLD.state AND outcome = IFNULL(OLD.outcome, '');
    INSERT INTO rest_tallies
      SELECT NEW.watch, IFNULL(NEW.route, ''), NEW.state, IFNULL(NEW.outcome, ''), 1
      WHERE NEW.state = 'archived' OR NEW.state = 'failed'
      ON CONFLICT DO UPDATE SET n = n + 1;
  END;
  CREATE INDEX files_finished ON files(updated_at) WHERE state = 'archived' OR state = 'failed';
  CREATE INDEX files_blocked ON files(updated_at) WHERE blocked IS NOT NULL;`,
  // 12: mail left as it was (issue #41): the after-action (flag, move) runs only for a message whose
  // every wanted attachment was recorded; for the others this says why it did not (NULL: it ran, or
  // the row is older than this version, which ran it for every message). Status lists the last ones.
  `ALTER TABLE mail_messages ADD COLUMN left_reason TEXT;
  CREATE INDEX mail_messages_left ON mail_messages(mailbox, id) WHERE left_reason IS NOT NULL;`,
  // 13: the audit trail of people's decisions (approve, reject, correct, retry): store/audit.ts.
  `CREATE TABLE audit (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    who TEXT NOT NULL,
    via TEXT NOT NULL,
    action TEXT NOT NULL,
    file_id INTEGER,
    file TEXT NOT NULL,
    field TEXT,
    old_value TEXT,
    new_value TEXT,
    note TEXT,
    announced INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX audit_at ON audit(at);
  CREATE INDEX audit_unannounced ON audit(id) WHERE announced = 0;`,
  // 14: batched uploads (issue #42): the request a file was sent in with others, written before it
  // leaves (domain/upload-batch.ts); NULL: sent alone.
  `ALTER TABLE files ADD COLUMN upload_batch TEXT;`,
];
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the DB at `path` (open on `db`) to SCHEMA_VERSION; refuses a DB of a newer docex-sync,
 * which this one cannot read safely.
 */
export function migrate(db: Database.Database, path: string) {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION)
    throw new Error(
      `${path}: the state DB has schema version ${version}, written by a newer docex-sync (this one knows ${SCHEMA_VERSION})`,
    );
  if (version === SCHEMA_VERSION) return;
  db.transaction(() => {
    for (let v = version; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}
