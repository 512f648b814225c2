/** The daemon as a real process (crash, restart, graceful stop), the CLI, pulls, reruns and config errors. */
import { createHash } from 'node:crypto';
import { appendFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createNodeClient } from '@docex/shared/node';
import { z } from 'zod/v4';
import { ConfigError, ConfigSchema, loadConfig } from '../../../daemon/src/config/config.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { pullOnce } from '../../../daemon/src/jobs/pull.ts';
import { parseCsv, type ResultJson } from '../../../daemon/src/outputs/results.ts';
import { runRerun } from '../../../daemon/src/jobs/reruns.ts';
import { KV, StateDb } from '../../../daemon/src/store/state.ts';
import {
  makeWorld,
  SECRET,
  until,
  invoice,
  type World,
  calibrate,
  runCli,
  stateOf,
  stopCliChildren,
  testLimit,
} from '../helpers.ts';
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
let world: World;
// Time limits follow how long the CLI takes to start on this machine now (helpers.ts); measured
// before the tests are collected, since a test takes its time limit then.
await calibrate();
afterEach(async () => {
  stopCliChildren();
  await world?.cleanup();
});

describe('docex-sync as a process', () => {
  it('killed with SIGKILL while a task is in flight, it resumes polling after a restart and never uploads again', async () => {
    world = await makeWorld({ taskDelayMs: 1500 });
    await writeFile(join(world.dir, 'inbox', 'crash.txt'), invoice('C-1'));
    const first = runCli(['run', '--config', world.configFile]);
    await until('uploaded', () => stateOf(world, 'crash.txt') === 'uploaded', 20_000);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = runCli(['run', '--config', world.configFile]);
    await until('archived after restart', () => stateOf(world, 'crash.txt') === 'archived', 20_000);
    expect(world.emulator.stats().uploadsByHash[sha(invoice('C-1'))]).toBe(1);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('on a terminal, run counts the files of the start-up scan and ends the line when it is done', async () => {
    world = await makeWorld();
    for (const n of ['1', '2', '3']) await writeFile(join(world.dir, 'inbox', `${n}.txt`), invoice(n));
    const run = runCli(['run', '--config', world.configFile], {}, { terminal: true });
    try {
      await until('running', () => run.output().includes('docex-sync running'), 30_000);
      expect(run.output()).toMatch(/start-up scan: files found 3\r?\n/);
    } finally {
      process.kill(-run.child.pid!, 'SIGTERM');
    }
    await run.exited;
  });

  it('killed while a file is still being written, it picks the file up whole after a restart', async () => {
    world = await makeWorld();
    const path = join(world.dir, 'inbox', 'partial.txt');
    await writeFile(path, 'Invoice number: P-1\n');
    const first = runCli(['run', '--config', world.configFile]);
    await until('discovered', () => stateOf(world, 'partial.txt') === 'discovered', 20_000);
    first.child.kill('SIGKILL');
    await first.exited;
    await appendFile(path, 'Total: 3,00\n');
    const second = runCli(['run', '--config', world.configFile]);
    await until('archived', () => stateOf(world, 'partial.txt') === 'archived', 20_000);
    expect(Object.keys(world.emulator.stats().uploadsByHash)).toEqual([
      sha('Invoice number: P-1\nTotal: 3,00\n'),
    ]);
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  });

  it('stopped with SIGTERM during an upload, it lets the upload store its task id, exits 0, and resumes without re-sending', async () => {
    world = await makeWorld({ taskDelayMs: 200 });
    world.emulator.faults.set({ latencyMs: [1500, 1500], operations: ['upload_file'] });
    await writeFile(join(world.dir, 'inbox', 'term.txt'), invoice('T-1'));
    const first = runCli(['run', '--config', world.configFile]);
    await until('uploading', () => stateOf(world, 'term.txt') === 'uploading', 20_000);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(stateOf(world, 'term.txt')).toBe('uploaded');
    expect(first.output()).toContain('"msg":"stopped"');

    world.emulator.faults.clear();
    const second = runCli(['run', '--config', world.configFile]);
    await until('archived after restart', () => stateOf(world, 'term.txt') === 'archived', 20_000);
    expect(world.emulator.stats().uploadsByHash[sha(invoice('T-1'))]).toBe(1);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  });

  it('status reports counts and errors; check validates config and key; exit codes are the documented ones', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'inbox', 'ok.txt'), invoice('S-1'));
    await writeFile(join(world.dir, 'inbox', 'empty.txt'), '');
    const run = runCli(['run', '--config', world.configFile]);
    await until(
      'both finished',
      () => stateOf(world, 'ok.txt') === 'archived' && stateOf(world, 'empty.txt') === 'failed',
      20_000,
    );
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);

    const status = runCli(['status', '--config', world.configFile, '--json']);
    expect(await status.exited).toBe(1); // a failed file: needs attention
    const report = JSON.parse(status.output());
    expect(report.files).toMatchObject({ archived: 1, failed: 1 });
    expect(report.failed.files[0].reason).toContain('the file is empty (0 bytes)');

    const check = runCli(['check', '--config', world.configFile]);
    expect(await check.exited).toBe(0);
    const badKey = runCli(['check', '--config', world.configFile], { DOCEX_API_KEY: 'wrong' });
    expect(await badKey.exited).toBe(3);
    expect(badKey.output()).not.toContain('    at ');
    const noKey = runCli(['check', '--config', world.configFile], { DOCEX_API_KEY: '' });
    expect(await noKey.exited).toBe(2);
    expect(noKey.output()).toContain('DOCEX_API_KEY');
    const usage = runCli(['frobnicate']);
    expect(await usage.exited).toBe(2);
  }, testLimit(60_000));

  // Every command's --help as a process (usage, exit 0): test/docex-cli/startup.test.ts.
  it('pull works one-off with the key from a key file and the URL from DOCEX_BASE_URL', async () => {
    world = await makeWorld();
    const notConfigured = runCli(['pull', '--config', world.configFile]);
    expect(await notConfigured.exited).toBe(2);
    expect(notConfigured.output()).toContain(
      `docex-sync pull: ${world.configFile}: no "pull" section in the config`,
    );

    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const { tasks } = await client.uploadAndWait(
      { files: [{ data: new TextEncoder().encode(invoice('P-1')), fileName: 'p.txt' }] },
      { intervalMs: 20 },
    );
    const yaml = (await readFile(world.configFile, 'utf8')).replace(
      /base_url: "[^"]+"/,
      'api_key_file: ./secrets/key.txt',
    );
    expect(yaml).not.toContain(world.emulator.url);
    const configFile = join(world.dir, 'pull-only.yaml');
    await writeFile(
      configFile,
      `${yaml}pull: { schedule: "0 * * * *", output: ./pulled, since: "2020-01-01" }\n`,
    );
    await mkdir(join(world.dir, 'secrets'));
    await writeFile(join(world.dir, 'secrets', 'key.txt'), `${SECRET}\n`);
    const env = { DOCEX_API_KEY: '', DOCEX_BASE_URL: world.emulator.url };
    const pull = runCli(['pull', '--config', configFile], env);
    expect(await pull.exited).toBe(0);
    expect(pull.output()).toContain('Pulled 1 document(s) changed since 2019-12-31T23:58:00.000Z');
    const id = tasks[0]!.document_id!;
    expect(await readdir(join(world.dir, 'pulled'))).toEqual([`document-${id}.json`]);
    expect(pull.output()).not.toContain(SECRET);
    expect(pull.output()).not.toMatch(/\r|\x1b\[/); // no progress bar on a pipe

    // on a terminal: a progress bar while the documents are read (the overlap lists the one again)
    const onTty = runCli(['pull', '--config', configFile], env, { terminal: true });
    expect(await onTty.exited, onTty.output()).toBe(0);
    expect(onTty.output()).toContain('\r\x1b[2Kpull documents [########################] 1/1 100%');
    expect(onTty.output()).toContain('Pulled 0 document(s)');
    // the log line after it clears the bar's line instead of running on in it
    expect(onTty.output()).toMatch(/1\/1 100%\r\x1b\[2K[^\n]*pull finished/);

    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const unreachable = runCli(['check', '--config', configFile], {
      ...env,
      DOCEX_BASE_URL: `http://127.0.0.1:${closed}`,
    });
    expect(await unreachable.exited).toBe(8); // connection refused (EXIT.refused)
    expect(unreachable.output()).toMatch(
      /docex-sync check: .*: api\.base_url: http:\/\/127\.0\.0\.1:\d+: check_api_key: connection refused by 127\.0\.0\.1:\d+ \(ECONNREFUSED\): nothing listens there/,
    );
    expect(unreachable.output()).not.toContain('    at ');

    // one-off pulls are in the history that status and the status page show, a failed one with its reason
    const failedPull = runCli(['pull', '--config', configFile], {
      ...env,
      DOCEX_BASE_URL: `http://127.0.0.1:${closed}`,
    });
    expect(await failedPull.exited).toBe(8);
    const status = runCli(['status', '--config', configFile, '--json'], env);
    expect(await status.exited).toBe(0);
    const pulls = JSON.parse(status.stdout()).pulls as Array<{
      status: string;
      documents: number;
      error?: string;
    }>;
    expect(pulls.map((p) => [p.status, p.documents])).toEqual([
      ['failed', 0],
      ['done', 0],
      ['done', 1],
    ]);
    expect(pulls[0]!.error).toMatch(/fetch_documents/);
  }, testLimit(60_000));

  it('retry puts failed files back into the watched folder', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'inbox', 'later.txt'), '');
    const run = runCli(['run', '--config', world.configFile]);
    await until('failed', () => stateOf(world, 'later.txt') === 'failed', 20_000);
    run.child.kill('SIGTERM');
    await run.exited;
    await until('moved', async () =>
      (await readdir(join(world.dir, 'failed'))).includes('later.txt.error.json'),
    );
    const retry = runCli(['retry', '--config', world.configFile, '--all']);
    expect(await retry.exited).toBe(0);
    expect(await readdir(join(world.dir, 'inbox'))).toEqual(['later.txt']);
    expect(await readdir(join(world.dir, 'failed'))).toEqual([]);
  });
});

describe('pull and reruns', () => {
  const setup = async () => {
    world = await makeWorld({
      extraYaml: 'pull: { schedule: "*/5 * * * *", output: ./pulled, overlap_ms: 1000 }',
    });
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const up = await client.uploadAndWait(
      {
        files: ['1', '2', '3'].map((n) => ({
          data: new TextEncoder().encode(invoice(n)),
          fileName: `${n}.txt`,
        })),
        template_id: world.templateId,
      },
      { intervalMs: 20 },
    );
    const db = new StateDb(world.config().state_db);
    const log = createLogger('warn', {
      pretty: false,
      destination: { write: () => true } as unknown as NodeJS.WritableStream,
    });
    return { client, db, log, docIds: up.tasks.map((t) => t.document_id!) };
  };

  it('pull writes changed documents, moves the cursor only after success, and overlaps the boundary', async () => {
    const { client, db, log, docIds } = await setup();
    const config = {
      ...world.config(),
      pull: { ...world.config().pull!, since: new Date(Date.now() - 3_600_000).toISOString() },
    };
    world.emulator.faults.set({ errorRate: 1, statuses: [500], operations: ['fetch_document_data'] });
    await expect(pullOnce({ db, client, config, log })).rejects.toThrow();
    expect(db.getValue(KV.pullCursor)).toBeUndefined();
    world.emulator.faults.clear();

    const progress: Array<[number, number]> = [];
    const first = await pullOnce({ db, client, config, log }, { progress: (d, t) => progress.push([d, t]) });
    expect(first.documents).toBe(3);
    expect(progress).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
    expect((await readdir(join(world.dir, 'pulled'))).sort()).toEqual(
      docIds.map((id) => `document-${id}.json`).sort(),
    );
    const cursor = Number(db.getValue(KV.pullCursor));
    expect(cursor).toBeGreaterThan(Date.now() - 10_000);
    const doc = JSON.parse(await readFile(join(world.dir, 'pulled', `document-${docIds[0]}.json`), 'utf8'));
    expect(doc.document.document_id).toBe(docIds[0]);
    db.close();
  });

  it('reruns: dry-run counts, a real run dispatches and is recorded, overlapping runs are refused', async () => {
    const { client, db, log } = await setup();
    const job = { name: 'nightly', template_id: world.templateId, override: true, dry_run: true };
    expect(await runRerun({ db, client, log }, job)).toMatchObject({ status: 'dry-run', documents: 3 });
    expect(world.emulator.stats().requestsByOperation.rerun_documents).toBeUndefined();

    const started = db.reruns.startRerun('nightly', false, true, Date.now());
    expect(await runRerun({ db, client, log }, { ...job, dry_run: false })).toMatchObject({
      status: 'skipped',
    });
    db.reruns.finishRerun(
      started!,
      { documents: 0, rerun: 0, not_rerun: 0, errors: [], status: 'done' },
      Date.now(),
    );

    expect(await runRerun({ db, client, log }, { ...job, dry_run: false })).toMatchObject({
      status: 'done',
      documents: 3,
      rerun: 3,
    });
    expect(await runRerun({ db, client, log }, { ...job, dry_run: false, override: false })).toMatchObject({
      status: 'done',
      rerun: 0,
      not_rerun: 3,
    });
    const recorded = db.reruns.lastReruns() as Array<{ status: string; rerun: number | null }>;
    expect(recorded.map((r) => r.status)).toEqual(['done', 'done', 'done', 'dry-run']);
    db.close();
  });
});

describe('a bulk rerun from the command line', () => {
  it('1,001 documents: a dry run sends nothing, a real run sends three chunks of at most 500 with progress lines', async () => {
    world = await makeWorld();
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const total = 1001;
    for (let start = 0; start < total; start += 250) {
      const files = Array.from({ length: Math.min(250, total - start) }, (_, i) => ({
        data: new TextEncoder().encode(invoice(`B-${start + i}`)),
        fileName: `b${start + i}.txt`,
      }));
      await client.uploadFile({ files, template_id: world.templateId });
    }
    await until(
      `${total} documents`,
      async () => (await client.fetchDocuments({ template_id: world.templateId })).length === total,
      30_000,
    );
    const args = ['rerun', '--config', world.configFile, '--template-id', String(world.templateId)];

    const dry = runCli([...args, '--dry-run']);
    expect(await dry.exited).toBe(0);
    expect(dry.output()).toContain(`Dry run: ${total} document(s) match the filters; nothing was sent.`);
    expect(world.emulator.stats().requestsByOperation.rerun_documents).toBeUndefined();

    const real = runCli([...args, '--override']);
    expect(await real.exited).toBe(0);
    expect(real.output()).toContain(`Rerun: ${total} dispatched, 0 not rerun, of ${total} document(s).`);
    expect(world.emulator.stats().requestsByOperation.rerun_documents).toBe(3);
    const progress = real
      .output()
      .split('\n')
      .filter((line) => line.includes('"msg":"rerun progress"'))
      .map((line) => JSON.parse(line) as { chunk: string; rerun_count: number });
    expect(progress.map((p) => p.chunk).sort()).toEqual(['1/3', '2/3', '3/3']);
    expect(progress.map((p) => p.rerun_count).sort()).toEqual([1, 500, 500]);
  }, testLimit(60_000));
});

describe('config', () => {
  it('the annotated example is valid and mentions every key the config accepts', async () => {
    const file = join(import.meta.dirname, '../../../examples/docex-sync.yaml');
    expect(loadConfig(file).watch[0]!.template_id).toBe(12);
    const text = await readFile(file, 'utf8');
    const keys = (schema: z.ZodType, path: string): string[] => {
      const def = schema.def as {
        type: string;
        innerType?: z.ZodType;
        element?: z.ZodType;
        shape?: Record<string, z.ZodType>;
      };
      if (def.innerType) return keys(def.innerType, path);
      if (def.element) return keys(def.element, `${path.slice(0, -1)}[].`);
      if (!def.shape) return [];
      return Object.entries(def.shape).flatMap(([k, v]) => [`${path}${k}`, ...keys(v, `${path}${k}.`)]);
    };
    // Each key is looked for inside its own top-level section (to the next unindented line).
    const section = (top: string) =>
      new RegExp(`^${top}:[^\\n]*\\n(?:[ #][^\\n]*\\n|\\n)*`, 'm').exec(text)?.[0] ?? '';
    const all = keys(ConfigSchema, '');
    const missing = all.filter((key) => {
      const [top, ...rest] = key.replaceAll('[]', '').split('.');
      if (!rest.length) return !new RegExp(`^${top}:`, 'm').test(text);
      return !new RegExp(`^\\s*(#\\s*)?(- )?${rest.at(-1)}:`, 'm').test(section(top!));
    });
    expect(all.length).toBeGreaterThan(40);
    expect(missing).toEqual([]);
  });

  it('names the file, the key and what is expected; refuses output folders inside the watched folder', async () => {
    world = await makeWorld();
    const file = join(world.dir, 'bad.yaml');
    await writeFile(
      file,
      'state_db: x.db\nwatch:\n  - path: ./in\n    template_id: "three"\n    output: ./in/results\n    failed_dir: ./failed\n    processed_dir: ./p\n',
    );
    expect(() => loadConfig(file)).toThrow(ConfigError);
    expect(() => loadConfig(file)).toThrow(
      /bad\.yaml: invalid config\n {2}\S*bad\.yaml:4 watch\[0\]\.template_id: must be a whole number \(1 or more\), e.g. 3, not "three"/,
    );
    await writeFile(
      file,
      'state_db: x.db\nwatch:\n  - path: ./in\n    recursive: true\n    template_id: 3\n    output: ./in/results\n    failed_dir: ./failed\n    processed_dir: ./p\n',
    );
    expect(() => loadConfig(file)).toThrow(/watch\[0\]\.output: .* is inside the watched folder/);
    await writeFile(
      file,
      'state_db: x.db\nwatch:\n  - path: ./in\n    recursive: true\n    exclude: ["results/**"]\n    template_id: 3\n    output: ./in/results\n    failed_dir: ./failed\n    processed_dir: ./p\n',
    );
    expect(loadConfig(file).watch[0]!.output).toBe(join(world.dir, 'in', 'results'));
  });
});

describe('operating it', () => {
  it('/healthz and /metrics on loopback; names are NFC-normalised in the DB', async () => {
    world = await makeWorld({ extraYaml: 'http: { port: 0 }' });
    const daemon = await world.start();
    const nfd = 'cafe\u0301-receipt.txt';
    await writeFile(join(world.dir, 'inbox', nfd), invoice('U-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1);
    const address = daemon.http!.address() as { port: number; address: string };
    expect(address.address).toBe('127.0.0.1');
    const health = await (await fetch(`http://127.0.0.1:${address.port}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok', files: { archived: 1 } });
    const metrics = await (await fetch(`http://127.0.0.1:${address.port}/metrics`)).text();
    expect(metrics).toContain('docex_sync_files{state="archived"} 1');
    expect(metrics).toContain('docex_sync_uploads_total 1');
    const row = daemon.db.files.inState('archived')[0]!;
    expect(row.rel).toBe('caf\u00e9-receipt.txt');
  });
});

describe('the delivery guarantee under kill -9', () => {
  it('killed with four uploads in flight: after a restart every file ends archived, each with one document; at most those four are sent twice', async () => {
    world = await makeWorld({ taskDelayMs: 100 });
    // Each file alone: four requests in flight are four files (batched, see the group-commit tests).
    await writeFile(world.configFile, perFile(await readFile(world.configFile, 'utf8')));
    world.emulator.faults.set({ latencyMs: [2500, 2500], operations: ['upload_file'] });
    const names = Array.from({ length: 6 }, (_, i) => `k${i}.txt`);
    for (const name of names) await writeFile(join(world.dir, 'inbox', name), invoice(name));
    const first = runCli(['run', '--config', world.configFile]);
    const uploading = () => names.filter((n) => stateOf(world, n) === 'uploading').length;
    await until('four uploads in flight', () => uploading() === 4, 30_000);
    first.child.kill('SIGKILL');
    await first.exited;

    world.emulator.faults.clear();
    const second = runCli(['run', '--config', world.configFile]);
    await until('all archived', () => names.every((n) => stateOf(world, n) === 'archived'), 40_000);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);

    const uploads = world.emulator.stats().uploadsByHash;
    const twice = names.filter((n) => uploads[sha(invoice(n))] === 2);
    for (const n of names) expect(uploads[sha(invoice(n))]).toBeLessThanOrEqual(2);
    expect(twice.length).toBeLessThanOrEqual(4); // api.concurrency: the bound docs/daemon.md gives
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    expect(await client.fetchDocuments({})).toHaveLength(names.length); // one document per file
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual([...names].sort());
    expect(await readdir(join(world.dir, 'failed'))).toEqual([]);
  }, testLimit(60_000));

  it('run with a refused API key exits 3 and leaves every file where it was', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('A-1'));
    const run = runCli(['run', '--config', world.configFile], { DOCEX_API_KEY: 'refused-key' });
    expect(await run.exited).toBe(3);
    expect(run.output()).not.toContain('    at ');
    expect(await readdir(join(world.dir, 'inbox'))).toEqual(['a.txt']);
    expect(stateOf(world, 'a.txt')).not.toBe('failed');
  }, testLimit(60_000));

  it('a second daemon on the same state DB refuses to start and names the DB and the holder', async () => {
    world = await makeWorld();
    const first = runCli(['run', '--config', world.configFile]);
    await until('first running', () => first.output().includes('docex-sync running'), 30_000);
    const second = runCli(['run', '--config', world.configFile]);
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(`the state DB ${join(world.dir, 'state', 'sync.db')} is in use`);
    expect(second.output()).toContain(`pid ${first.child.pid}`);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  }, testLimit(60_000));
});

describe('recovery from the state a crash leaves in each pipeline state', () => {
  const cases = [
    { state: 'stable', expectUploads: 1, end: 'archived' },
    { state: 'uploading', expectUploads: 1, end: 'archived' }, // task id never stored: sent again (documented)
    { state: 'done', expectUploads: 0, end: 'archived' }, // results written, not yet moved
    { state: 'failed', expectUploads: 0, end: 'failed' }, // failed, not yet moved to the failed folder
  ] as const;
  for (const c of cases) {
    it(`a row left in "${c.state}" ends "${c.end}" after a restart`, async () => {
      world = await makeWorld();
      const content = invoice(`R-${c.state}`);
      const path = join(world.dir, 'inbox', `${c.state}.txt`);
      await writeFile(path, content);
      const { mtimeMs, size } = await import('node:fs/promises').then((fs) => fs.stat(path));
      const db = new StateDb(world.config().state_db);
      const row = db.files.discover(
        {
          watch: join(world.dir, 'inbox'),
          path,
          rel: `${c.state}.txt`,
          size,
          mtimeMs: Math.floor(mtimeMs),
          ino: 0,
        },
        Date.now(),
        0,
      );
      db.files.update(
        row.id,
        {
          state: c.state,
          sha256: sha(content),
          document_id: null,
          ...(c.state === 'failed'
            ? { reason: 'extraction failed: test', outcome: 'failed', finalized: 0 }
            : {}),
        },
        Date.now(),
      );
      db.close();
      const daemon = await world.start();
      await until(`ends ${c.end}`, () => {
        const r = daemon.db.files.get(row.id)!;
        return r.state === c.end && (c.end !== 'failed' || r.finalized === 1);
      });
      expect(world.emulator.stats().uploadsByHash[sha(content)] ?? 0).toBe(c.expectUploads);
      const target = c.end === 'archived' ? 'processed' : 'failed';
      expect(await readdir(join(world.dir, target))).toContain(`${c.state}.txt`);
      expect(await readdir(join(world.dir, 'inbox'))).toEqual([]);
    });
  }

  it('a crash after the server took the upload but before its task id was stored: sent again, the DUPLICATE answer gives the first document', async () => {
    world = await makeWorld();
    const content = invoice('R-lost-answer');
    const path = join(world.dir, 'inbox', 'lost-answer.txt');
    await writeFile(path, content);
    // What the crashed daemon had done: the server holds the document, the DB still says "uploading".
    const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
    const [first] = (
      await client.uploadAndWait({ files: [{ path }], template_id: world.templateId }, { intervalMs: 20 })
    ).tasks;
    expect(first!.status).toBe('DONE');
    const { mtimeMs, size } = await import('node:fs/promises').then((fs) => fs.stat(path));
    const db = new StateDb(world.config().state_db);
    const row = db.files.discover(
      {
        watch: join(world.dir, 'inbox'),
        path,
        rel: 'lost-answer.txt',
        size,
        mtimeMs: Math.floor(mtimeMs),
        ino: 0,
      },
      Date.now(),
      0,
    );
    db.files.update(row.id, { state: 'uploading', sha256: sha(content), document_id: null }, Date.now());
    db.close();

    const daemon = await world.start();
    await until('archived', () => daemon.db.files.get(row.id)!.state === 'archived');
    expect(world.emulator.stats().uploadsByHash[sha(content)]).toBe(2);
    const done = daemon.db.files.get(row.id)!;
    expect(done.outcome).toBe('duplicate');
    expect(done.document_id).toBe(first!.document_id);
    const json = (await readdir(join(world.dir, 'results'))).find((f) => f.endsWith('.json'))!;
    expect(json).toBe(`lost-answer.doc-${first!.document_id}.json`);
    const written = JSON.parse(await readFile(join(world.dir, 'results', json), 'utf8'));
    expect(written.document.General_fields['Invoice number'].value).toBe('R-lost-answer');
  });
});

/**
 * The delivery guarantee under group commit, with kill -9 at exact moments: the daemon kills
 * itself (SIGKILL) when it reaches a named point (DOCEX_SYNC_CRASH_AT, daemon/src/common/crash-point.ts)
 * - mid-batch, with changes of several files uncommitted; with a task id stored but not committed;
 * between a daily CSV group's fsync and its rows' commit; between an original's move and its
 * commit - and a second run, as an operator would start it, must leave every file archived once,
 * with one document, its results and one daily row, no file sent more often than the documented
 * bound allows.
 */
const crashNames = Array.from({ length: 8 }, (_, i) => `g${i}.txt`);

/**
 * Each file alone (`upload.batch_files: 1`), whose bound is api.concurrency files sent twice, unless
 * `batched`: the default config, files due together in one request, bound api.concurrency x
 * batch_files (docs/reference/engine.md, "Batched uploads").
 */
const perFile = (yaml: string) => yaml.replace('max_attempts: 20 }', 'max_attempts: 20, batch_files: 1 }');
const BOUND = { perFile: 4, batched: 4 * 10 };

/** Drops the files, runs until the crash point kills the daemon, then runs again until all are archived. */
async function crashThenRestart(point: string, batched = false) {
  world = await makeWorld({ taskDelayMs: 100 });
  if (!batched) await writeFile(world.configFile, perFile(await readFile(world.configFile, 'utf8')));
  for (const name of crashNames) await writeFile(join(world.dir, 'inbox', name), invoice(name));
  const first = runCli(['run', '--config', world.configFile], { DOCEX_SYNC_CRASH_AT: point });
  expect(await first.exited).toBe(-1); // no exit code: killed
  expect(first.child.signalCode).toBe('SIGKILL');
  const before = new Map(crashNames.map((n) => [n, stateOf(world, n)]));

  const second = runCli(['run', '--config', world.configFile]);
  await until('all archived', () => crashNames.every((n) => stateOf(world, n) === 'archived'), 40_000);
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);
  return { before, uploads: world.emulator.stats().uploadsByHash };
}

/** What the guarantee promises whatever the moment of the crash. */
async function expectEveryFileDeliveredOnce(uploads: Record<string, number>, bound = BOUND.perFile) {
  for (const n of crashNames) expect(uploads[sha(invoice(n))], n).toBeGreaterThanOrEqual(1);
  for (const n of crashNames) expect(uploads[sha(invoice(n))], n).toBeLessThanOrEqual(2);
  // The most a crash may send twice (docs/reference/engine.md, "Batched uploads").
  expect(crashNames.filter((n) => uploads[sha(invoice(n))] === 2).length).toBeLessThanOrEqual(bound);
  const client = createNodeClient({ baseUrl: world.emulator.url, apiKey: SECRET });
  expect(await client.fetchDocuments({})).toHaveLength(crashNames.length); // one document per file

  expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual([...crashNames].sort());
  expect(await readdir(join(world.dir, 'inbox'))).toEqual([]);
  expect(await readdir(join(world.dir, 'failed'))).toEqual([]);

  const results = await readdir(join(world.dir, 'results'));
  const jsons = results.filter((f) => f.endsWith('.json'));
  expect(jsons).toHaveLength(crashNames.length);
  for (const file of jsons) {
    const json = JSON.parse(await readFile(join(world.dir, 'results', file), 'utf8')) as ResultJson;
    // Where the JSON says the original went is where it is.
    expect(json.archived_to, file).toBe(join(world.dir, 'processed', basename(json.source_file)));
  }
  const daily = results.filter((f) => /^daily-.*\.csv$/.test(f));
  const rows = [];
  for (const file of daily)
    rows.push(...parseCsv(await readFile(join(world.dir, 'results', file), 'utf8'), ',').slice(1));
  expect(rows.map((r) => basename(r[1]!)).sort()).toEqual([...crashNames].sort()); // source_file: one row per document
}

describe('group commit: kill -9 at an exact moment, then a restart', () => {
  it('with a task id stored but not committed: that file is sent again (a DUPLICATE answer), every file ends archived once', async () => {
    const { uploads } = await crashThenRestart('answer-stored@3');
    // The third answer was in the open batch when the process died: its file went up twice.
    expect(crashNames.filter((n) => uploads[sha(invoice(n))] === 2).length).toBeGreaterThanOrEqual(1);
    await expectEveryFileDeliveredOnce(uploads);
  }, testLimit(90_000));

  it('mid-batch (a commit holding several files’ changes is lost): every file ends archived once', async () => {
    // The fifth batch of several writes: a run of these eight files commits about a dozen.
    const { before, uploads } = await crashThenRestart('state-commit@5');
    // The crash came while files were in flight, not before or after all of them.
    expect([...before.values()].some((s) => s !== 'archived')).toBe(true);
    await expectEveryFileDeliveredOnce(uploads);
  }, testLimit(90_000));

  it('mid-batch at the default config (files sharing upload requests): every file ends archived once', async () => {
    const { before, uploads } = await crashThenRestart('state-commit@5', true);
    expect([...before.values()].some((s) => s !== 'archived')).toBe(true);
    await expectEveryFileDeliveredOnce(uploads, BOUND.batched);
  }, testLimit(90_000));

  it('after a daily CSV group was fsynced but before its rows committed: one daily row per document', async () => {
    const { uploads } = await crashThenRestart('daily-appended@1');
    await expectEveryFileDeliveredOnce(uploads);
  }, testLimit(90_000));

  it('after an original was moved but before that was committed: recorded as archived where it went, not polled or moved again', async () => {
    const { before, uploads } = await crashThenRestart('original-moved@2');
    // Its row was committed as done before the move (the pipeline waits for that), so the restart
    // only records the move: no file is left to be polled and written again.
    expect([...before.values()].filter((s) => s === 'done').length).toBeGreaterThanOrEqual(1);
    await expectEveryFileDeliveredOnce(uploads);
  }, testLimit(90_000));
});
