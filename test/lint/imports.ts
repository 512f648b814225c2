/**
 * The repo's import graph, read from the sources as text: static imports and re-exports, type-only
 * ones included (a type-only cycle still ties two modules' designs together). Dynamic `import()` is
 * left out: it is how a module loads another lazily, and it runs no code at evaluation time.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const STATIC = /^\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]/gm;

/** Package names resolved to files of this repo (the workspace package's doors). */
const PACKAGES: Record<string, string> = {
  '@docex/shared': 'shared/src/core/index.ts',
  '@docex/shared/node': 'shared/src/node/index.ts',
};

/** The command kit's modules, one door each: `@docex/cli-kit/args` is cli-kit/src/args.ts. */
const kitFile = (spec: string) =>
  spec.startsWith('@docex/cli-kit/') ? `cli-kit/src/${spec.slice('@docex/cli-kit/'.length)}.ts` : undefined;

/** The files of `root` that git tracks (or, outside a checkout, that `files` names) ending in .ts. */
export function sourceFiles(root: string): string[] {
  return execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
    cwd: root,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((f) => f && !f.endsWith('.d.ts') && existsSync(join(root, f)));
}

/** file -> the repo files it imports (paths relative to root). */
export function importGraph(root: string, files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const targets = new Set<string>();
    for (const m of text.matchAll(STATIC)) {
      const spec = m[1] ?? m[2]!;
      const target = spec.startsWith('.')
        ? relative(root, resolve(root, dirname(file), spec))
        : (PACKAGES[spec] ?? kitFile(spec));
      if (target && target !== file) targets.add(target);
      else if (target === file) targets.add(file);
    }
    graph.set(file, [...targets]);
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
