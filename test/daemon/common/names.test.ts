/**
 * Names from the data: patterns are checked when the config is read; field values are hostile
 * (they come from a scanned document) and must never add a folder level, leave the root, or make a
 * name a file system refuses.
 */
import { link, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freeTarget } from '../../../daemon/src/common/files.ts';
import { moveInto } from '../../../daemon/src/common/move.ts';
import { parseNamePattern, renderName, type NameValues } from '../../../daemon/src/common/names.ts';

const values = (fields: Record<string, unknown>, over: Partial<NameValues> = {}): NameValues => ({
  date: new Date(2026, 0, 5, 9, 7), // local time, as the pattern reads it
  templateId: 12,
  templateName: 'Invoices',
  documentId: 4711,
  originalName: 'scan 12.PDF',
  fields: new Map(Object.entries(fields)),
  missing: 'unknown',
  ...over,
});

const PATTERN = parseNamePattern('{yyyy}/{MM}/{dd}/{field:Supplier}/{field:Invoice number}{ext}');

const roots: string[] = [];
afterEach(async () => {
  for (const root of roots.splice(0)) await rm(root, { recursive: true, force: true });
});
async function tempRoot() {
  const root = await mkdtemp(join(tmpdir(), 'docex-names-'));
  roots.push(root);
  return root;
}

describe('name patterns', () => {
  it('fills date parts, template, document id, the original name and general fields', () => {
    const v = values({ Supplier: 'ACME GmbH', 'Invoice number': 'R-2026-001', Total: 119.5 });
    expect(renderName(PATTERN, v)).toBe('2026/01/05/ACME GmbH/R-2026-001.PDF');
    expect(
      renderName(
        parseNamePattern(
          '{yy}{MM}{dd}-{HH}{mm} {template} #{template_id} doc-{document_id} {name}{ext} {original} {field:Total}',
        ),
        v,
      ),
    ).toBe('260105-0907 Invoices #12 doc-4711 scan 12.PDF scan 12.PDF 119.5');
  });

  it('a missing or empty field takes its own default, else the configured one', () => {
    const pattern = parseNamePattern('{field:Supplier|no supplier}/{field:Invoice number}{ext}');
    expect(renderName(pattern, values({}))).toBe('no supplier/unknown.PDF');
    expect(
      renderName(pattern, values({ Supplier: '   ', 'Invoice number': null }, { missing: '_none' })),
    ).toBe('no supplier/_none.PDF');
    // Not a single value (an object, a list): missing too, not "[object Object]".
    expect(renderName(pattern, values({ Supplier: { a: 1 }, 'Invoice number': [1, 2] }))).toBe(
      'no supplier/unknown.PDF',
    );
    // {template} without a name is the id; without either, missing.
    expect(renderName(parseNamePattern('{template}'), values({}, { templateName: null }))).toBe('12');
    expect(
      renderName(parseNamePattern('{template}'), values({}, { templateName: null, templateId: null })),
    ).toBe('unknown');
  });

  it('refuses patterns that are not a relative path of named parts, naming the problem', () => {
    const refusals: Array<[string, RegExp]> = [
      ['', /empty pattern/],
      ['/abs/{name}', /relative/],
      ['a/../{name}', /".." is not a folder name/],
      ['./{name}', /"\." is not a folder name/],
      ['a//b', /empty folder name/],
      ['a\\b', /use '\/'/],
      ['{yyy}', /unknown placeholder \{yyy\}; known: \{yyyy\}/],
      ['{field:}', /names no field/],
      ['{name', /"\{" without "\}"/],
      ['name}', /"\}" without "\{"/],
    ];
    for (const [pattern, message] of refusals)
      expect(() => parseNamePattern(pattern), pattern).toThrow(message);
  });
});

/** Values a scanned document can carry: each one tries to escape, break or confuse the file system. */
const HOSTILE: unknown[] = [
  '..',
  '.',
  '../../../../etc/passwd',
  '..\\..\\Windows\\System32',
  '/etc/passwd',
  'C:\\Windows\\win.ini',
  '\\\\server\\share\\x',
  'a\u0000b',
  '\u0000',
  'line\nbreak\r\ttab\u001b[31m',
  'CON',
  'nul',
  'com1.txt',
  'LPT9',
  'trailing dots...',
  'trailing spaces   ',
  ' .. ',
  '<>:"|?*',
  'x'.repeat(400),
  'ü'.repeat(300), // 600 bytes of UTF-8
  '😀'.repeat(120), // 480 bytes, characters of 4 bytes that must not be cut in half
  '\uD800lone surrogate',
  '%2e%2e%2f',
  '\u202Efdp.exe', // right-to-left override
];

function expectSafe(rel: string, segments: number) {
  const parts = rel.split('/');
  expect(parts).toHaveLength(segments);
  for (const part of parts) {
    expect(part).not.toMatch(/^\.{1,2}$/);
    expect(part).not.toBe('');
    expect(part).not.toMatch(/[\u0000-\u001f\u007f\\<>:"|?*]/);
    expect(part).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)(\..*)?$/i);
    expect(part).not.toMatch(/[ .]$/);
    expect(Buffer.byteLength(part)).toBeLessThanOrEqual(255);
    expect(part).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/);
  }
}

describe('hostile field values', () => {
  it.each(HOSTILE.map((v) => [JSON.stringify(v).slice(0, 40), v]))(
    '%s stays one safe name part inside the root, and can be written there',
    async (_label, hostile) => {
      const root = await tempRoot();
      const rel = renderName(PATTERN, values({ Supplier: hostile, 'Invoice number': hostile }));
      expectSafe(rel, 5);
      const target = await freeTarget(root, rel);
      const fromRoot = relative(root, target);
      expect(fromRoot.startsWith('..') || isAbsolute(fromRoot)).toBe(false);
      expect(fromRoot.split(sep)).toHaveLength(5);
      // The file system takes the name (an overlong or invalid one would throw here).
      await moveInto(await source(root), root, rel);
      expect(await readFile(target, 'utf8')).toBe('original');
    },
  );

  it('a value of dots only is missing, so the extension keeps its dot', () => {
    expect(renderName(PATTERN, values({ Supplier: '..', 'Invoice number': '...' }))).toBe(
      '2026/01/05/unknown/unknown.PDF',
    );
  });

  it('an overlong value is cut to fit, the extension kept', () => {
    const rel = renderName(PATTERN, values({ Supplier: 'S', 'Invoice number': 'ü'.repeat(300) }));
    const last = rel.split('/').at(-1)!;
    expect(last.endsWith('.PDF')).toBe(true);
    expect(Buffer.byteLength(last)).toBeLessThanOrEqual(200);
  });
});

describe('collisions', () => {
  it('two documents with the same data never overwrite each other: "a.pdf", "a (2).pdf", ...', async () => {
    const root = await tempRoot();
    const rel = renderName(PATTERN, values({ Supplier: 'ACME', 'Invoice number': 'R-1' }));
    const first = await moveInto(await source(root, 'first'), root, rel);
    const second = await moveInto(await source(root, 'second'), root, rel);
    const third = await moveInto(await source(root, 'third'), root, rel);
    expect([first, second, third].map((p) => relative(root, p))).toEqual([
      join('2026', '01', '05', 'ACME', 'R-1.PDF'),
      join('2026', '01', '05', 'ACME', 'R-1 (2).PDF'),
      join('2026', '01', '05', 'ACME', 'R-1 (3).PDF'),
    ]);
    expect(await readFile(first, 'utf8')).toBe('first');
    expect(await readFile(second, 'utf8')).toBe('second');
  });

  it('a move a crash cut short (linked, the source not yet removed) is finished, not made again under "a (2)"', async () => {
    const root = await tempRoot();
    const other = await moveInto(await source(root, 'other'), root, 'a.pdf'); // a.pdf: another file
    const original = await source(root, 'mine');
    await link(original, join(root, 'a (2).pdf')); // what the crashed move left
    const moved = await moveInto(original, root, 'a.pdf');
    expect(relative(root, moved)).toBe('a (2).pdf');
    expect(await readFile(moved, 'utf8')).toBe('mine');
    expect(await readFile(other, 'utf8')).toBe('other');
    expect((await readdir(root)).sort()).toEqual(['a (2).pdf', 'a.pdf']); // the source is gone
  });

  it('a folder a move made once is made again when it was removed since; a missing source fails once, no loop', async () => {
    const root = await tempRoot();
    const first = await moveInto(await source(root, 'one'), root, 'sub/a.pdf');
    await rm(join(root, 'sub'), { recursive: true });
    const second = await moveInto(await source(root, 'two'), root, 'sub/a.pdf');
    expect(second).toBe(first);
    expect(await readFile(second, 'utf8')).toBe('two');
    await expect(moveInto(join(root, 'no-such-file'), root, 'sub/b.pdf')).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

let sources = 0;
async function source(root: string, content = 'original') {
  const path = join(root, `source-${++sources}`);
  await writeFile(path, content);
  return path;
}
