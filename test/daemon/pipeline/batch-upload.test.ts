/**
 * Batched uploads (upload.batch_files, issue #42): files due together share one upload_file, and
 * each keeps its own task, outcome and results: the same results as sent one by one; children
 * answered in another order placed on evidence; a lost answer and a refused batch handled as the
 * per-file path handles them; a kill -9 after the service took a batch, before its task ids were
 * stored, ends every file archived once.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DocexConnectionError, type DocexClient } from '@docex/shared';
import { createNodeClient } from '@docex/shared/node';
import {
  calibrate,
  invoice,
  makeWorld,
  runCli,
  SECRET,
  stateOf,
  stopCliChildren,
  until,
  type World,
  testLimit,
} from '../helpers.ts';
import type { RunningDaemon } from '../../../daemon/src/app/daemon.ts';

// Time limits from a measured start of the CLI these tests run as a process (busy machines).
await calibrate();

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const names = Array.from({ length: 6 }, (_, i) => `b${i}.txt`);
let world: World | undefined;
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
  world = undefined;
});

/**
 * A world whose config sends up to `batch` files per request, one request at a time: while an
 * upload is held back by `gated`, no other starts, so the files due meanwhile go together next.
 */
async function batchedWorld(batch: number, taskDelayMs = 100) {
  const w = await makeWorld({ taskDelayMs });
  const text = await readFile(w.configFile, 'utf8');
  await writeFile(
    w.configFile,
    text
      .replace('max_attempts: 20 }', `max_attempts: 20, batch_files: ${batch} }`)
      .replace('concurrency: 4,', 'concurrency: 1,'),
  );
  expect(w.config().upload.batch_files).toBe(batch);
  expect(w.config().api.concurrency).toBe(1);
  return w;
}

/** Drops every file at once (written beside the inbox, renamed in: they are due together). */
async function drop(w: World, contents: Record<string, string>) {
  for (const [name, text] of Object.entries(contents)) await writeFile(join(w.dir, name), text);
  const { rename } = await import('node:fs/promises');
  for (const name of Object.keys(contents)) await rename(join(w.dir, name), join(w.dir, 'inbox', name));
}

/**
 * The client the daemon uses, its upload_file wrapped and gated: the first upload waits until every
 * dropped file is stable and due, so that (one request at a time) the files it does not carry are
 * all due when it ends and go in the next request. Without the gate, files a busy machine sees one
 * by one come due one by one and each goes alone: no batch, and nothing these tests ask is shown.
 */
function gated(
  w: World,
  running: () => RunningDaemon | undefined,
  wrap: (upload: DocexClient['uploadFile']) => DocexClient['uploadFile'] = (upload) => upload,
): DocexClient {
  const client = createNodeClient({
    baseUrl: w.emulator.url,
    apiKey: SECRET,
    retry: { initialDelayMs: 20, maxRetries: 2 },
  });
  const upload = wrap(client.uploadFile.bind(client));
  const stableMs = w.config().watch[0]!.stable_ms;
  let opened = false;
  const allDue = () => {
    const rows = names.map((n) => running()?.db.files.current(join(w.dir, 'inbox', n)));
    if (rows.some((r) => !r || r.state === 'discovered')) return false;
    // stable_since is on the daemon's clock, which starts from the wall time: a margin for the drift.
    return Date.now() >= Math.max(...rows.map((r) => r!.stable_since)) + stableMs + 50;
  };
  client.uploadFile = async (input, options) => {
    if (!opened) {
      await until('every file stable and due', allDue);
      opened = true;
    }
    return upload(input, options);
  };
  return client;
}

/** Starts the daemon of `w` on a gated client (see `gated`). */
async function startGated(
  w: World,
  wrap?: (upload: DocexClient['uploadFile']) => DocexClient['uploadFile'],
): Promise<RunningDaemon> {
  const started: { daemon?: RunningDaemon } = {};
  started.daemon = await w.start({ client: gated(w, () => started.daemon, wrap) });
  return started.daemon;
}

/** Each file's results, without what differs between two runs (ids, times, paths). */
async function resultsByFile(w: World) {
  const dir = join(w.dir, 'results');
  const files = (await readdir(dir)).filter((f) => !f.startsWith('daily-'));
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const own = files.filter((f) => f.startsWith(`${name.replace('.txt', '')}.doc-`)).sort();
    const read = async (suffix: string) =>
      readFile(
        join(
          dir,
          own.find((f) => f.endsWith(suffix))!,
        ),
        'utf8',
      );
    const json = JSON.parse(await read('.json'));
    for (const o of [json.document, json.task]) {
      delete o.document_id;
      delete o.task_id;
      delete o.created_at;
      delete o.updated_at;
    }
    delete json.written_at;
    delete json.source_file;
    delete json.archived_to;
    // Column 1 is the document id, column 3 the source path.
    const csv = (text: string, drop: number[]) =>
      text
        .trim()
        .split('\n')
        .map((l) => l.split(',').filter((_, i) => !drop.includes(i)));
    out[name] = {
      json,
      fields: csv(await read('.fields.csv'), [0, 2]),
      lines: csv(await read('.lines.csv'), [0]),
    };
  }
  return out;
}

const contents = Object.fromEntries(names.map((n, i) => [n, invoice(`B-${i}`, `${i + 1},50`)]));

describe('batched uploads', () => {
  it('sends files due together in one request; each file gets the results it gets sent alone', async () => {
    world = await batchedWorld(1);
    let daemon = await world.start();
    await drop(world, contents);
    await until('all archived alone', () => daemon.db.fileCounts.counts().archived === names.length);
    const alone = await resultsByFile(world);
    expect(world.emulator.stats().requestsByOperation.upload_file).toBe(names.length);
    await world.cleanup();

    world = await batchedWorld(20);
    daemon = await startGated(world);
    await drop(world, contents);
    await until('all archived batched', () => daemon.db.fileCounts.counts().archived === names.length);
    const batched = await resultsByFile(world);
    // One request per turn of due files, not one per file: the gated first, then all the others.
    expect(world.emulator.stats().requestsByOperation.upload_file).toBeLessThanOrEqual(2);
    expect(batched).toEqual(alone);
    for (const [i, name] of names.entries()) {
      const json = (
        batched[name] as { json: { document: { General_fields: Record<string, { value: unknown }> } } }
      ).json;
      expect(json.document.General_fields['Invoice number']!.value, name).toBe(`B-${i}`);
    }
    // Each row records its own task.
    const tasks = names.map((n) => daemon.db.files.current(join(world!.dir, 'inbox', n))?.task_id);
    expect(new Set(tasks).size).toBe(names.length);
  }, testLimit(60_000));

  it('children answered in another order than the files: each file still gets its own document, a DUPLICATE too', async () => {
    world = await batchedWorld(20);
    // The service already holds b5's bytes: its child answers DUPLICATE, naming the other file.
    const setup = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    await setup.uploadAndWait({
      files: [{ data: new TextEncoder().encode(contents['b5.txt']!), fileName: 'earlier.txt' }],
      template_id: world.templateId,
    });
    let reversed = 0;
    const daemon = await startGated(world, (upload) => async (input, options) => {
      const answer = await upload(input, options);
      if (answer.task_ids.length < 2) return answer;
      reversed++;
      return { ...answer, task_ids: [...answer.task_ids].reverse() };
    });
    await drop(world, contents);
    await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length);
    expect(reversed).toBeGreaterThan(0);
    const results = await resultsByFile(world);
    for (const [i, name] of names.entries()) {
      const json = (
        results[name] as {
          json: { outcome: string; document: { General_fields: Record<string, { value: unknown }> } };
        }
      ).json;
      expect(json.document.General_fields['Invoice number']!.value, name).toBe(`B-${i}`);
      expect(json.outcome, name).toBe(name === 'b5.txt' ? 'duplicate' : 'processed');
    }
  }, testLimit(60_000));

  it('a lost answer (reset after the service took the files): each file goes again as alone, the DUPLICATE answer gives its document', async () => {
    world = await batchedWorld(20);
    let lost = 0;
    const daemon = await startGated(world, (upload) => async (input, options) => {
      const answer = await upload(input, options);
      if (input.files.length > 1 && lost++ === 0)
        throw new DocexConnectionError('upload_file', 'socket hang up', { code: 'ECONNRESET' });
      return answer;
    });
    await drop(world, contents);
    await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length);
    expect(lost).toBeGreaterThan(0);
    const uploads = world.emulator.stats().uploadsByHash;
    for (const name of names) expect(uploads[sha(contents[name]!)], name).toBeLessThanOrEqual(2);
    const documents = await createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET }).fetchDocuments(
      {},
    );
    expect(documents).toHaveLength(names.length); // one document per file
    const results = await resultsByFile(world);
    for (const [i, name] of names.entries())
      expect(
        (results[name] as { json: { document: { General_fields: Record<string, { value: unknown }> } } }).json
          .document.General_fields['Invoice number']!.value,
      ).toBe(`B-${i}`);
  }, testLimit(60_000));

  it('a service that ignores arrays (takes the first file, answers one task): that file keeps it, the others go alone once', async () => {
    world = await batchedWorld(20);
    let ignored = 0;
    const daemon = await startGated(world, (upload) => async (input, options) => {
      if (input.files.length < 2) return upload(input, options);
      ignored++;
      return upload({ ...input, files: input.files.slice(0, 1) }, options);
    });
    await drop(world, contents);
    await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length);
    expect(ignored).toBeGreaterThan(0);
    const uploads = world.emulator.stats().uploadsByHash;
    for (const name of names) expect(uploads[sha(contents[name]!)], name).toBe(1);
    const results = await resultsByFile(world);
    for (const [i, name] of names.entries())
      expect(
        (
          results[name] as {
            json: { outcome: string; document: { General_fields: Record<string, { value: unknown }> } };
          }
        ).json.document.General_fields['Invoice number']!.value,
        name,
      ).toBe(`B-${i}`);
  }, testLimit(60_000));

  it('a batch refused as a whole (413): each file goes alone and all are processed', async () => {
    world = await batchedWorld(20);
    // Each file fits, two together do not.
    world.emulator.faults.set({ maxUploadBytes: Buffer.byteLength(contents['b0.txt']!) + 400 });
    const daemon = await startGated(world);
    await drop(world, contents);
    await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length);
    expect(world.emulator.stats().answersByStatus['413']).toBeGreaterThan(0);
    const uploads = world.emulator.stats().uploadsByHash;
    for (const name of names) expect(uploads[sha(contents[name]!)], name).toBe(1);
  }, testLimit(60_000));

  it('kill -9 after the service took a batch, before its task ids were stored: every file ends archived once', async () => {
    world = await batchedWorld(20);
    await drop(world, contents);
    const first = runCli(['run', '--config', world.configFile], { DOCEX_SYNC_CRASH_AT: 'batch-answered' });
    expect(await first.exited).toBe(-1);
    expect(first.child.signalCode).toBe('SIGKILL');
    const w = world;
    // The DB said which files were in the request: all of them `uploading`.
    expect(names.map((n) => stateOf(w, n)).filter((s) => s === 'uploading').length).toBeGreaterThan(1);
    const second = runCli(['run', '--config', world.configFile]);
    await until('all archived', () => names.every((n) => stateOf(w, n) === 'archived'), 40_000);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
    const uploads = world.emulator.stats().uploadsByHash;
    for (const name of names) expect(uploads[sha(contents[name]!)], name).toBeLessThanOrEqual(2);
    const documents = await createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET }).fetchDocuments(
      {},
    );
    expect(documents).toHaveLength(names.length);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual([...names].sort());
    expect(await readdir(join(world.dir, 'failed'))).toEqual([]);
  }, testLimit(120_000));
});
