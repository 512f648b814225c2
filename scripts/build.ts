/**
 * Builds the shipped artifacts with esbuild: `node scripts/build.ts [target ...]` (no target: all).
 *   n8n     CommonJS bundles for n8n (zod bundled in, n8n-workflow external), see docs/architecture.md
 *   docex   cli/dist/docex.js (the docex package), one ESM bundle, its dependencies inside but yaml;
 *           cli/dist/answers.js, what its bin prints for --version and the main help
 *   daemon  daemon/dist/cli.js (docex-sync), a small ESM entry, and daemon/dist/chunks/, the code it
 *           imports on demand (split by esbuild), their dependencies inside but the three of
 *           DAEMON_EXTERNAL; daemon/dist/answers.js, the same for docex-sync. Its `docex` is the
 *           docex package (a dependency: build both for a release)
 */
import { build, type BuildOptions, type Plugin } from 'esbuild';
import { createRequire, isBuiltin } from 'node:module';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { deferIntl } from './defer-intl.ts';
import { eagerModuleWrappers } from './eager-modules.ts';

/**
 * What docex-sync's bundle leaves to node_modules: better-sqlite3 (a native addon, found next to
 * its package), and yaml and node-cron, which cli-kit/src/lazy.ts requires on first use (through
 * createRequire, which esbuild does not follow) so that commands that need neither never load them.
 * Everything else (got, p-queue, zod, pino, chokidar, ... and the workspace's @docex/shared) is in
 * the bundle's chunks: a few files to read and compile per command instead of hundreds of modules
 * to resolve.
 */
const DAEMON_EXTERNAL = ['better-sqlite3', 'yaml', 'node-cron'];
/** docex's: yaml only (cli-kit/src/lazy.ts); it opens no database and checks no cron expression. */
const DOCEX_EXTERNAL = ['yaml'];

/**
 * Node's built-ins and the packages left outside as lazy modules: esbuild hoists an ES module's
 * `import ... from 'node:zlib'` (or 'better-sqlite3') to the top of an ES module bundle, so every
 * one that any bundled module imports would be loaded at start (zlib, http2, undici behind
 * stream/web, SQLite's addon, ...), even for `--version`. Imported through a one-line CommonJS
 * module instead, it is required when the module that imports it first runs.
 */
/**
 * Built-ins that are costly to load (http2 takes longer than all the rest of the client's built-ins
 * together, dns initialises its resolver binding) where a bundled package imports one at the top of
 * its modules but uses it only for some calls (got's http2, for HTTP/2, which the transport never
 * asks for; imapflow's and nodemailer's dns, for a host name to resolve): the module that imports
 * one gets an object of getters, one per export (names taken from the built-in at build time), which
 * requires the built-in when the first is read. The exports named beside it are copied in at build
 * time instead: http2's `constants` (protocol numbers and header names of RFC 9113, the same in
 * every Node), which got destructures when its module is evaluated. Only built-ins whose exports
 * the bundled code reads, never assigns (zlib stays eager: got tests for a zstd decoder at import).
 */
const LAZY_PROPERTIES = new Map<string, string[]>([
  ['http2', ['constants']],
  ['dns', []],
]);

const lazyProperties = (path: string, copied: string[]) => {
  const builtin = createRequire(import.meta.url)(path) as Record<string, unknown>;
  const props = Object.getOwnPropertyNames(builtin).map((n) =>
    copied.includes(n)
      ? `${JSON.stringify(n)}: { value: ${JSON.stringify(builtin[n])}, enumerable: true }`
      : `${JSON.stringify(n)}: { get: function () { return load()[${JSON.stringify(n)}]; }, enumerable: true }`,
  );
  return `var m; function load() { return m || (m = require(${JSON.stringify(path)})); }
module.exports = Object.defineProperties({}, { ${props.join(',\n')} });`;
};

const lazyImports = (external: string[]): Plugin => ({
  name: 'lazy-imports',
  setup(build) {
    build.onResolve({ filter: /^[a-z0-9_:/-]+$/ }, (args) =>
      args.kind === 'import-statement' &&
      args.path !== 'node:module' &&
      (isBuiltin(args.path) || external.includes(args.path))
        ? { path: args.path, namespace: 'lazy-import' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-import' }, (args) => ({
      contents: LAZY_PROPERTIES.has(args.path.replace(/^node:/, ''))
        ? lazyProperties(args.path, LAZY_PROPERTIES.get(args.path.replace(/^node:/, ''))!)
        : `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
});

const targets: Record<string, () => Promise<void>> = {
  async n8n() {
    await rm('dist', { recursive: true, force: true });
    const entries = [
      'nodes/Docex/Docex.node.ts',
      'nodes/DocexTrigger/DocexTrigger.node.ts',
      'credentials/DocexApi.credentials.ts',
    ].filter((e) => existsSync(e));
    await build({
      entryPoints: entries,
      outdir: 'dist',
      outbase: '.',
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'cjs',
      external: ['n8n-workflow'],
      // zod's JSON-schema generator (bundled, never called) holds the bundle's only console call,
      // which n8n's scanner refuses (no-console); see docs/n8n.md "Packaging".
      drop: ['console'],
      logLevel: 'warning',
    });
    for (const dir of ['nodes/Docex', 'nodes/DocexTrigger', 'credentials']) {
      // Icons, and the codex files (<Name>.node.json) n8n reads next to each node's bundle.
      for (const icon of (await readdir(dir)).filter((f) => f.endsWith('.svg') || f.endsWith('.node.json')))
        await cp(`${dir}/${icon}`, `dist/${dir}/${icon}`);
    }
    await writeFile('dist/package.json', '{ "type": "commonjs" }\n');
  },
  async docex() {
    const { mainHelp } = await import('../cli/src/operation-rows.ts');
    await rm('cli/dist', { recursive: true, force: true });
    await mkdir('cli/dist', { recursive: true });
    await writeAnswers('cli/dist/answers.js', 'cli/package.json', 'docex', mainHelp());
    // One file (0.8 MB). Split, a chunk evaluates every module in it as soon as it is loaded, where
    // one file's lazy module wrappers run only the modules a command reaches: the split build made
    // `docex folders list` cost ~30 ms more CPU (for 8 ms less on --version).
    await build({
      ...esmBundle('cli/dist', DOCEX_EXTERNAL),
      entryPoints: { docex: 'cli/src/docex.ts' },
      // `docex --help` prints this without loading the operation table (cli/src/docex.ts).
      define: { DOCEX_MAIN_HELP: JSON.stringify(mainHelp()) },
    });
    // Its module wrappers compiled with the file, so that the compile cache keeps them.
    const eager = eagerModuleWrappers(await readFile('cli/dist/docex.js', 'utf8'));
    if (eager.wrapped === 0)
      throw new Error('cli/dist/docex.js: no module wrapper found (scripts/eager-modules.ts)');
    await writeFile('cli/dist/docex.js', eager.code);
  },
  async daemon() {
    // Chunk names carry a content hash: a fresh folder, or the package would ship stale chunks.
    await rm('daemon/dist', { recursive: true, force: true });
    await mkdir('daemon/dist', { recursive: true });
    // docex-sync: split. The entry holds only what --version, --help and the choice of a command
    // need; every dynamic import() of the sources (a command's file, the client, the store, the
    // mail intake, ...) is a chunk, and code several of them share a shared chunk, so
    // `docex-sync --version` reads 18 KB instead of 3.5 MB (docs/cli.md, "Start-up").
    await build({
      ...esmBundle('daemon/dist', DAEMON_EXTERNAL),
      entryPoints: { cli: 'daemon/src/commands/docex-sync.ts' },
      splitting: true,
      chunkNames: 'chunks/[name]-[hash]',
    });
    const { mainHelp } = await import('../daemon/src/commands/docex-sync.ts');
    await writeAnswers('daemon/dist/answers.js', 'daemon/package.json', 'docex-sync', mainHelp());
  },
};

/** The options both programs' ES module bundles share; `external`: what is left to node_modules. */
const esmBundle = (outdir: string, external: string[]): BuildOptions => ({
  outdir,
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'esm',
  external,
  plugins: [lazyImports(external), deferIntl],
  minifyWhitespace: true,
  minifySyntax: true,
  // CommonJS packages in an ES module bundle call require() for Node's built-ins (in every
  // output file: esbuild puts the banner on each chunk too).
  banner: {
    js: "import { createRequire as __docexCreateRequire } from 'node:module'; const require = __docexCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
});

/**
 * What an installed command prints for --version and the main help without importing its bundle
 * (cli/bin/answers.js): the same words and texts as the bundle, from the same sources.
 */
async function writeAnswers(file: string, manifest: string, command: string, help: string) {
  const { HELP_WORDS, VERSION_WORDS } = await import('../cli-kit/src/flags.ts');
  const { version } = JSON.parse(await readFile(manifest, 'utf8')) as { version: string };
  await writeFile(
    file,
    [
      `// Written by scripts/build.ts from ${manifest}, cli-kit/src/flags.ts and the help of ${command}.`,
      `export var VERSION = ${JSON.stringify(version)};`,
      `export var VERSION_WORDS = ${JSON.stringify(VERSION_WORDS)};`,
      `export var HELP_WORDS = ${JSON.stringify(HELP_WORDS)};`,
      `export var HELP = ${JSON.stringify({ [command]: help.endsWith('\n') ? help : `${help}\n` })};`,
      '',
    ].join('\n'),
  );
}

const wanted = process.argv.slice(2);
for (const name of wanted.length ? wanted : Object.keys(targets)) {
  const target = targets[name];
  if (!target) {
    console.error(`build: unknown target "${name}" (known: ${Object.keys(targets).join(', ')})`);
    process.exit(2);
  }
  await target();
  console.log(`built ${name}`);
}
