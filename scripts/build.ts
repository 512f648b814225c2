/**
 * Builds the shipped artifacts with esbuild: `node scripts/build.ts [target ...]` (no target: all).
 *   n8n     CommonJS bundles for n8n (zod bundled in, n8n-workflow external), see docs/architecture.md
 *   daemon  daemon/dist/cli.js (docex-sync) and daemon/dist/docex.js (docex), ESM bundles whose npm
 *           dependencies stay external and the workspace's @docex/shared is bundled in
 */
import { build, type Plugin } from 'esbuild';
import { cp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';

/**
 * Like esbuild's `packages: 'external'`, except for @docex/shared: a private workspace package that
 * is never published, so docex-sync carries it inside its bundles instead of depending on it.
 */
const externalExceptShared: Plugin = {
  name: 'external-except-shared',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) =>
      args.kind === 'entry-point' || /^@docex\/shared(\/|$)/.test(args.path)
        ? undefined
        : { path: args.path, external: true },
    );
  },
};

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
  async daemon() {
    await mkdir('daemon/dist', { recursive: true });
    await build({
      // docex-sync and docex, the two binaries of the package; shared code is bundled into each.
      entryPoints: { cli: 'daemon/src/commands/docex-sync.ts', docex: 'daemon/src/docex-cli/docex.ts' },
      outdir: 'daemon/dist',
      bundle: true,
      platform: 'node',
      target: 'node22',
      format: 'esm',
      plugins: [externalExceptShared],
      logLevel: 'warning',
    });
  },
};

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
