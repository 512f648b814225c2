import { createHash } from 'node:crypto';
import { appendFile, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeWorld, SECRET, until, invoice, type World } from '../helpers.ts';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
let world: World;
afterEach(async () => world?.cleanup());

describe('docex-sync pipeline against the emulator', () => {
  it('uploads new files, writes JSON and CSV results, and moves the originals to processed', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'a.txt'), invoice('A-1', '1.234,50'));
    await writeFile(join(world.dir, 'inbox', 'b.txt'), invoice('B-2'));
    await until('both archived', () => daemon.db.fileCounts.counts().archived === 2);

    expect(await readdir(join(world.dir, 'inbox'))).toEqual([]);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual(['a.txt', 'b.txt']);
    const results = (await readdir(join(world.dir, 'results'))).sort();
    expect(results.filter((f) => f.startsWith('a.doc-'))).toHaveLength(3);
    const json = JSON.parse(
      await readFile(
        join(
          world.dir,
          'results',
          results.find((f) => f.startsWith('a.') && f.endsWith('.json'))!,
        ),
        'utf8',
      ),
    );
    expect(json.document.General_fields['Invoice number']).toEqual({ value: 'A-1', confidence: 0.95 });
    expect(json.document.General_fields.Total.value).toBe(1234.5);
    expect(json.sha256).toBe(sha(invoice('A-1', '1.234,50')));
    const fieldsCsv = await readFile(
      join(
        world.dir,
        'results',
        results.find((f) => f.startsWith('a.') && f.endsWith('.fields.csv'))!,
      ),
      'utf8',
    );
    expect(fieldsCsv.split('\n')[0]).toBe(
      'document_id,document_name,source_file,fraud_verdict,fraud_score,Invoice number,Invoice number (confidence),Total,Total (confidence)',
    );
    expect(fieldsCsv).toContain('A-1,0.95,1234.5,0.95');
    const linesCsv = await readFile(
      join(
        world.dir,
        'results',
        results.find((f) => f.startsWith('a.') && f.endsWith('.lines.csv'))!,
      ),
      'utf8',
    );
    expect(linesCsv.trim().split('\n')).toEqual([
      'document_id,line,Description,Description (confidence),Amount,Amount (confidence)',
      `${json.document.document_id},1,Widget,0.9,4,0.9`,
      `${json.document.document_id},2,Gadget,0.9,6,0.9`,
    ]);
  });

  it('picks up files present before start-up, waits for slow writers, and uploads each once', async () => {
    world = await makeWorld();
    await writeFile(join(world.dir, 'inbox', 'early.txt'), invoice('E-1'));
    // The daemon's clock is the test's while the writer writes: it moves by stable_ms (200) only
    // after each part is on disk, so every look finds the file grown, however slowly a loaded
    // machine lets the writer go; then it runs on again.
    let manual: number | undefined;
    let lost = 0;
    const monotonic = () => manual ?? performance.now() - lost;
    const daemon = await world.start({ daemon: { monotonic } });
    await until('early archived', () => daemon.db.fileCounts.counts().archived === 1);
    manual = monotonic();
    const slow = join(world.dir, 'inbox', 'slow.txt');
    const parts = ['Invoice number: S-1\n', 'Total: 5,00\n', 'Widget | 2,00\n', 'Gadget | 3,00\n'];
    await appendFile(slow, parts[0]!);
    let written = Buffer.byteLength(parts[0]!);
    await until('discovered', () => daemon.db.files.current(slow));
    for (const part of parts.slice(1)) {
      await appendFile(slow, part);
      written += Buffer.byteLength(part);
      manual += 200;
      await until('the daemon seeing the file grow', () => daemon.db.files.current(slow)?.size === written);
      expect(daemon.db.files.current(slow)!.state).toBe('discovered');
    }
    lost = performance.now() - manual;
    manual = undefined;
    await until('both archived', () => daemon.db.fileCounts.counts().archived === 2);
    const uploads = world.emulator.stats().uploadsByHash;
    expect(uploads[sha(parts.join(''))]).toBe(1);
    expect(Object.values(uploads)).toEqual([1, 1]);
  });

  it('the periodic rescan finds a file the watcher never reported', async () => {
    // Polling once an hour: chokidar is blind for the test's duration, only the rescan (1 s) can see.
    world = await makeWorld({ watchYaml: '    polling: true\n    polling_interval_ms: 3600000' });
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'missed.txt'), invoice('M-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1, 10_000);
    expect(await readdir(join(world.dir, 'processed'))).toEqual(['missed.txt']);
  });

  it('ignores temporary, hidden and system files, and skips symlinks', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    const inbox = join(world.dir, 'inbox');
    for (const name of ['.DS_Store', 'Thumbs.db', '~$report.docx', 'scan.part', 'x.tmp', '.hidden.pdf'])
      await writeFile(join(inbox, name), 'data');
    await writeFile(join(world.dir, 'outside.txt'), invoice('L-1'));
    await symlink(join(world.dir, 'outside.txt'), join(inbox, 'link.txt'));
    await writeFile(join(inbox, 'real.txt'), invoice('R-1'));
    await until('real archived', () => daemon.db.fileCounts.counts().archived === 1);
    // Two rescans more: the second one started after every file above was written, and it listed them.
    const rescans = () => world.logs.filter((l) => l.includes('"msg":"rescan"')).length;
    const before = rescans();
    await until('two rescans', () => rescans() >= before + 2);
    const rows = daemon.db.db.prepare('SELECT path FROM files').all() as Array<{ path: string }>;
    expect(rows.map((r) => r.path)).toEqual([join(inbox, 'real.txt')]);
    expect((await readdir(inbox)).sort()).toEqual([
      '.DS_Store',
      '.hidden.pdf',
      'Thumbs.db',
      'link.txt',
      'scan.part',
      'x.tmp',
      '~$report.docx',
    ]);
    expect(world.logs.join('')).toContain('skipped: not a regular file');
  });

  it('a file the service cannot read ends in the failed folder with a readable .error.json', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'empty.pdf'), '');
    await writeFile(join(world.dir, 'inbox', 'binary.bin'), Buffer.from([0, 1, 2, 3, 0, 5]));
    await until(
      'both failed and moved',
      () => daemon.db.files.inState('failed').filter((r) => r.finalized).length === 2,
    );
    expect((await readdir(join(world.dir, 'failed'))).sort()).toEqual([
      'binary.bin',
      'binary.bin.error.json',
      'empty.pdf',
      'empty.pdf.error.json',
    ]);
    const report = JSON.parse(await readFile(join(world.dir, 'failed', 'empty.pdf.error.json'), 'utf8'));
    expect(report).toMatchObject({ file: 'empty.pdf', status: 'failed', attempts: 0 }); // never sent
    expect(report.reason).toContain('the file is empty (0 bytes)');
    expect(report.failed_at).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('an upload the service refuses (413) fails at once with the reason; others go on', async () => {
    // One file per request: two files found together would otherwise share one, and a refused batch
    // is sent again file by file (batch-upload.test.ts proves that path), a third upload.
    world = await makeWorld({ uploadYaml: 'batch_files: 1' });
    world.emulator.faults.set({ maxUploadBytes: 1000, operations: ['upload_file'] });
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'huge.txt'), invoice('H-1') + 'x'.repeat(5000));
    await writeFile(join(world.dir, 'inbox', 'small.txt'), invoice('H-2'));
    await until('huge failed, small archived', () => {
      const failed = daemon.db.files.inState('failed');
      return daemon.db.fileCounts.counts().archived === 1 && failed.length === 1 && failed[0]!.finalized;
    });
    const report = JSON.parse(await readFile(join(world.dir, 'failed', 'huge.txt.error.json'), 'utf8'));
    expect(report).toMatchObject({ file: 'huge.txt', status: 'failed', attempts: 1 });
    expect(report.reason).toMatch(/upload refused: upload_file: .*413/);
    expect(
      world.emulator.stats().requestsByOperation.upload_file,
      JSON.stringify({ byHash: world.emulator.stats().uploadsByHash, log: world.logs.join('').slice(-6000) }),
    ).toBe(2);
  });

  it('the same bytes under two names are uploaded once; the second reuses the first document', async () => {
    world = await makeWorld();
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'one.txt'), invoice('D-1'));
    await until('first archived', () => daemon.db.fileCounts.counts().archived === 1);
    await writeFile(join(world.dir, 'inbox', 'copy-of-one.txt'), invoice('D-1'));
    await until('second archived', () => daemon.db.fileCounts.counts().archived === 2);
    expect(world.emulator.stats().uploadsByHash[sha(invoice('D-1'))]).toBe(1);
    expect(daemon.db.fileCounts.outcomes()).toEqual({ processed: 1, duplicate: 1 });
    const rows = daemon.db.files.inState('archived');
    expect(rows[0]!.document_id).toBe(rows[1]!.document_id);
  });

  it('under 5xx, dropped connections and 429s every file still ends processed, none lost or sent twice', async () => {
    world = await makeWorld();
    world.emulator.faults.set({
      errorRate: 0.25,
      statuses: [500, 502, 503],
      dropRate: 0.1,
      rateLimit: { perSecond: 40, retryAfterSeconds: 0 },
    });
    const daemon = await world.start();
    const names = Array.from({ length: 8 }, (_, i) => `f${i}.txt`);
    for (const name of names) await writeFile(join(world.dir, 'inbox', name), invoice(name));
    await until('all archived', () => daemon.db.fileCounts.counts().archived === names.length, 30_000);
    expect(daemon.db.fileCounts.counts().failed).toBe(0);
    const uploads = world.emulator.stats().uploadsByHash;
    for (const name of names) expect(uploads[sha(invoice(name))]).toBe(1);
    expect((await readdir(join(world.dir, 'processed'))).sort()).toEqual(names.sort());
  });

  it('the API key appears neither in the logs nor in the state DB', async () => {
    world = await makeWorld();
    world.emulator.faults.set({ errorRate: 0.3, statuses: [500] });
    const daemon = await world.start();
    await writeFile(join(world.dir, 'inbox', 'k.txt'), invoice('K-1'));
    await until('archived', () => daemon.db.fileCounts.counts().archived === 1, 20_000);
    await daemon.stop();
    expect(world.logs.length).toBeGreaterThan(3);
    expect(world.logs.join('')).not.toContain(SECRET);
    for (const file of await readdir(join(world.dir, 'state'))) {
      expect((await readFile(join(world.dir, 'state', file))).includes(SECRET)).toBe(false);
    }
  });
});
