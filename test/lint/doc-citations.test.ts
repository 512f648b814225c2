/**
 * Code comments send readers to the docs by section: `docs/daemon.md, "Scans"`. Each such citation
 * in the tracked TypeScript names a section its page has, as a heading or as the bold words a
 * paragraph opens with (`**Scans.**`), so a section moved to another page breaks here, not in
 * front of a reader following the comment.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');

/** `docs/x.md, "Section"`, `docs/x.md ("Section"` and `docs/x.md "Section"`. */
const CITATION = /\b(docs\/[\w/-]+\.md),? \(?"([^"\n]+)"/g;

export interface Citation {
  file: string;
  line: number;
  doc: string;
  section: string;
}

export function citationsIn(file: string, text: string): Citation[] {
  return text.split('\n').flatMap((line, i) =>
    [...line.matchAll(CITATION)].map((m) => ({ file, line: i + 1, doc: m[1]!, section: m[2]! })),
  );
}

/** The sections a page has: its headings and its paragraphs' bold lead-ins, without markup. */
export function sectionsOf(markdown: string): string[] {
  const plain = (s: string) => s.replace(/[`*]/g, '').replace(/[.:]$/, '').trim().toLowerCase();
  return [
    ...[...markdown.matchAll(/^#+\s+(.+)$/gm)].map((m) => plain(m[1]!)),
    ...[...markdown.matchAll(/(?:^|\n)\s*(?:[-*]\s+|\d+\.\s+)?\*\*(.+?)\*\*/g)].map((m) => plain(m[1]!)),
  ];
}

/** A citation holds when a section of its page starts with its words (a heading may go on). */
export function holds(citation: Citation, pages: (doc: string) => string | undefined): boolean {
  const page = pages(citation.doc);
  if (page === undefined) return false;
  const wanted = citation.section.replace(/[`*]/g, '').replace(/[.:]$/, '').trim().toLowerCase();
  return sectionsOf(page).some((s) => s.startsWith(wanted));
}

const sources = () =>
  execFileSync('git', ['ls-files', '*.ts'], { cwd: repo, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && f !== 'test/lint/doc-citations.test.ts');

const page = (doc: string) => (existsSync(resolve(repo, doc)) ? readFileSync(resolve(repo, doc), 'utf8') : undefined);

describe('section citations in code comments', () => {
  it('each names a section its page has', () => {
    const broken = sources()
      .flatMap((f) => citationsIn(f, readFileSync(resolve(repo, f), 'utf8')))
      .filter((c) => !holds(c, page))
      .map((c) => `${c.file}:${c.line}: ${c.doc}, "${c.section}"`);
    expect(broken).toEqual([]);
  });

  it('a section that moved, or a page that is gone, is found', () => {
    const docs: Record<string, string> = {
      'docs/a.md': '# A\n\n## Polls and rounds\n\n- **Scans.** The tree is walked.\n',
    };
    const cite = (doc: string, section: string) => holds({ file: 'x.ts', line: 1, doc, section }, (d) => docs[d]);
    expect(cite('docs/a.md', 'Polls')).toBe(true);
    expect(cite('docs/a.md', 'Scans')).toBe(true);
    expect(cite('docs/a.md', 'Memory')).toBe(false);
    expect(cite('docs/gone.md', 'Polls')).toBe(false);
    expect(citationsIn('x.ts', ' * see docs/daemon.md, "Scans" and docs/n8n.md ("Rate limit").')).toEqual([
      { file: 'x.ts', line: 1, doc: 'docs/daemon.md', section: 'Scans' },
      { file: 'x.ts', line: 1, doc: 'docs/n8n.md', section: 'Rate limit' },
    ]);
  });
});
