/**
 * `npm run lint:package`: checks n8n-nodes-docex the way n8n's community-package scanner
 * (@n8n/scan-community-package 0.32.0, scanner/scanner.mjs) does, without its network legs:
 *
 * 1. `npm pack` (its prepack builds) into a temporary folder, or take a given tarball; unpack;
 * 2. lint the tarball's JavaScript and its package.json with the scanner's own flat config
 *    (buildScanConfig below is a copy of the scanner's), inline eslint-disable comments NOT honoured;
 * 3. lint the sources the scanner lints in the attested source checkout (package.json and
 *    {nodes,credentials}/**\/*.{js,ts,json}) with the same config;
 * 4. lint the node descriptions as n8n sees them: they are generated from the operation table, so the
 *    rules that read description literals cannot see them in the sources; each node's description is
 *    written out as a literal into a scratch copy of the package (nodes/<Name>/<Name>.node.ts) and
 *    linted with the same config;
 * 5. package checks: `dependencies` empty, `n8n-workflow` the only peer dependency, every path of
 *    the `n8n` field present in the tarball, nothing but the n8n bundles, icons and package.json
 *    files inside, and no daemon, emulator or Node-transport code bundled into the JavaScript.
 *
 * Exits non-zero on any finding, warnings included (the scanner itself fails on errors only).
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { ESLint } from 'eslint';
import { defineConfig } from 'eslint/config';
import { n8nCommunityNodesPlugin } from '@n8n/eslint-plugin-community-nodes';
import tsParser from '@typescript-eslint/parser';

// eslint-plugin-n8n-nodes-base reads NODE_ENV when it loads: under "test" (set by vitest) every file
// counts as "Test.node.ts" and the file-name rules report nonsense. The scanner never runs so.
if (process.env.NODE_ENV === 'test') delete process.env.NODE_ENV;
const { default: n8nNodesPlugin } = await import('eslint-plugin-n8n-nodes-base');

const repo = join(import.meta.dirname, '..');
const requireFromRepo = createRequire(join(repo, 'package.json'));

/** scanner.mjs `buildScanConfig` of @n8n/scan-community-package 0.32.0, rule for rule. */
export function buildScanConfig() {
  return defineConfig(
    n8nCommunityNodesPlugin.configs.recommended as never,
    { rules: { 'no-console': 'error' } },
    { plugins: { 'n8n-nodes-base': n8nNodesPlugin } },
    { files: ['package.json'], rules: { ...n8nNodesPlugin.configs.community.rules } },
    {
      files: ['**/credentials/**/*.ts'],
      rules: {
        ...n8nNodesPlugin.configs.credentials.rules,
        'n8n-nodes-base/cred-class-field-documentation-url-miscased': 'off',
        'n8n-nodes-base/cred-class-field-type-options-password-missing': 'off',
      },
    },
    {
      files: ['**/nodes/**/*.ts'],
      rules: {
        ...n8nNodesPlugin.configs.nodes.rules,
        'n8n-nodes-base/node-class-description-inputs-wrong-regular-node': 'off',
        'n8n-nodes-base/node-class-description-outputs-wrong': 'off',
        'n8n-nodes-base/node-param-type-options-max-value-present': 'off',
      },
    },
    { files: ['**/*.json'], languageOptions: { parser: tsParser } },
    { files: ['**/*.ts'], languageOptions: { parser: tsParser } },
  );
}

/** Files under `dir` (relative paths), skipping node_modules. */
function walk(dir: string, keep: (rel: string) => boolean): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)))
    .filter((rel) => !rel.split(/[\\/]/).includes('node_modules') && keep(rel));
}

/** The scanner's analyzePackage: every message is a finding here (the scanner counts errors only). */
async function lint(cwd: string, files: string[], leg: string): Promise<string[]> {
  const eslint = new ESLint({
    cwd,
    allowInlineConfig: false,
    overrideConfigFile: true,
    overrideConfig: buildScanConfig(),
  });
  const results = await eslint.lintFiles(files.map((f) => join(cwd, f)));
  const out: string[] = [];
  for (const r of results)
    for (const m of r.messages)
      out.push(
        `${leg} ${relative(cwd, r.filePath)}:${m.line}:${m.column} ${m.severity === 2 ? 'error' : 'warning'} ${m.ruleId ?? ''} ${m.message}`,
      );
  return out;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A value as TypeScript source, keys unquoted where they can be (the rules match identifier keys). */
function literal(value: unknown, indent = ''): string {
  const inner = `${indent}  `;
  if (Array.isArray(value))
    return value.length === 0
      ? '[]'
      : `[\n${value.map((v) => `${inner}${literal(v, inner)},`).join('\n')}\n${indent}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    if (entries.length === 0) return '{}';
    return `{\n${entries
      .map(([k, v]) => `${inner}${IDENTIFIER.test(k) ? k : JSON.stringify(k)}: ${literal(v, inner)},`)
      .join('\n')}\n${indent}}`;
  }
  return JSON.stringify(value);
}

/** The generated descriptions of the nodes in `packageRoot` (the unpacked tarball), written out as literals and linted. */
async function lintGeneratedDescriptions(packageRoot: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'docex-described-'));
  try {
    writeFileSync(join(dir, 'package.json'), readFileSync(join(repo, 'package.json')));
    // The credential's source, so the rules can tell that docexApi belongs to this package.
    mkdirSync(join(dir, 'credentials'));
    for (const f of readdirSync(join(repo, 'credentials')))
      copyFileSync(join(repo, 'credentials', f), join(dir, 'credentials', f));
    const nodes: Array<[string, string]> = [
      ['Docex', 'dist/nodes/Docex/Docex.node.js'],
      ['DocexTrigger', 'dist/nodes/DocexTrigger/DocexTrigger.node.js'],
    ];
    const files: string[] = [];
    for (const [name, source] of nodes) {
      // The built bundle, as n8n loads it (n8n-workflow's ESM build does not load in plain Node).
      const mod = requireFromRepo(join(packageRoot, source)) as Record<
        string,
        new () => { description: object }
      >;
      const description = literal(new mod[name]!().description, '  ').replace(
        /(inputs|outputs): \[\n\s*"main",\n\s*\]/g,
        '$1: [NodeConnectionTypes.Main]',
      );
      const folder = join(dir, 'nodes', name);
      mkdirSync(folder, { recursive: true });
      for (const icon of readdirSync(join(repo, 'nodes', name)).filter((f) => f.endsWith('.svg')))
        copyFileSync(join(repo, 'nodes', name, icon), join(folder, icon));
      const file = `nodes/${name}/${name}.node.ts`;
      writeFileSync(
        join(dir, file),
        `import { NodeConnectionTypes, type INodeType, type INodeTypeDescription } from 'n8n-workflow';\n\n` +
          `export class ${name} implements INodeType {\n  description: INodeTypeDescription = ${description};\n}\n`,
      );
      files.push(file);
    }
    // DOCEX_KEEP_GENERATED=1 keeps the scratch package to read the findings' lines.
    if (process.env.DOCEX_KEEP_GENERATED) console.log(`generated descriptions kept in ${dir}`);
    return await lint(dir, files, '[generated]');
  } finally {
    if (!process.env.DOCEX_KEEP_GENERATED) rmSync(dir, { recursive: true, force: true });
  }
}

/** Shipped files: the bundles, their icons and codex files, package.json files, nothing else. */
const SHIPPABLE =
  /^(package\.json|README\.md|CHANGELOG\.md|LICENSE(\.md)?|dist\/package\.json|dist\/(nodes|credentials)\/.+\.(js|svg)|dist\/nodes\/\w+\/\w+\.node\.json)$/;
/** esbuild marks each bundled module with a `// path` comment: these are the only allowed sources. */
const BUNDLED_SOURCE = /^\/\/ (nodes\/|credentials\/|shared\/src\/core\/|node_modules\/zod\/)/;

/** Lints `packed` (a tarball), or what a plain `npm pack` of the repo makes (its prepack builds). */
export async function lintPackage(packed?: string): Promise<{ problems: string[]; summary: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'docex-pack-'));
  const problems: string[] = [];
  try {
    if (!packed)
      execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: repo, stdio: 'ignore' });
    const tarball = packed ?? readdirSync(dir).find((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error('npm pack made no tarball');
    const root = join(dir, 'package');
    execFileSync('tar', ['-xzf', packed ?? join(dir, tarball), '-C', dir]);
    // The bundles require n8n-workflow (a peer): found in the repo's node_modules, above the package.
    symlinkSync(join(repo, 'node_modules'), join(dir, 'node_modules'));

    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      n8n?: { nodes?: string[]; credentials?: string[]; strict?: boolean };
    };
    if (Object.keys(pkg.dependencies ?? {}).length > 0)
      problems.push(
        `package.json: dependencies must be empty (${Object.keys(pkg.dependencies!).join(', ')})`,
      );
    const peers = Object.keys(pkg.peerDependencies ?? {});
    if (peers.length !== 1 || peers[0] !== 'n8n-workflow')
      problems.push(
        `package.json: n8n-workflow must be the only peer dependency (got ${peers.join(', ') || 'none'})`,
      );
    if (pkg.n8n?.strict !== true) problems.push('package.json: n8n.strict must be true');
    const n8nPaths = [...(pkg.n8n?.nodes ?? []), ...(pkg.n8n?.credentials ?? [])];
    if (n8nPaths.length === 0) problems.push('package.json: the n8n field lists no nodes or credentials');
    for (const p of n8nPaths) {
      if (!p.startsWith('dist/')) problems.push(`package.json: n8n path outside dist/: ${p}`);
      if (!existsSync(join(root, p))) problems.push(`tarball: n8n path missing: ${p}`);
    }

    const files = walk(root, () => true);
    for (const f of files) if (!SHIPPABLE.test(f)) problems.push(`tarball: not for n8n: ${f}`);
    const js = files.filter((f) => f.endsWith('.js'));
    for (const f of js) {
      const sources = readFileSync(join(root, f), 'utf8')
        .split('\n')
        .filter((line) => /^\/\/ [\w@.-]+\/\S+\.[cm]?[jt]s$/.test(line));
      for (const s of sources)
        if (!BUNDLED_SOURCE.test(s)) problems.push(`tarball: ${f} bundles ${s.slice(3)}`);
    }

    problems.push(...(await lint(root, [...js, 'package.json'], '[tarball]')));
    const sources = walk(repo, (rel) =>
      /^(nodes|credentials)\/.+\.(js|ts|json)$/.test(rel.replace(/\\/g, '/')),
    );
    problems.push(...(await lint(repo, ['package.json', ...sources], '[sources]')));
    problems.push(...(await lintGeneratedDescriptions(root)));
    return {
      problems,
      summary: `${basename(tarball)}: ${files.length} files; linted ${js.length} JavaScript files + package.json of the tarball, ${sources.length} source files + package.json, the generated descriptions of 2 nodes`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { problems, summary } = await lintPackage();
  console.log(summary);
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    console.error(`lint:package: ${problems.length} finding(s)`);
    process.exit(1);
  }
  console.log('package checks passed');
}
