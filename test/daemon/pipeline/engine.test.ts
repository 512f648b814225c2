/** The engine's run-level faults, file identity, local failures, the DB lock and migration, idleness. */
import { createHash } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DocexAuthenticationError, type DocexClient, type TaskResult } from '@docex/shared';
import { NEVER } from '../../../daemon/src/domain/lifecycle.ts';
import { uploadFirstCap } from '../../../daemon/src/pipeline/upload.ts';
import { KV, SCHEMA_VERSION, StateDb, StateLockedError } from '../../../daemon/src/store/state.ts';
import { createNodeClient } from '@docex/shared/node';
import { invoice, makeWorld, SECRET, until, type World } from '../helpers.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
let world: World;
afterEach(async () => world?.cleanup());

const editConfig = async (w: World, edit: (yaml: string) => string) =>
  writeFile(w.configFile, edit(await readFile(w.configFile, 'utf8')));

describe('run-level faults are not file failures', () => {
  it('a refused API key stops the run; every file stays queued, none is failed', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('K-1'));
    await writeFile(join(world.dir, 'inbox', 'b.txt'), invoice('K-2'));
    const daemon = await world.start({ apiKey: 'not-the-key' });
    const error = await daemon.failure;
    expect(error).toBeInstanceOf(DocexAuthenticationError);
    await daemon.stop();
    const db = new StateDb(world.config().state_db);
    const counts = db.fileCounts.counts();
    db.close();
    expect(counts.failed).toBe(0);
    expect(counts.discovered + counts.stable).toBe(2);
    expect((await readdir(join(world.dir, 'inbox'))).sort()).toEqual(['a.txt', 'b.txt']);
    expect(await readdir(join(world.dir, 'failed'))).toEqual([]);
  });

  it('a template the service does not know pauses the watch, loudly; its files stay queued', async () => {
    world = await makeWorld();
    await editConfig(world, (y) => y.replace(/template_id: \d+/, 'template_id: 987654'));
    const daemon = await world.start();
    const paused: string[] = [];
    daemon.pipeline.on('watch-paused', (watch) => paused.push(watch));
    for (const n of ['1', '2', '3']) await writeFile(join(world.dir, 'inbox', `${n}.txt`), invoice(n));
    await until('watch paused', () => daemon.db.watches.pausedWatches().length === 1);
    await until('all three stable', () => daemon.db.fileCounts.counts().stable === 3);
    expect(daemon.db.watches.pausedWatches()[0]).toMatchObject({
      path: join(world.dir, 'inbox'),
      paused_reason: expect.stringContaining('404'),
    });
    expect(paused).toEqual([join(world.dir, 'inbox')]);
    // Only the uploads already under way when the first 404 came (at most api.concurrency), then
    // nothing until the probe a minute later: the scheduler's one timer is set for the probe.
    const sent = world.emulator.stats().requestsByOperation.upload_file!;
    expect(sent).toBeLessThanOrEqual(3);
    const probeAt = daemon.db.watches.pausedWatches()[0]!.probe_at;
    expect(probeAt).toBeGreaterThan(Date.now() + 30_000);
    await until('the scheduler waiting for the probe', () => daemon.pipeline.nextWakeAt === probeAt);
    expect(world.emulator.stats().requestsByOperation.upload_file).toBe(sent);
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
    expect(world.logs.join('')).toContain('watch paused');
    expect(daemon.db.problems().paused_watches).toEqual([
      { watch: join(world.dir, 'inbox'), reason: expect.stringContaining('404'), since: expect.any(String) },
    ]);
  });

  it('a paused watch resumes when its probe succeeds: the template is created on the service, the queued files go up', async () => {
    world = await makeWorld();
    // The emulator numbers templates in order: the next one it creates gets this id.
    const missing = world.templateId + 1;
    await editConfig(world, (y) =>
      y
        .replace(/template_id: \d+/, `template_id: ${missing}`)
        .replace('max_attempts: 20 }', 'max_attempts: 20, probe_interval_ms: 1000 }'),
    );
    const daemon = await world.start();
    const events: string[] = [];
    daemon.pipeline.on('watch-paused', () => events.push('paused'));
    daemon.pipeline.on('watch-resumed', () => events.push('resumed'));
    for (const n of ['1', '2', '3']) await writeFile(join(world.dir, 'inbox', `${n}.txt`), invoice(`R-${n}`));
    await until('watch paused', () => daemon.db.watches.pausedWatches().length === 1);
    await until('all three stable', () => daemon.db.fileCounts.counts().stable === 3);
    const probesBefore = world.emulator.stats().requestsByOperation.upload_file!;
    // A probe a second: the watch stays paused while the template is missing. The emulator counts a
    // probe when it arrives, while its file is `uploading`: wait until the daemon has taken the answer
    // (the file back in `stable`, nothing in flight), not a time.
    await until(
      'a probe answered',
      () =>
        world.emulator.stats().requestsByOperation.upload_file! > probesBefore &&
        daemon.db.fileCounts.counts().uploading === 0,
    );
    expect(daemon.db.watches.pausedWatches()).toHaveLength(1);
    expect(daemon.db.fileCounts.counts().stable).toBe(3);

    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const folder = await client.createFolder({ name: 'Late' });
    const template = await client.createTemplate({ folder_id: folder.id, name: 'Invoice, at last' });
    expect(template.id).toBe(missing);

    await until('all archived', () => daemon.db.fileCounts.counts().archived === 3, 15_000);
    expect(daemon.db.watches.pausedWatches()).toEqual([]);
    expect(daemon.db.problems().paused_watches).toEqual([]);
    expect(events).toEqual(['paused', 'resumed']);
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual(['1.txt', '2.txt', '3.txt']);
    const docs = daemon.db.files.inState('archived').map((r) => r.document_id);
    expect(new Set(docs).size).toBe(3);
    expect(world.logs.join('')).toContain('watch resumed');
  });

  it('a probe that cannot start (the upload limit is reached) gives up its mark: the watch probes again and resumes', async () => {
    world = await makeWorld({
      watchYaml: [
        '  - path: ./inbox2',
        '    template_id: TEMPLATE',
        '    output: ./results2',
        '    processed_dir: ./processed2',
        '    failed_dir: ./failed2',
        '    stable_ms: 200',
      ].join('\n'),
    });
    await mkdir(join(world.dir, 'inbox2'));
    const missing = world.templateId + 1;
    await editConfig(world, (y) =>
      y
        .replace(/template_id: \d+/, `template_id: ${missing}`) // the first watch's; the second's is TEMPLATE
        .replace('TEMPLATE', String(world.templateId))
        .replace('concurrency: 4', 'concurrency: 1')
        .replace('max_attempts: 20 }', 'max_attempts: 20, probe_interval_ms: 1000 }'),
    );
    // inbox2's upload waits at a gate the test opens: the one upload slot stays taken meanwhile.
    const service = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    let entered!: () => void;
    const gateEntered = new Promise<void>((resolve) => (entered = resolve));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const client: DocexClient = Object.assign(Object.create(service) as DocexClient, {
      uploadFile: async (args: Parameters<DocexClient['uploadFile']>[0]) => {
        if (args.files.some((f) => 'path' in f && String(f.path).includes('inbox2'))) {
          entered();
          await gate;
        }
        return service.uploadFile(args);
      },
    });
    const daemon = await world.start({ client });
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('P-1'));
    await until('inbox paused', () => daemon.db.watches.pausedWatches().length === 1);
    await until('a.txt stable again', () => daemon.db.fileCounts.counts().stable === 1);
    await writeFile(join(world.dir, 'inbox2', 'hold.txt'), invoice('P-2'));
    await gateEntered;
    // The probe comes due while the slot is taken: it is taken from the DB (probe_at moves on) but
    // cannot start.
    const probeAt = daemon.db.watches.pausedWatches()[0]!.probe_at;
    await until(
      'the probe due and not started',
      () => daemon.db.watches.pausedWatches()[0]!.probe_at > probeAt,
    );
    const folder = await service.createFolder({ name: 'Late' });
    expect((await service.createTemplate({ folder_id: folder.id, name: 'Invoice, at last' })).id).toBe(
      missing,
    );
    open();
    await until('a.txt archived: its watch probed again and resumed', () =>
      daemon.db.files.inState('archived').some((r) => r.path.endsWith('a.txt')),
    );
    expect(daemon.db.watches.pausedWatches()).toEqual([]);
  });

  it('task_timeout_ms counts from the upload: a task that never finishes fails on time with its error.json', async () => {
    world = await makeWorld({ taskDelayMs: 600_000 });
    await editConfig(world, (y) =>
      y.replace(
        'poll: { interval_ms: 50, max_interval_ms: 200 }',
        'poll: { interval_ms: 50, max_interval_ms: 200, task_timeout_ms: 1500 }',
      ),
    );
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'slow.txt'), invoice('T-1'));
    await until(
      'failed and reported',
      () => daemon.db.files.inState('failed').some((r) => r.finalized),
      20_000,
    );
    const report = JSON.parse(await readFile(join(world.dir, 'failed', 'slow.txt.error.json'), 'utf8'));
    expect(report.reason).toMatch(/^task \S+ not finished after 1500 ms \(last status: IN PROGRESS\)$/);
    expect(world.emulator.stats().requestsByOperation.fetch_tasks_results).toBeGreaterThan(3);
  });
});

describe('file identity', () => {
  it('the same bytes dropped under two names at once are uploaded once; the second reuses the document', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    await Promise.all(
      ['x.txt', 'copy of x.txt', 'x again.txt'].map((n) =>
        writeFile(join(world.dir, 'inbox', n), invoice('X-1')),
      ),
    );
    await until('all archived', () => daemon.db.fileCounts.counts().archived === 3);
    expect(world.emulator.stats().uploadsByHash[sha(invoice('X-1'))]).toBe(1);
    const docs = new Set(daemon.db.files.inState('archived').map((r) => r.document_id));
    expect(docs.size).toBe(1);
  });

  it('a file put back after it was archived (same name, size and mtime) is new work', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    const inbox = join(world.dir, 'inbox', 'back.txt');
    await writeFile(inbox, invoice('B-1'));
    const { mtime } = await stat(inbox);
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
    await cp(join(world.dir, 'processed', 'back.txt'), inbox, { preserveTimestamps: true });
    await utimes(inbox, mtime, mtime);
    await until('archived again', () => daemon.db.fileCounts.counts().archived === 2);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual(['back (2).txt', 'back.txt']);
    expect(world.emulator.stats().uploadsByHash[sha(invoice('B-1'))]).toBe(1); // the document is reused
  });

  it('a name that is not valid UTF-8, there at start-up, is renamed readably, logged and processed by the start-up scan', async () => {
    world = await makeWorld();
    // No rescan during the test: only the start-up scan can find it.
    await editConfig(world, (y) =>
      y.replace('rescan_interval_ms: 1000', 'rescan_interval_ms: 3600000\n    recursive: true'),
    );
    const inboxDir = join(world.dir, 'inbox');
    await mkdir(join(inboxDir, 'sub'));
    await writeFile(
      Buffer.concat([Buffer.from(`${inboxDir}/caf`), Buffer.from([0xe9]), Buffer.from('.txt')]),
      invoice('L-1'),
    );
    await writeFile(
      Buffer.concat([Buffer.from(`${inboxDir}/sub/na`), Buffer.from([0xef]), Buffer.from('ve.txt')]),
      invoice('L-2'),
    );
    await writeFile(join(inboxDir, 'plain.txt'), invoice('L-3'));
    const daemon = await world.start();
    const scan = world.logs
      .map((l) => JSON.parse(l) as { msg: string })
      .find((l) => l.msg === 'start-up scan');
    expect(scan).toMatchObject({ files: 3, new: 3 });
    await until('archived', () => daemon.db.fileCounts.counts().archived === 3);
    expect((await readdir(join(world.dir, 'processed'), { recursive: true })).sort()).toEqual([
      'café.txt',
      'plain.txt',
      'sub',
      join('sub', 'naïve.txt'),
    ]);
    expect(world.logs.join('')).toContain('renamed a file whose name is not valid UTF-8');
  });

  it('a file removed before its upload fails with a reason, and gets an error.json', async () => {
    world = await makeWorld();
    await editConfig(world, (y) => y.replace('stable_ms: 200', 'stable_ms: 1500'));
    const daemon = await world.start();
    const path = join(world.dir, 'inbox', 'gone.txt');
    await writeFile(path, invoice('G-1'));
    await until('discovered', () => daemon.db.fileCounts.counts().discovered === 1);
    await unlink(path);
    await until('reported', () => daemon.db.files.inState('failed').some((r) => r.finalized), 10_000);
    const report = JSON.parse(await readFile(join(world.dir, 'failed', 'gone.txt.error.json'), 'utf8'));
    expect(report).toMatchObject({
      reason: 'the file disappeared before it was uploaded',
      note: expect.any(String),
    });
  });
});

describe('local failures are visible', () => {
  it('results that cannot be written hold the file back, show in lastErrors, and go through once fixed', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    const results = join(world.dir, 'results');
    await rm(results, { recursive: true });
    await writeFile(results, 'not a folder');
    await writeFile(join(world.dir, 'inbox', 'r.txt'), invoice('R-1'));
    await until('blocked', () => daemon.db.fileCounts.blocked().length === 1);
    expect(daemon.db.fileCounts.blocked()[0]!.blocked).toMatch(
      /^could not write the results: .*(EEXIST|ENOTDIR)/,
    );
    expect(daemon.db.fileCounts.lastErrors()[0]!.blocked).toContain('could not write the results');
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
    await rm(results);
    // The daemon's next try makes the folder itself once the file is gone; either way it is there.
    await mkdir(results, { recursive: true });
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1, 20_000);
    expect(daemon.db.fileCounts.blocked()).toEqual([]);
  });
});

describe('scheduling', () => {
  it('uploads go first (priority 1) while fewer than 30 s x requests_per_second tasks wait for results', async () => {
    world = await makeWorld({ apiYaml: 'requests_per_second: 1' }); // 30 tasks
    // Each file alone (batch_files: 1), so each upload request is weighed against one more task.
    await editConfig(world, (y) => y.replace('max_attempts: 20 }', 'max_attempts: 20, batch_files: 1 }'));
    let n = 0;
    const seen: Array<{ priority: number | undefined; awaiting: number }> = [];
    const fake = {
      async uploadFile(_input: unknown, options?: { priority?: number }) {
        seen.push({ priority: options?.priority, awaiting: daemon.db.dueWork.awaitingResults(1000) });
        const id = `t-${++n}`;
        return { task_id: id, task_ids: [id], raw: {} };
      },
      async fetchTasksResults({ task_id }: { task_id: string }): Promise<TaskResult> {
        return { status: 'IN PROGRESS', status_message: '', task_id } as TaskResult;
      },
    } as unknown as DocexClient;
    const daemon = await world.start({ client: fake });
    for (let i = 0; i < 40; i++) await writeFile(join(world.dir, 'inbox', `f${i}.txt`), invoice(`F-${i}`));
    await until('40 uploaded', () => daemon.db.fileCounts.counts().uploaded === 40);
    expect(seen).toHaveLength(40);
    for (const s of seen) expect(s).toEqual({ priority: s.awaiting < 30 ? 1 : 0, awaiting: s.awaiting });
    expect(new Set(seen.map((s) => s.priority))).toEqual(new Set([0, 1]));
  });

  it('the bound is 30 s of requests at the configured rate, never more than 1,000 tasks', () => {
    expect([1, 10, 33, 34, 1000, 1_000_000].map(uploadFirstCap)).toEqual([30, 300, 990, 1000, 1000, 1000]);
  });

  it('a hung poll holds back only its own file; with nothing to do there is no timer at all', async () => {
    world = await makeWorld();
    const tasks = new Map<string, string>();
    let n = 0;
    const fake = {
      async uploadFile(input: { files: Array<{ path: string }> }) {
        const id = `t-${++n}`;
        tasks.set(id, input.files[0]!.path);
        return { task_id: id, task_ids: [id], raw: {} };
      },
      fetchTasksResults({ task_id }: { task_id: string }): Promise<TaskResult> {
        if (tasks.get(task_id)!.endsWith('hung.txt')) return new Promise(() => undefined);
        return Promise.resolve({
          status: 'DONE',
          status_message: '',
          document_id: Number(task_id.slice(2)),
        } as TaskResult);
      },
      async fetchDocumentData({ document_id }: { document_id: number }) {
        return { document_id, document_name: 'x', General_fields: {}, Line_fields: {} };
      },
    } as unknown as DocexClient;
    // Each file alone (batch_files: 1): this stand-in answers one task per request and names no
    // document in it, so a batch's files could not be told apart (batch-upload.test.ts does that).
    await editConfig(world, (y) => y.replace('max_attempts: 20 }', 'max_attempts: 20, batch_files: 1 }'));
    const daemon = await world.start({ client: fake });
    await writeFile(join(world.dir, 'inbox', 'hung.txt'), invoice('H-1'));
    await until('hung uploaded', () => daemon.db.fileCounts.counts().uploaded === 1);
    for (const name of ['a.txt', 'b.txt', 'c.txt'])
      await writeFile(join(world.dir, 'inbox', name), invoice(name));
    await until('the others archived', () => daemon.db.fileCounts.counts().archived === 3);
    expect(daemon.db.fileCounts.counts().uploaded).toBe(1);

    // Once the hung request is gone (the row is done by hand here), the daemon has nothing to wake for.
    const hung = daemon.db.files.inState('uploaded')[0]!;
    daemon.db.files.update(hung.id, { state: 'archived', next_at: NEVER }, Date.now());
    daemon.pipeline.wake();
    await until('no timer', () => daemon.pipeline.nextWakeAt === undefined);
  });
});

describe('the state DB', () => {
  it('a second daemon on the same state DB refuses to start, naming the DB and the holder', async () => {
    world = await makeWorld();
    await world.start();
    const db = new StateDb(world.config().state_db);
    let error: unknown;
    try {
      db.lockExclusive(Date.now());
    } catch (e) {
      error = e;
    } finally {
      db.close();
    }
    expect(error).toBeInstanceOf(StateLockedError);
    expect((error as Error).message).toContain(world.config().state_db);
    expect((error as Error).message).toContain(`pid ${process.pid}`);
  });

  it('a DB written by docex-sync 0.1 (no schema version) is migrated; rows at rest are never due', async () => {
    world = await makeWorld();
    const path = join(world.dir, 'old.db');
    const old = new Database(path);
    old.exec(`CREATE TABLE files (id INTEGER PRIMARY KEY, watch TEXT NOT NULL, path TEXT NOT NULL, rel TEXT NOT NULL,
      size INTEGER NOT NULL DEFAULT 0, mtime_ms INTEGER NOT NULL DEFAULT 0, sha256 TEXT, state TEXT NOT NULL, outcome TEXT,
      task_id TEXT, document_id INTEGER, attempts INTEGER NOT NULL DEFAULT 0, reason TEXT, finalized INTEGER NOT NULL DEFAULT 0,
      next_at INTEGER NOT NULL DEFAULT 0, poll_interval_ms INTEGER NOT NULL DEFAULT 0, stable_since INTEGER NOT NULL DEFAULT 0,
      discovered_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
      CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      INSERT INTO files (watch, path, rel, state, task_id, finalized, discovered_at, updated_at) VALUES
        ('/in', '/p/a', 'a', 'archived', 't1', 0, 1, 2), ('/in', '/f/b', 'b', 'failed', NULL, 1, 1, 3),
        ('/in', '/in/c', 'c', 'uploaded', 't3', 0, 1, 4);
      INSERT INTO kv VALUES ('pull.cursor', '123');`);
    old.close();
    const db = new StateDb(path);
    expect(db.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.getValue(KV.pullCursor)).toBe('123');
    const rows = db.db
      .prepare('SELECT state, next_at, uploaded_at, blocked, ino FROM files ORDER BY id')
      .all();
    expect(rows).toEqual([
      { state: 'archived', next_at: NEVER, uploaded_at: null, blocked: null, ino: 0 },
      { state: 'failed', next_at: NEVER, uploaded_at: null, blocked: null, ino: 0 },
      { state: 'uploaded', next_at: 0, uploaded_at: 4, blocked: null, ino: 0 },
    ]);
    db.close();
  });

  it('temp files a crash left in the output folders are removed at start', async () => {
    world = await makeWorld();
    await mkdir(join(world.dir, 'results'), { recursive: true });
    await writeFile(join(world.dir, 'results', '.a.doc-1.json.0badc0de.tmp'), '{');
    await writeFile(join(world.dir, 'results', 'keep.json'), '{}');
    await world.start();
    expect(await readdir(join(world.dir, 'results'))).toEqual(['keep.json']);
  });
});
