/**
 * A state DB written by docex-sync 0.1.0 opens in this release: its migrations run, `status` reads
 * it, and the daemon carries on with the files 0.1.0 left waiting.
 *
 * The fixture test/fixtures/state-0.1.0.db was made by 0.1.0's own code: 0.1.0 has no tag, so it is
 * commit cddedcd, the last one before the round that added migrations 4-6 (package version 0.1.0,
 * the CHANGELOG's 0.1.0 entry, schema 3, which is also the schema of 8f8624f where that entry was
 * first written). Regenerate it with `bash test/fixtures/make-state-0.1.0.sh` (see its header and
 * make-state-0.1.0.ts for what it holds): done-1/2.txt archived, empty.txt failed and reported,
 * queued-1/2.txt stable, waiting for a service that could not be reached.
 *
 * 0.1.0 stored absolute paths, and the fixture's are those of the temp folder it was made in; the
 * test moves them to its own folder (the one change made to the file, as an operator moving the
 * whole tree would) and puts the waiting files back in the inbox with the same bytes and mtime.
 */
import { copyFile, mkdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { cliStatus, renderStatus } from '../../../daemon/src/status/report.ts';
import { SCHEMA_VERSION } from '../../../daemon/src/store/state.ts';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  SECRET,
  stopCliChildren,
  until,
  type World,
} from '../helpers.ts';

const FIXTURE = join(import.meta.dirname, '../../fixtures/state-0.1.0.db');
const MTIME = new Date('2026-11-24T12:00:00Z');

// Two CLI runs and a daemon: limits from a measured CLI start.
const startMs = await calibrate();
let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

type Row = { id: number; rel: string; state: string; outcome: string | null; reason: string | null };
function rowsOf(dbFile: string): { version: number; rows: Row[] } {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    return {
      version: db.pragma('user_version', { simple: true }) as number,
      rows: db.prepare('SELECT id, rel, state, outcome, reason FROM files ORDER BY id').all() as Row[],
    };
  } finally {
    db.close();
  }
}

/** When 0.1.0 last found the service unreachable (kept in the DB's kv table). */
function unreachableSince(dbFile: string): number {
  const db = new Database(dbFile, { readonly: true, fileMustExist: true });
  try {
    const value = db
      .prepare("SELECT value FROM kv WHERE key = 'service.unreachable'")
      .pluck()
      .get() as string;
    return (JSON.parse(value) as { since: number }).since;
  } finally {
    db.close();
  }
}

/** The fixture in the world's state folder, its paths moved from the folder 0.1.0 ran in to the world's. */
async function installFixture(w: World) {
  const dbFile = join(w.dir, 'state', 'sync.db');
  await mkdir(join(w.dir, 'state'), { recursive: true });
  await copyFile(FIXTURE, dbFile);
  const db = new Database(dbFile);
  try {
    const watch = db.prepare('SELECT watch FROM files LIMIT 1').pluck().get() as string;
    const root = watch.replace(/\/inbox$/, '');
    db.prepare('UPDATE files SET watch = ? || substr(watch, ?), path = ? || substr(path, ?)').run(
      w.dir,
      root.length + 1,
      w.dir,
      root.length + 1,
    );
  } finally {
    db.close();
  }
  return dbFile;
}

describe('state DB of 0.1.0', () => {
  it(
    'opens with this release: migrated, read by status, its waiting files processed',
    async () => {
      const w = await makeWorld();
      world = w;
      const dbFile = await installFixture(w);
      const before = rowsOf(dbFile);
      expect(before.version).toBe(3);
      expect(before.rows.map((r) => [r.rel, r.state])).toEqual([
        ['done-1.txt', 'archived'],
        ['done-2.txt', 'archived'],
        ['empty.txt', 'failed'],
        ['queued-1.txt', 'stable'],
        ['queued-2.txt', 'stable'],
      ]);
      for (const n of ['1', '2']) {
        const file = join(w.dir, 'inbox', `queued-${n}.txt`);
        await writeFile(file, invoice(`Q-${n}`));
        await utimes(file, MTIME, MTIME);
      }

      // `status` in this process, at a fixed time: a minute after 0.1.0 found the service gone.
      const since = unreachableSince(dbFile);
      const read = cliStatus(w.config(), () => since + 60_000);
      expect(rowsOf(dbFile).version).toBe(SCHEMA_VERSION);
      expect(read.health).toEqual({
        level: 'attention',
        ok: false,
        reasons: [
          expect.stringMatching(
            /^the service has been unreachable for 60 s: upload_file: connection failed: connect ECONNREFUSED /,
          ),
          '1 failed file(s): fix the cause, then docex-sync retry --all (or Retry on the status page)',
        ],
      });
      expect(renderStatus(read)).toContain(
        `failed ${join(w.dir, 'failed', 'empty.txt')}: extraction failed: Empty file`,
      );
      expect(renderStatus(read)).toContain(`Watch ${join(w.dir, 'inbox')}: stable 2, archived 2, failed 1`);
      // And as a process, at whatever time it is now (the unreachable service only grows older).
      const status = runCli(['status', '--config', w.configFile]);
      expect([1, 6]).toContain(await status.exited);
      expect(status.output()).toContain(`Watch ${join(w.dir, 'inbox')}: stable 2, archived 2, failed 1`);

      // The daemon of this release carries on with the rows 0.1.0 left waiting.
      const running = await w.start();
      await until('the two waiting files archived', () => {
        const rows = rowsOf(dbFile).rows.filter((r) => r.rel.startsWith('queued-'));
        return rows.length === 2 && rows.every((r) => r.state === 'archived') ? rows : undefined;
      });
      await running.stop();
      const after = rowsOf(dbFile);
      expect(after.version).toBe(SCHEMA_VERSION);
      // The same rows went on (no second row per file), and only they were sent.
      expect(after.rows.map((r) => [r.id, r.rel, r.state, r.outcome])).toEqual([
        [1, 'done-1.txt', 'archived', 'processed'],
        [2, 'done-2.txt', 'archived', 'processed'],
        [3, 'empty.txt', 'failed', 'failed'],
        [4, 'queued-1.txt', 'archived', 'processed'],
        [5, 'queued-2.txt', 'archived', 'processed'],
      ]);
      const client = createNodeClient({ baseUrl: w.emulator.url, apiKey: SECRET });
      expect((await client.fetchDocuments({ template_id: w.templateId })).length).toBe(2);

      // The service answered: only the file 0.1.0 failed still needs attention.
      const later = runCli(['status', '--config', w.configFile]);
      expect(await later.exited).toBe(1);
      expect(later.output()).toContain(`Watch ${join(w.dir, 'inbox')}: archived 4, failed 1`);
      expect(later.output()).not.toMatch(/unreachable/);
    },
    Math.max(60_000, startMs * 60),
  );
});
