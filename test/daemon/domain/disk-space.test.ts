/**
 * The pause for a full disk under the state DB, decided: below state_db_min_free_mb work pauses, a
 * write that failed for lack of room pauses it as well (and is not a crash), and it resumes once
 * there is room; the log says it once when it pauses and once when it resumes, never per check.
 */
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { diskReason, diskStep, isDiskFull, type DiskSpace } from '../../../daemon/src/domain/disk-space.ts';
import { RunState, type RunEvents } from '../../../daemon/src/pipeline/run-state.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';

const MIB = 1024 * 1024;
const space = (freeBytes: number, minFreeBytes = 64 * MIB): DiskSpace => ({
  path: '/var/lib/docex/sync.db',
  freeBytes,
  minFreeBytes,
});
const sqliteError = (code: string) => Object.assign(new Error('database or disk is full'), { code });

describe('the pause decision', () => {
  it('pauses below the threshold (and on an empty filesystem), stays above it', () => {
    expect(diskStep(undefined, space(63 * MIB))).toBe('pause');
    expect(diskStep(undefined, space(0, 0))).toBe('pause');
    expect(diskStep(undefined, space(64 * MIB))).toBe('stay');
  });

  it('a pause by the check resumes once the room is back above the threshold, not before', () => {
    const paused = { since: 0, freeBytes: 10 * MIB, error: undefined };
    expect(diskStep(paused, space(20 * MIB))).toBe('stay');
    expect(diskStep(paused, space(64 * MIB))).toBe('resume');
  });

  it('a pause by a failed write with room above the threshold waits until something is freed', () => {
    const paused = { since: 0, freeBytes: 100 * MIB, error: 'database or disk is full' };
    expect(diskStep(paused, space(100 * MIB))).toBe('stay');
    expect(diskStep(paused, space(101 * MIB))).toBe('resume');
  });

  it('takes SQLITE_FULL, ENOSPC and EDQUOT for a full disk; SQLITE_IOERR only while room is low', () => {
    expect(isDiskFull(sqliteError('SQLITE_FULL'), space(100 * MIB))).toBe(true);
    expect(isDiskFull(sqliteError('ENOSPC'), space(100 * MIB))).toBe(true);
    expect(isDiskFull(sqliteError('EDQUOT'), space(100 * MIB))).toBe(true);
    expect(isDiskFull(sqliteError('SQLITE_IOERR_WRITE'), space(1 * MIB))).toBe(true);
    expect(isDiskFull(sqliteError('SQLITE_IOERR_WRITE'), space(100 * MIB))).toBe(false);
    expect(isDiskFull(sqliteError('SQLITE_CONSTRAINT'), space(0))).toBe(false);
    expect(isDiskFull(new Error('no code'), space(0))).toBe(false);
  });

  it('says where, how much, the threshold and what to do', () => {
    expect(diskReason(space(1.5 * MIB))).toBe(
      'the filesystem of the state DB /var/lib/docex/sync.db has 1.5 MiB free, below state_db_min_free_mb (64.0 MiB): work is paused; free space on that filesystem (or move state_db to a filesystem with room); work resumes by itself when there is room, nothing is lost',
    );
    expect(diskReason(space(100 * MIB), 'database or disk is full')).toContain(
      'a write to the state DB /var/lib/docex/sync.db failed for lack of space (database or disk is full), 100.0 MiB free (state_db_min_free_mb: 64.0 MiB): work is paused;',
    );
  });
});

describe('the run state pauses and resumes all work', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  async function make(free: { bytes: number }) {
    dir = await mkdtemp(join(tmpdir(), 'docex-disk-'));
    const db = new StateDb(join(dir, 'sync.db'));
    const logs: Array<{ level: number; msg: string }> = [];
    const log = createLogger('debug', {
      pretty: false,
      destination: new Writable({
        write: (chunk, _enc, done) => (logs.push(JSON.parse(String(chunk))), done()),
      }),
    });
    const events = new EventEmitter<RunEvents>();
    const seen: string[] = [];
    events.on('disk-full', () => seen.push('disk-full'));
    events.on('disk-resumed', () => seen.push('disk-resumed'));
    const run = new RunState({
      db,
      log,
      now: () => 1000,
      probeIntervalMs: 60_000,
      events,
      diskSpace: () => space(free.bytes),
    });
    return { db, run, logs, seen };
  }

  it('one error when it pauses, one warning when it resumes, nothing per check in between', async () => {
    const free = { bytes: 200 * MIB };
    const { db, run, logs, seen } = await make(free);
    expect(run.checkDisk()).toBe('ok');
    free.bytes = 2 * MIB;
    for (let i = 0; i < 5; i++) expect(run.checkDisk()).toBe('paused');
    expect(run.diskPaused).toBe(diskReason(space(2 * MIB)));
    free.bytes = 65 * MIB;
    expect(run.checkDisk()).toBe('resumed');
    expect(run.checkDisk()).toBe('ok');
    expect(run.diskPaused).toBeUndefined();
    expect(seen).toEqual(['disk-full', 'disk-resumed']);
    expect(logs.map((l) => [l.level, l.msg])).toEqual([
      [50, diskReason(space(2 * MIB))],
      [40, 'the state DB has room again: work resumes'],
    ]);
    expect(logs[0]).toMatchObject({
      path: '/var/lib/docex/sync.db',
      freeBytes: 2 * MIB,
      minFreeBytes: 64 * MIB,
    });
    db.close();
  });

  it('a write that failed for lack of room pauses (once); any other error is not taken for it', async () => {
    const free = { bytes: 200 * MIB };
    const { db, run, logs, seen } = await make(free);
    expect(run.diskFull(new Error('boom'))).toBe(false);
    expect(run.diskFull(sqliteError('SQLITE_FULL'))).toBe(true);
    expect(run.diskFull(sqliteError('SQLITE_FULL'))).toBe(true);
    expect(run.checkDisk()).toBe('paused'); // nothing freed yet
    free.bytes += MIB;
    expect(run.checkDisk()).toBe('resumed');
    expect(seen).toEqual(['disk-full', 'disk-resumed']);
    expect(logs.filter((l) => l.level >= 50)).toHaveLength(1);
    db.close();
  });
});

describe('the state DB', () => {
  it('a batch whose commit at the end of a turn fails is rolled back and handed to its handler, not thrown', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-disk-'));
    try {
      const db = new StateDb(join(dir, 'sync.db'));
      const failures: unknown[] = [];
      db.onCommitFailed((error) => (failures.push(error), true));
      // A commit that fails as a full disk makes it fail: a trigger that aborts the COMMIT is not
      // possible, so the batch's COMMIT is made to fail by a deferred foreign key (same path in flush).
      db.db.exec(
        'CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (p INTEGER REFERENCES parent(id) DEFERRABLE INITIALLY DEFERRED)',
      );
      db.db.pragma('foreign_keys = ON');
      db.files.discover({ watch: '/w', path: '/w/a', rel: 'a', size: 1, mtimeMs: 1, ino: 1 }, 1000, 10);
      db.db.exec('INSERT INTO child VALUES (42)');
      await new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
      expect(failures).toHaveLength(1);
      expect((failures[0] as { code: string }).code).toBe('SQLITE_CONSTRAINT_FOREIGNKEY');
      expect(db.fileCounts.counts().discovered).toBe(0); // rolled back: the DB keeps the state before the batch
      db.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
