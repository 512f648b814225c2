/**
 * A paused watch probes with one file at a time: the mark that says its probe is under way is held
 * until that row's upload ends or does not start, and then released, so the watch probes again.
 */
import { EventEmitter } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { RunState, type RunEvents } from '../../../daemon/src/pipeline/run-state.ts';
import { StateDb } from '../../../daemon/src/store/state.ts';

describe("a paused watch's probe mark", () => {
  it('is held while its probe runs and released by probeOver of that row only: the watch probes again when next due', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'docex-probe-'));
    try {
      const db = new StateDb(join(dir, 'sync.db'));
      const clock = { now: 1000 };
      const run = new RunState({
        db,
        log: createLogger('error', {
          pretty: false,
          destination: new Writable({ write: (_c, _e, done) => done() }),
        }),
        now: () => clock.now,
        probeIntervalMs: 60_000,
        events: new EventEmitter<RunEvents>(),
        diskSpace: () => undefined,
      });
      const row = db.files.discover(
        { watch: '/w', path: '/w/a', rel: 'a', size: 1, mtimeMs: 1, ino: 1 },
        0,
        0,
      );
      db.files.update(row.id, { state: 'stable', next_at: 0 }, 0);
      db.watches.pauseWatch('/w', 'template 7 not found', 0, 500);
      expect(run.dueProbes(clock.now).map((r) => r.id)).toEqual([row.id]);
      clock.now += 60_000;
      expect(run.dueProbes(clock.now)).toEqual([]); // its probe is marked as under way
      run.probeOver({ id: row.id + 1, watch: '/w' }); // another row's upload of the watch ended
      clock.now += 60_000;
      expect(run.dueProbes(clock.now)).toEqual([]);
      run.probeOver(row); // the probe did not start, or ended
      expect(run.dueProbes(clock.now).map((r) => r.id)).toEqual([row.id]);
      db.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
