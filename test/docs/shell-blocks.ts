/**
 * The shell blocks of the guides and how each is marked (issue #40, "Docs that run").
 *
 * A shell block (a fence whose info string is sh, shell, bash, zsh or console) is marked by an
 * HTML comment on the line right before its fence; GitHub does not render it:
 *
 *   <!-- docs-test: runs -->                         test/docs/runnable.test.ts runs it against the emulator
 *   <!-- docs-test: example (why it cannot run) -->  shown only, with the reason
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const REPO = resolve(import.meta.dirname, '../..');

/** The guides: every Markdown page a user reads (the changelogs hold no commands). */
export function guideFiles(): string[] {
  const inDir = (dir: string) =>
    readdirSync(join(REPO, dir))
      .filter((name) => name.endsWith('.md'))
      .sort()
      .map((name) => (dir === '.' ? name : `${dir}/${name}`));
  return ['README.md', ...inDir('docs'), ...inDir('docs/reference'), 'cli/README.md', 'daemon/README.md'];
}

export type Marker = { kind: 'runs' } | { kind: 'example'; reason: string };

export interface ShellBlock {
  /** Repo-relative path of the page. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  info: string;
  /** The block's text, without the fences. */
  code: string;
  /** null: not marked; 'malformed': a docs-test comment that says neither runs nor example (why). */
  marker: Marker | null | 'malformed';
}

export const SHELL_INFO = /^(sh|shell|bash|zsh|console)$/;
const MARKER_LINE = /^<!--\s*docs-test:(.*)-->\s*$/;

function parseMarker(line: string | undefined): Marker | null | 'malformed' {
  const match = line === undefined ? null : MARKER_LINE.exec(line.trim());
  if (!match) return null;
  const body = match[1]!.trim();
  if (body === 'runs') return { kind: 'runs' };
  const example = /^example \((.*\S.*)\)$/.exec(body);
  return example ? { kind: 'example', reason: example[1]!.trim() } : 'malformed';
}

/** Every fenced block of a Markdown text whose info string is a shell, with its marker. */
export function shellBlocksOf(file: string, text: string): ShellBlock[] {
  const lines = text.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[2]!;
    let end = i + 1;
    while (end < lines.length && !lines[end]!.trim().startsWith(fence)) end++;
    const info = open[3]!;
    if (SHELL_INFO.test(info)) {
      blocks.push({
        file,
        line: i + 1,
        info,
        code: lines.slice(i + 1, end).join('\n'),
        marker: parseMarker(lines[i - 1]),
      });
    }
    i = end;
  }
  return blocks;
}

/** docs-test comments that are not right before a shell fence (a marker that lost its block). */
export function strayMarkers(file: string, text: string): number[] {
  const lines = text.split('\n');
  const stray: number[] = [];
  lines.forEach((line, i) => {
    if (!MARKER_LINE.test(line.trim())) return;
    const next = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i + 1] ?? '');
    if (!next || !SHELL_INFO.test(next[2]!)) stray.push(i + 1);
  });
  return stray;
}

export function shellBlocks(file: string): ShellBlock[] {
  return shellBlocksOf(file, readFileSync(join(REPO, file), 'utf8'));
}

/** Where a block is, as a person finds it: `docs/cli.md:63`. */
export const where = (block: ShellBlock) => `${block.file}:${block.line}`;
