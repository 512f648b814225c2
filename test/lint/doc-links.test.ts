/**
 * Every relative link and #anchor in the repository's Markdown files (README, docs/, examples/,
 * daemon/README.md, the changelogs) leads somewhere: the file exists, and the heading an anchor
 * names is in it, slugged as GitHub does. A renamed folder or heading breaks a link here, not in
 * front of a reader.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const repo = resolve(import.meta.dirname, '../..');

/** The Markdown files git tracks. */
const markdownFiles = () =>
  execFileSync('git', ['ls-files', '*.md'], { cwd: repo, encoding: 'utf8' })
    .split('\n')
    .filter((f) => f !== '' && !f.includes('node_modules/'));

/** The text outside fenced code blocks and inline code, where a link or heading can be. */
function prose(text: string): string[] {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      lines.push('');
      continue;
    }
    lines.push(fence === undefined ? line : '');
  }
  return lines;
}

/**
 * GitHub's anchor for a heading (github-slugger): the rendered text, lower case, without
 * punctuation but hyphens and underscores, each space a hyphen.
 */
export function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // HTML tags
    .replace(/`([^`]*)`/g, '$1') // inline code: its text
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file: its headings' slugs (repeats numbered as GitHub does) and explicit ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const id of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

/** Every link target of a Markdown file with its line: inline links and reference definitions. */
function linksOf(text: string): Array<{ line: number; target: string }> {
  const links: Array<{ line: number; target: string }> = [];
  prose(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      links.push({ line: i + 1, target: m[1]! });
    const definition = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(line);
    if (definition) links.push({ line: i + 1, target: definition[1]! });
  });
  return links;
}

/** What is wrong with each relative link of `file` (repository-relative), one line each. */
export function brokenLinks(file: string): string[] {
  const text = readFileSync(join(repo, file), 'utf8');
  const problems: string[] = [];
  for (const { line, target } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, ...
    const [pathPart = '', anchor] = target.split('#', 2);
    const path = decodeURIComponent(pathPart);
    const absolute = path === '' ? join(repo, file) : resolve(repo, dirname(file), path);
    const where = `${file}:${line} ${target}`;
    if (!absolute.startsWith(repo) || !existsSync(absolute)) {
      problems.push(`${where}: ${relative(repo, absolute)} does not exist`);
      continue;
    }
    if (anchor === undefined || !absolute.endsWith('.md') || statSync(absolute).isDirectory()) continue;
    if (!anchorsOf(readFileSync(absolute, 'utf8')).has(anchor))
      problems.push(`${where}: no heading with the anchor #${anchor} in ${relative(repo, absolute)}`);
  }
  return problems;
}

describe('links in the Markdown files', () => {
  it('slugs headings as GitHub does', () => {
    expect(githubSlug('Running at scale (queue mode)')).toBe('running-at-scale-queue-mode');
    expect(githubSlug('`status --json`')).toBe('status---json');
    expect(githubSlug('docex-sync: health, key check, empty files, answer size (issue #26)')).toBe(
      'docex-sync-health-key-check-empty-files-answer-size-issue-26',
    );
    expect(githubSlug('Retries: which requests are repeated, and why an upload cannot be sent twice')).toBe(
      'retries-which-requests-are-repeated-and-why-an-upload-cannot-be-sent-twice',
    );
    expect(githubSlug('api_key_file and [the key](x.md)')).toBe('api_key_file-and-the-key');
    expect([...anchorsOf('# A\n## A\n```\n# not a heading\n```\n## A')]).toEqual(['a', 'a-1', 'a-2']);
  });

  it('every relative link and #anchor of every Markdown file resolves', () => {
    const files = markdownFiles();
    expect(files).toEqual(expect.arrayContaining(['README.md', 'docs/cli.md', 'daemon/README.md']));
    expect(files.flatMap(brokenLinks)).toEqual([]);
  });
});
