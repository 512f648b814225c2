/**
 * The walk's two shortcuts for large scans (daemon/src/intake/walk.ts) give exactly what the plain
 * way gives: a file in a folder the walk entered is tested by its own name only
 * (isIgnoredInFolder, against isIgnored on the whole path), and a local watch stats files on the
 * event loop (lookInline, against the async lstat a polling watch uses), falling back to the async
 * way once one call is slow.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { isExcluded, isIgnored, isIgnoredInFolder } from '../../../daemon/src/intake/selection.ts';
import { createLogger } from '../../../daemon/src/common/logging.ts';
import { SlowCalls, Walker, type Listed } from '../../../daemon/src/intake/walk.ts';
import { watchIn } from '../helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** Ignored by default, spelled out (the test must not share the code's reading of the rules). */
const IGNORED_BY_DEFAULT = [
  '.hidden.pdf',
  '~$lock.docx',
  'Thumbs.db',
  'desktop.INI',
  'x.part',
  'x.TMP',
  'x.crdownload',
  'x.pdf~',
  'x.error.json',
  '@eaDir',
  '@EADIR',
  '#recycle',
  '#snapshot',
  '$RECYCLE.BIN',
  'System Volume Information',
  '__MACOSX',
  '.~lock.report.odt#',
];
const NAMES = [
  'a.pdf',
  'A.PDF',
  ...IGNORED_BY_DEFAULT,
  'report.odt#',
  'invoice-2024.pdf',
  'scan 01.pdf',
  'b.txt',
  'résumé.pdf',
  '2024-01',
];
const FOLDERS = ['', 'sub/', 'sub/deeper/', 'Supplier A/2024-01/'];
const WATCHES: Array<Record<string, unknown>> = [
  { recursive: true },
  { recursive: true, include: ['*.pdf'] },
  { recursive: true, exclude: ['deeper', '*.txt'] },
  { recursive: true, include: ['sub/**/*.pdf'], exclude: ['**/scan*'] },
  { recursive: true, ignore_names: [] },
  { recursive: true, ignore_names: ['*.pdf', '{a,b}.*', '!*.txt', '2024-??', '[#@]*'] },
];

describe('isIgnoredInFolder', () => {
  it('says what isIgnored says for every file in a folder a walk enters', () => {
    for (const watch of WATCHES) {
      const config = watchIn('/base', '/base/inbox', watch);
      for (const folder of FOLDERS) {
        if (folder && isExcluded(config, folder.slice(0, -1), true)) continue;
        for (const name of NAMES)
          expect([watch, folder + name, isIgnoredInFolder(config, folder, name)]).toEqual([
            watch,
            folder + name,
            isIgnored(config, folder + name),
          ]);
      }
    }
  });

  it('the built-in names are still ignored (a check that the table above tests something)', () => {
    const config = watchIn('/base', '/base/inbox', { recursive: true });
    expect(NAMES.filter((n) => isIgnoredInFolder(config, 'sub/', n))).toEqual(IGNORED_BY_DEFAULT);
  });
});

async function tree() {
  const base = await mkdtemp(join(tmpdir(), 'docex-walk-'));
  cleanups.push(() => rm(base, { recursive: true, force: true }));
  const root = join(base, 'inbox');
  await mkdir(join(root, 'sub'), { recursive: true });
  for (let i = 0; i < 300; i++) await writeFile(join(root, 'sub', `f${i}.pdf`), 'x'.repeat(i));
  await symlink(join(root, 'sub', 'f1.pdf'), join(root, 'sub', 'link.pdf'));
  execFileSync('mkfifo', [join(root, 'sub', 'pipe.pdf')]);
  await mkdir(join(root, 'sub', 'folder.pdf'));
  const listed: Listed[] = ['link.pdf', 'pipe.pdf', 'folder.pdf', 'gone.pdf']
    .concat(Array.from({ length: 300 }, (_, i) => `f${i}.pdf`))
    .map((name) => ({ path: join(root, 'sub', name), rel: `sub/${name}` }));
  return { base, root, listed };
}

function walker(root: string, base: string, watch: Record<string, unknown>, inlineSlowMs?: number) {
  const lines: string[] = [];
  const log = createLogger('info', {
    pretty: false,
    destination: new Writable({ write: (c, _e, done) => (lines.push(String(c)), done()) }),
  });
  return { walker: new Walker(watchIn(base, root, watch), log, { inlineSlowMs }), lines };
}

describe('look: stats on the event loop for a local watch', () => {
  it('finds the same regular files with the same stats as the async way, and skips the rest alike', async () => {
    const { base, root, listed } = await tree();
    const inline = walker(root, base, { recursive: true });
    const async = walker(root, base, { recursive: true, polling: true });
    const fromInline = await inline.walker.look(listed);
    const fromAsync = await async.walker.look(listed);
    expect(fromInline).toHaveLength(300);
    expect(fromInline).toEqual(fromAsync);
    expect(fromInline.find((c) => c.rel === 'sub/f7.pdf')).toMatchObject({ size: 7 });
    // The symlink and the FIFO are logged once each, as the async way does.
    const skipped = (lines: string[]) => lines.filter((l) => l.includes('not a regular file')).length;
    expect([skipped(inline.lines), skipped(async.lines)]).toEqual([2, 2]);
  });

  it('after slow calls, says so once and looks at the rest off the event loop, with the same result', async () => {
    const { base, root, listed } = await tree();
    const slow = walker(root, base, { recursive: true }, -1); // every call counts as slow
    const found = await slow.walker.look(listed);
    const again = await slow.walker.look(listed);
    expect(found).toHaveLength(300);
    expect(again).toEqual(found);
    expect(slow.lines.filter((l) => l.includes('answers slowly'))).toHaveLength(1);
  });

  it('a lone late call (the process waited for a CPU) does not turn them off; three within 1,000 calls do', () => {
    const run = (slowAt: number[], calls = 3000) => {
      const counter = new SlowCalls();
      for (let n = 1; n <= calls; n++) if (counter.count(slowAt.includes(n))) return n;
      return undefined;
    };
    expect(run([])).toBeUndefined();
    expect(run([10])).toBeUndefined();
    expect(run([10, 600, 1200, 1800, 2400])).toBeUndefined(); // never 3 within 1,000 calls
    expect(run([10, 11, 12])).toBe(12);
    expect(run([10, 600, 1009])).toBe(1009);
    expect(run([10, 600, 1010, 1500])).toBe(1500);
  });
});

describe('walk: the next folder is read while a batch is handled', () => {
  async function folders(n: number, files: number) {
    const base = await mkdtemp(join(tmpdir(), 'docex-walk-'));
    cleanups.push(() => rm(base, { recursive: true, force: true }));
    const root = join(base, 'inbox');
    for (let d = 0; d < n; d++) {
      await mkdir(join(root, `d${d}`), { recursive: true });
      for (let f = 0; f < files; f++) await writeFile(join(root, `d${d}`, `f${f}.pdf`), 'x');
    }
    return { base, root };
  }

  it('one batch at a time, every file once, and the walk returns only after the last batch', async () => {
    const { base, root } = await folders(4, 3);
    const { walker: w } = walker(root, base, { recursive: true });
    const events: string[] = [];
    let running = 0;
    const seen: string[] = [];
    const count = await w.walk(root, {
      entering: async (dir) => void events.push(`enter ${dir.slice(root.length) || '/'}`),
      batch: async (listed) => {
        running++;
        expect(running).toBe(1);
        events.push(`batch ${listed[0]!.rel.split('/')[0]}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
        seen.push(...listed.map((l) => l.rel));
        events.push('batch done');
        running--;
      },
    });
    expect(count).toBe(12);
    expect(seen.sort()).toEqual([0, 1, 2, 3].flatMap((d) => [0, 1, 2].map((f) => `d${d}/f${f}.pdf`)).sort());
    // A folder is entered (watched, then read) while the batch before it is being handled.
    const first = events.findIndex((e) => e.startsWith('batch d'));
    expect(events[0]).toBe('enter /');
    expect(events[first + 1]).toMatch(/^enter \/d/);
    expect(events.filter((e) => e.startsWith('enter'))).toHaveLength(5);
  });

  it('a batch that fails fails the walk', async () => {
    const { base, root } = await folders(3, 2);
    const { walker: w } = walker(root, base, { recursive: true });
    let calls = 0;
    await expect(
      w.walk(root, {
        batch: async () => {
          calls++;
          await new Promise((resolve) => setTimeout(resolve, 5));
          throw new Error('no room');
        },
      }),
    ).rejects.toThrow('no room');
    expect(calls).toBe(1);
  });
});
