/**
 * A watcher that hears nothing (an SMB/NFS share: inotify sees only this machine's writes) is
 * noticed: after BLIND_AFTER_RESCANS rescans found files no event reported, one warning naming the
 * folder and "set polling: true for this folder", and the same in `status`, the page, /api/status
 * and /healthz (needs attention, not failing). A working watcher never trips it. The share is
 * played by fs.watch made deaf for the folders of this file's tests (node:fs mocked).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { WatchConfig } from '../../../daemon/src/config/config.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { renderStatus, cliStatus } from '../../../daemon/src/status/report.ts';
import type { Candidate, Listed } from '../../../daemon/src/intake/walk.ts';
import { FolderWatcher } from '../../../daemon/src/intake/watcher.ts';
import { BLIND_AFTER_RESCANS } from '../../../daemon/src/intake/hearing.ts';
import type { StatusSnapshot } from '../../../daemon/src/status/read-model.ts';
import { invoice, makeWorld, until, watchIn, type World } from '../helpers.ts';

/** Folders under these roots get a watcher that never reports anything (and never fails). */
const deaf = new Set<string>();
vi.mock('node:fs', async (original) => {
  const fs = await original<typeof import('node:fs')>();
  const watch = ((path: string, ...rest: unknown[]) => {
    if ([...deaf].some((root) => String(path).startsWith(root)))
      return Object.assign(new EventEmitter(), { close() {}, ref() {}, unref() {} });
    return (fs.watch as (...a: unknown[]) => unknown)(path, ...rest);
  }) as typeof fs.watch;
  return { ...fs, watch, default: { ...fs, watch } };
});

const HOUR = 3_600_000;
const cleanups: Array<() => Promise<void>> = [];
let world: World | undefined;
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await world?.cleanup();
  world = undefined;
  deaf.clear();
});

/** Records each path once, as the pipeline does: ingest returns how many were new. */
class RecordingSink {
  readonly known = new Set<string>();
  readonly fromEvents = new Set<string>();
  candidate(_watch: WatchConfig, file: Candidate) {
    this.fromEvents.add(file.rel);
    this.known.add(file.rel);
  }
  async ingest(_watch: WatchConfig, listed: Listed[], look: (listed: Listed[]) => Promise<Candidate[]>) {
    const fresh = (await look(listed.filter((l) => !this.known.has(l.rel)))).filter(
      (f) => !this.known.has(f.rel),
    );
    for (const f of fresh) this.known.add(f.rel);
    return fresh.length;
  }
}

async function startWatcher(options: { deaf: boolean; polling?: boolean }) {
  const base = await mkdtemp(join(tmpdir(), 'docex-blind-'));
  const root = join(base, 'share');
  await import('node:fs/promises').then((fs) => fs.mkdir(root));
  if (options.deaf) deaf.add(root);
  const watch = watchIn(base, root, {
    polling: options.polling ?? false,
    polling_interval_ms: HOUR,
  });
  const logs: Array<{ level: number; msg: string; folder?: string }> = [];
  const log = createLogger('debug', {
    pretty: false,
    destination: new Writable({
      write: (chunk, _e, done) => {
        logs.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  });
  const sink = new RecordingSink();
  const reports: unknown[] = [];
  const watcher = new FolderWatcher(watch, sink, log, undefined, (b) => reports.push(b));
  cleanups.push(async () => {
    await watcher.stop();
    await rm(base, { recursive: true, force: true });
  });
  await watcher.start();
  const warnings = () => logs.filter((l) => l.level === 40 && l.msg.includes('polling: true'));
  return { root, sink, watcher, reports, warnings };
}

describe('a blind watcher', () => {
  it(`is named after ${BLIND_AFTER_RESCANS} rescans that found files no event reported, with one warning`, async () => {
    const { root, watcher, reports, warnings } = await startWatcher({ deaf: true });
    for (let i = 1; i <= BLIND_AFTER_RESCANS + 2; i++) {
      await writeFile(join(root, `scan-${i}.pdf`), `scan ${i}`);
      await watcher.scan();
      // Rescans that find nothing are no evidence either way: the count goes on.
      await watcher.scan();
      if (i < BLIND_AFTER_RESCANS) expect(warnings()).toEqual([]);
    }
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({
      folder: root,
      msg: `the watcher of this folder reports nothing: ${BLIND_AFTER_RESCANS} rescans found ${BLIND_AFTER_RESCANS} new file(s) that no watcher event reported (a network share, SMB/NFS?), so files wait up to rescan_interval_ms; set polling: true for this folder`,
    });
    // Told once per rescan that added evidence, the counts growing.
    expect(reports).toEqual([
      { since: expect.any(Number), rescans: 3, files: 3 },
      { since: expect.any(Number), rescans: 4, files: 4 },
      { since: expect.any(Number), rescans: 5, files: 5 },
    ]);
  });

  it('a working watcher never trips it, not even when files land right before each rescan', async () => {
    const { root, sink, watcher, reports, warnings } = await startWatcher({ deaf: false });
    for (let i = 1; i <= BLIND_AFTER_RESCANS * 3; i++) {
      await writeFile(join(root, `scan-${i}.pdf`), `scan ${i}`);
      if (i % 2)
        await until(`scan-${i}.pdf reported by an event`, () => sink.fromEvents.has(`scan-${i}.pdf`));
      await watcher.scan(); // every second file: the rescan and the event race
    }
    await until('every file reported by an event', () => sink.fromEvents.size === BLIND_AFTER_RESCANS * 3);
    await watcher.scan();
    expect(warnings()).toEqual([]);
    // Only "not blind" (clearing what an earlier run may have recorded), once.
    expect(reports).toEqual([null]);
  });

  it('with polling: true there is no native watcher to judge', async () => {
    const { root, watcher, reports, warnings } = await startWatcher({ deaf: true, polling: true });
    for (let i = 1; i <= BLIND_AFTER_RESCANS + 1; i++) {
      await writeFile(join(root, `scan-${i}.pdf`), `scan ${i}`);
      await watcher.scan();
    }
    expect(warnings()).toEqual([]);
    expect(reports).toEqual([]);
  });
});

describe('a blind watcher in the running daemon', () => {
  it('shows in status, the page, /api/status and /healthz as needing attention, and goes when events come again', async () => {
    world = await makeWorld({ extraYaml: 'http: { port: 0 }' });
    const w = world;
    const inbox = join(w.dir, 'inbox');
    deaf.add(inbox);
    const daemon = await w.start();
    const port = (daemon.http!.address() as { port: number }).port;
    // The rescan (every second here) is the only way in: a file each time, processed.
    for (let i = 1; i <= BLIND_AFTER_RESCANS; i++) {
      await writeFile(join(inbox, `n-${i}.txt`), invoice(`N-${i}`));
      await until(`n-${i}.txt archived`, () => daemon.db.fileCounts.counts().archived === i);
    }
    await until('the blind watcher recorded', () => daemon.db.flags.blindWatchers()[inbox]);
    const advice = 'set polling: true for this folder';

    const api = (await (await fetch(`http://127.0.0.1:${port}/api/status`)).json()) as StatusSnapshot;
    expect(api.health.level).toBe('attention');
    expect(api.health.reasons).toEqual([
      `watch ${inbox}: its watcher reports no events: ${BLIND_AFTER_RESCANS} rescans found ${BLIND_AFTER_RESCANS} file(s) no event reported (a network share, SMB/NFS?), so new files wait for the next rescan; ${advice}`,
    ]);
    expect(api.watches[0]!.blind_watcher).toEqual({
      since: expect.any(String),
      rescans: BLIND_AFTER_RESCANS,
      files: BLIND_AFTER_RESCANS,
      advice,
    });
    const healthz = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(healthz.status).toBe(200);
    expect(await healthz.json()).toMatchObject({
      status: 'attention',
      level: 'attention',
      reasons: [expect.stringContaining(advice)],
    });
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(page).toContain('data-testid="blind-0"');
    expect(page).toContain(advice);
    const printed = renderStatus(cliStatus(w.config()));
    expect(printed).toContain(`Needs attention:\n  watch ${inbox}: its watcher reports no events`);
    expect(printed).toContain(`Watch ${inbox} (watcher blind since `);
    expect(w.logs.filter((l) => l.includes(advice) && l.includes('"level":40'))).toHaveLength(1);

    // The share's watcher works again (say it was remounted): the next event clears it.
    deaf.delete(inbox);
    await daemon.stop();
    const again = await w.start();
    await writeFile(join(inbox, 'later.txt'), invoice('L-1'));
    await until(
      'later.txt archived',
      () => again.db.fileCounts.counts().archived === BLIND_AFTER_RESCANS + 1,
    );
    await until('the blind watcher cleared', () => !again.db.flags.blindWatchers()[inbox]);
    // `status` runs as another process: it sees the clearing once the daemon's batch commits.
    await until('status no longer says it', () => !renderStatus(cliStatus(w.config())).includes(advice));
  });
});
