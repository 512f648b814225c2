/**
 * A step after esbuild for docex's one-file bundle: esbuild wraps each bundled module in a method,
 * `__esm({ "path"() { ... } })` (or `__commonJS`), run when the module is first needed. V8 compiles
 * a method only when it is first called, and Node's compile cache (bin/compile-cache.js) keeps only
 * what was compiled with the file: so every start compiled again the wrappers its command runs
 * (got's, zod's, the operation table's), ~20 ms of `docex folders list` (docs/cli.md, "Start-up").
 * Written as a parenthesised function expression, `"path": (function () { ... })`, a wrapper is
 * compiled with the file (V8's heuristic for functions called right away), so it is in the cache
 * and later starts only read it. Still run only when first needed: the order of evaluation is
 * esbuild's. The cost: the cache of the file is about twice as large (0.27 to 0.56 MB), ~2 ms more
 * for `docex --help`, and a start without the cache compiles every wrapper.
 *
 * Parsed with TypeScript's parser (a dependency already), not matched with a pattern: a module's
 * code holds braces in strings and regular expressions.
 */
import ts from 'typescript';

const WRAPPERS = new Set(['__esm', '__commonJS']);

/** The bundle's code with every module wrapper a parenthesised function expression; and how many. */
export function eagerModuleWrappers(code: string): { code: string; wrapped: number } {
  const file = ts.createSourceFile('bundle.js', code, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const edits: Array<{ at: number; text: string }> = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      WRAPPERS.has(node.expression.text) &&
      node.arguments[0] &&
      ts.isObjectLiteralExpression(node.arguments[0])
    ) {
      for (const property of node.arguments[0].properties) {
        // A plain method only: an async or generator one (top-level await) stays as it is.
        if (!ts.isMethodDeclaration(property) || property.modifiers?.length || property.asteriskToken)
          continue;
        edits.push({ at: property.name.getEnd(), text: ':(function' }, { at: property.getEnd(), text: ')' });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  let out = code;
  for (const edit of edits.sort((a, b) => b.at - a.at))
    out = out.slice(0, edit.at) + edit.text + out.slice(edit.at);
  return { code: out, wrapped: edits.length / 2 };
}
