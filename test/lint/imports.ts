/**
 * The repo's import graph, read from the sources as text: static imports and re-exports, type-only
 * ones included (a type-only import still ties two modules' designs together), and dynamic
 * `import('...')` with a literal path (a lazy load is still a dependency: a loop through one is a
 * registry whose rows import the registry back).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const STATIC = /^\s*(import|export)\s([^'"]*?)from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Package names resolved to files of this repo (the workspace package's doors). */
const PACKAGES: Record<string, string> = {
  '@docex/shared': 'shared/src/core/index.ts',
  '@docex/shared/node': 'shared/src/node/index.ts',
};

/** The command kit's modules, one door each: `@docex/cli-kit/args` is cli-kit/src/args.ts. */
const kitFile = (spec: string) =>
  spec.startsWith('@docex/cli-kit/') ? `cli-kit/src/${spec.slice('@docex/cli-kit/'.length)}.ts` : undefined;

/** How a file imports another: its values, only its types, or lazily at run time. */
export type ImportKind = 'value' | 'type' | 'dynamic';

/** One import of a repo file by another, where it is written (1-based line). */
export interface ImportEdge {
  from: string;
  to: string;
  kind: ImportKind;
  line: number;
}

/** The files of `root` that git tracks (or that are new and not ignored) ending in .ts. */
export function sourceFiles(root: string): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f && !f.endsWith('.d.ts') && existsSync(join(root, f)));
}

/** `import type { A }`, `export type { A }`, or `import { type A, type B }`: only types cross. */
function isTypeOnly(clause: string): boolean {
  const trimmed = clause.trim();
  if (/^type\s/.test(trimmed)) return true;
  const names = /^\{([^}]*)\}$/
    .exec(trimmed)?.[1]
    ?.split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return names !== undefined && names.length > 0 && names.every((n) => /^type\s/.test(n));
}

const lineAt = (text: string, index: number) => text.slice(0, index).split('\n').length;

/** Every import between repo files, with its kind and line. */
export function importEdges(root: string, files: string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const target = (spec: string) =>
      spec.startsWith('.')
        ? relative(root, resolve(root, dirname(file), spec))
        : (PACKAGES[spec] ?? kitFile(spec));
    for (const m of text.matchAll(STATIC)) {
      const to = target(m[3] ?? m[4]!);
      const kind = isTypeOnly(m[2] ?? '') ? 'type' : 'value';
      const start = m.index + (m[0].length - m[0].trimStart().length);
      if (to) edges.push({ from: file, to, kind, line: lineAt(text, start) });
    }
    for (const m of text.matchAll(DYNAMIC)) {
      const to = target(m[1]!);
      if (to) edges.push({ from: file, to, kind: 'dynamic', line: lineAt(text, m.index) });
    }
  }
  return edges;
}

/** file -> the repo files it imports (paths relative to root), every kind of import counted. */
export function importGraph(root: string, files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>(files.map((f) => [f, []]));
  for (const edge of importEdges(root, files)) {
    const targets = graph.get(edge.from)!;
    if (!targets.includes(edge.to)) targets.push(edge.to);
  }
  return graph;
}
/** The import cycles: each strongly connected set of two or more files (or a file importing itself). */
export function importCycles(graph: Map<string, string[]>): string[][] {
  // Tarjan's algorithm, iterative (a deep chain must not overflow the stack).
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  for (const start of graph.keys()) {
    if (order.has(start)) continue;
    const work: Array<{ node: string; next: number }> = [{ node: start, next: 0 }];
    order.set(start, index);
    low.set(start, index++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const edges = graph.get(frame.node) ?? [];
      if (frame.next < edges.length) {
        const to = edges[frame.next++]!;
        if (!graph.has(to)) continue;
        if (!order.has(to)) {
          order.set(to, index);
          low.set(to, index++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, next: 0 });
        } else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, order.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === order.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || edges.includes(frame.node)) cycles.push(component.sort());
      }
    }
  }
  return cycles;
}
