/**
 * include / exclude on a watched tree, in every way a file can be found: the start-up scan, a
 * watcher event, and the periodic rescan (with the watcher blind), for recursive and flat watches,
 * down to a folder two levels deep. Include patterns select files; exclude patterns skip files and
 * keep walks out of the folders they match.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigSchema, globMatcher, type WatchConfig } from '../../../daemon/src/config/config.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import type { Candidate, Listed } from '../../../daemon/src/intake/walk.ts';
import { FolderWatcher } from '../../../daemon/src/intake/watcher.ts';
import { invoice, makeWorld, until, watchIn, type World } from '../helpers.ts';

const HOUR = 3_600_000;
const TREE = [
  'top.pdf',
  'top.txt',
  'sub/a.pdf',
  'sub/a.txt',
  'sub/deeper/b.pdf',
  'sub/deeper/b.txt',
  'skip/c.pdf',
];

interface Case {
  name: string;
  watch: { recursive: boolean; include?: string[]; exclude?: string[] };
  /** Spelled out, not computed from the patterns: the test must not share the code's reading of them. */
  expected: string[];
}

const CASES: Case[] = [
  { name: 'recursive, no filter', watch: { recursive: true }, expected: TREE },
  {
    name: 'recursive, include *.pdf',
    watch: { recursive: true, include: ['*.pdf'] },
    expected: ['skip/c.pdf', 'sub/a.pdf', 'sub/deeper/b.pdf', 'top.pdf'],
  },
  {
    name: 'recursive, include **/*.pdf',
    watch: { recursive: true, include: ['**/*.pdf'] },
    expected: ['skip/c.pdf', 'sub/a.pdf', 'sub/deeper/b.pdf', 'top.pdf'],
  },
  {
    name: 'recursive, include sub/**/*.pdf',
    watch: { recursive: true, include: ['sub/**/*.pdf'] },
    expected: ['sub/a.pdf', 'sub/deeper/b.pdf'],
  },
  {
    name: 'recursive, exclude *.txt',
    watch: { recursive: true, exclude: ['*.txt'] },
    expected: ['skip/c.pdf', 'sub/a.pdf', 'sub/deeper/b.pdf', 'top.pdf'],
  },
  {
    name: 'recursive, exclude a folder by name',
    watch: { recursive: true, exclude: ['skip'] },
    expected: TREE.filter((f) => !f.startsWith('skip/')),
  },
  {
    name: 'recursive, exclude a folder by folder/**',
    watch: { recursive: true, exclude: ['skip/**'] },
    expected: TREE.filter((f) => !f.startsWith('skip/')),
  },
  {
    name: 'recursive, exclude a nested folder',
    watch: { recursive: true, exclude: ['deeper'] },
    expected: ['skip/c.pdf', 'sub/a.pdf', 'sub/a.txt', 'top.pdf', 'top.txt'],
  },
  {
    name: 'recursive, include *.pdf and exclude sub/deeper',
    watch: { recursive: true, include: ['*.pdf'], exclude: ['sub/deeper'] },
    expected: ['skip/c.pdf', 'sub/a.pdf', 'top.pdf'],
  },
  { name: 'flat, no filter', watch: { recursive: false }, expected: ['top.pdf', 'top.txt'] },
  { name: 'flat, include *.pdf', watch: { recursive: false, include: ['*.pdf'] }, expected: ['top.pdf'] },
  { name: 'flat, exclude *.pdf', watch: { recursive: false, exclude: ['*.pdf'] }, expected: ['top.txt'] },
];

class FakeSink {
  readonly fromEvents = new Set<string>();
  readonly fromWalks = new Set<string>();
  candidate(_watch: WatchConfig, file: Candidate) {
    this.fromEvents.add(file.rel);
  }
  async ingest(_watch: WatchConfig, listed: Listed[], look: (listed: Listed[]) => Promise<Candidate[]>) {
    const files = await look(listed);
    for (const f of files) this.fromWalks.add(f.rel);
    return files.length;
  }
  seen = () => [...new Set([...this.fromEvents, ...this.fromWalks])].sort();
}

const cleanups: Array<() => Promise<void>> = [];
let world: World | undefined;
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
  await world?.cleanup();
  world = undefined;
});

async function writeTree(root: string, tree: readonly string[] = TREE) {
  for (const rel of tree) {
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), rel);
  }
}

async function startWatcher(
  watch: Case['watch'] & { polling?: boolean; polling_interval_ms?: number; ignore_names?: string[] },
) {
  const base = await mkdtemp(join(tmpdir(), 'docex-filters-'));
  const root = join(base, 'inbox');
  await mkdir(root);
  const config = watchIn(base, root, watch);
  const log = createLogger('silent', {
    pretty: false,
    destination: new Writable({ write: (_c, _e, d) => d() }),
  });
  const sink = new FakeSink();
  const watcher = new FolderWatcher(config, sink, log);
  cleanups.push(async () => {
    await watcher.stop();
    await rm(base, { recursive: true, force: true });
  });
  return { root, sink, watcher };
}

describe('include and exclude', () => {
  describe.each(CASES)('$name', ({ watch, expected }) => {
    it('the start-up scan finds exactly the files selected, at every depth', async () => {
      const { root, sink, watcher } = await startWatcher(watch);
      await writeTree(root);
      await watcher.start();
      expect(sink.seen()).toEqual([...expected].sort());
    });

    it('watcher events report the files selected, in nested folders too', async () => {
      const { root, sink, watcher } = await startWatcher(watch);
      // The folders exist at the start (so they are watched, unless excluded); the files come later
      // and, the start-up scan having found none, only an event can report them.
      for (const rel of TREE) await mkdir(dirname(join(root, rel)), { recursive: true });
      await watcher.start();
      for (const rel of TREE) await writeFile(join(root, rel), rel);
      await until(expected.join(', '), () => expected.every((r) => sink.fromEvents.has(r)), 10_000);
      // Then a rescan, which reads the whole tree: nothing unexpected was reported, or is there.
      await watcher.scan();
      expect([...sink.fromEvents].sort()).toEqual([...expected].sort());
      expect(sink.seen()).toEqual([...expected].sort());
    });

    it('the rescan finds them when no watcher event came (a blind watcher)', async () => {
      // Polling once an hour: only the rescan can see what is written after the start.
      const { root, sink, watcher } = await startWatcher({
        ...watch,
        polling: true,
        polling_interval_ms: HOUR,
      });
      await watcher.start();
      await writeTree(root);
      await watcher.scan();
      expect(sink.fromEvents.size).toBe(0);
      expect(sink.seen()).toEqual([...expected].sort());
    });
  });
});

/** What a Synology / Windows / macOS share holds beside the documents. */
const NAS_TREE = [
  'top.pdf',
  'Supplier A/a.pdf',
  '@eaDir/top.pdf/SYNOFILE_THUMB_M.jpg',
  'Supplier A/@eaDir/a.pdf/SYNOFILE_THUMB_S.jpg',
  '#recycle/old.pdf',
  '#snapshot/GMT+01_2026.11.24/top.pdf',
  '$RECYCLE.BIN/S-1-5-21/$R0.pdf',
  'System Volume Information/IndexerVolumeGuid',
  '__MACOSX/Supplier A/._a.pdf',
  'Supplier A/.~lock.a.odt#',
  'Supplier A/~$notes.docx',
];
const NAS_DOCUMENTS = ['Supplier A/a.pdf', 'top.pdf'];

describe('NAS system folders and lock files (ignore_names)', () => {
  it('the start-up scan skips them by default', async () => {
    const { root, sink, watcher } = await startWatcher({ recursive: true });
    await writeTree(root, NAS_TREE);
    await watcher.start();
    expect(sink.seen()).toEqual(NAS_DOCUMENTS);
  });

  it('watcher events inside them are not reported, and no rescan finds them', async () => {
    const { root, sink, watcher } = await startWatcher({ recursive: true });
    for (const rel of NAS_TREE) await mkdir(dirname(join(root, rel)), { recursive: true });
    await watcher.start();
    for (const rel of NAS_TREE) await writeFile(join(root, rel), rel);
    await until(NAS_DOCUMENTS.join(', '), () => NAS_DOCUMENTS.every((r) => sink.fromEvents.has(r)), 10_000);
    await watcher.scan();
    expect(sink.seen()).toEqual(NAS_DOCUMENTS);
  });

  it('ignore_names: [] watches them too (the built-in temporary names stay ignored)', async () => {
    const { root, sink, watcher } = await startWatcher({ recursive: true, ignore_names: [] });
    await writeTree(root, NAS_TREE);
    await watcher.start();
    expect(sink.seen()).toEqual(
      [
        ...NAS_DOCUMENTS,
        '@eaDir/top.pdf/SYNOFILE_THUMB_M.jpg',
        'Supplier A/@eaDir/a.pdf/SYNOFILE_THUMB_S.jpg',
        '#recycle/old.pdf',
        '#snapshot/GMT+01_2026.11.24/top.pdf',
        '$RECYCLE.BIN/S-1-5-21/$R0.pdf',
        'System Volume Information/IndexerVolumeGuid',
      ].sort(),
    );
  });

  it('a list of its own replaces the defaults', async () => {
    const { root, sink, watcher } = await startWatcher({ recursive: true, ignore_names: ['#recycle'] });
    await writeTree(root, NAS_TREE);
    await watcher.start();
    expect(sink.seen()).not.toContain('#recycle/old.pdf');
    expect(sink.seen()).toContain('@eaDir/top.pdf/SYNOFILE_THUMB_M.jpg');
  });
});

describe('glob patterns (picomatch)', () => {
  it('a pattern without / names a file or folder anywhere; with / it is the path from the watched folder', () => {
    const cases: Array<[string, string, boolean]> = [
      ['*.pdf', 'a/b/C.PDF', true],
      ['skip', 'sub/skip', true],
      ['skip/**', 'skip/x/y.pdf', true],
      ['sub/*.pdf', 'sub/x/y.pdf', false],
      ['sub/**/*.pdf', 'sub/y.pdf', true],
      ['{a,b}.pdf', 'x/b.pdf', true],
      ['[0-9]*.pdf', '2024-01.pdf', true],
      ['2024-??', 'archive/2024-01', true],
    ];
    for (const [glob, rel, expected] of cases)
      expect([glob, rel, globMatcher(glob)(rel)]).toEqual([glob, rel, expected]);
  });

  it('ignore_names refuses a path (it is matched against single names)', () => {
    expect(() =>
      ConfigSchema.parse({
        state_db: 'x.db',
        watch: [{ path: 'in', template_id: 1, output: 'o', failed_dir: 'f', ignore_names: ['a/b'] }],
      }),
    ).toThrow(/without '\/'/);
  });
});

describe('include with a recursive watch, end to end', () => {
  it('records and processes the files of sub-folders, not only the top folder (the example config)', async () => {
    world = await makeWorld({ watchYaml: "    recursive: true\n    include: ['*.pdf']" });
    const inbox = join(world.dir, 'inbox');
    await mkdir(join(inbox, 'sub', 'deeper'), { recursive: true });
    await writeFile(join(inbox, 'top.pdf'), invoice('T-1'));
    await writeFile(join(inbox, 'sub', 'a.pdf'), invoice('S-1'));
    await writeFile(join(inbox, 'sub', 'deeper', 'b.pdf'), invoice('D-1'));
    await writeFile(join(inbox, 'sub', 'deeper', 'notes.txt'), 'not selected');
    const daemon = await world.start();
    try {
      await until('all three archived', () => daemon.db.files.inState('archived').length === 3, 30_000);
      expect(
        daemon.db.files
          .inState('archived')
          .map((r) => r.rel)
          .sort(),
      ).toEqual(['sub/a.pdf', 'sub/deeper/b.pdf', 'top.pdf']);
    } finally {
      await daemon.stop();
    }
  });
});
