/**
 * `npm run lint:n8n` (and the second half of `npm run lint`): n8n's own `n8n-node lint`
 * (@n8n/node-cli, pinned in devDependencies) in strict mode, with n8n's default eslint.config.mjs
 * unchanged, over the sources of the n8n package, n8n-nodes-docex.
 *
 * `n8n-node lint` lints the folder it runs in (`eslint .`) and, in strict mode (`"n8n": { "strict": true }`),
 * refuses any eslint.config.mjs but its template's. At this repo's root it would lint the daemon,
 * the emulator and the tests with node rules, so it runs in a package view (docs/decisions.md,
 * "n8n-node lint runs in a package view"): a scratch folder holding what a package made by
 * `n8n-node new` holds, taken from the repo as it is:
 *
 *   package.json        the root package.json (the n8n package's manifest), byte for byte
 *   eslint.config.mjs   @n8n/node-cli's template file, byte for byte
 *   nodes/, credentials/ the package's sources (every file; esbuild bundles them with the pure
 *                       core of @docex/shared, a bundled dependency like zod, not linted here)
 *   node_modules        a link to the repo's, so `@docex/shared` and `n8n-workflow` resolve
 *
 * Usage: `node scripts/n8n-node-lint.ts [source root]` (default: this repo); exits with n8n-node's code.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const repo = join(import.meta.dirname, '..');
const nodeModules = join(repo, 'node_modules');
/** n8n's default config, the one strict mode compares eslint.config.mjs with. */
export const N8N_DEFAULT_ESLINT_CONFIG = join(
  nodeModules,
  '@n8n/node-cli/dist/template/templates/shared/default/eslint.config.mjs',
);
/** What the view holds of a source root: the n8n package's manifest and sources. */
export const PACKAGE_SOURCES = ['package.json', 'nodes', 'credentials'];

export interface N8nNodeLintResult {
  /** n8n-node's exit code: 0 when strict mode and every rule pass. */
  code: number;
  /** What it printed (stdout and stderr), colours removed. */
  output: string;
}

/** Runs `n8n-node lint` over the n8n package of `sourceRoot` (a checkout of this repo, or a copy of its package sources). */
export async function n8nNodeLint(sourceRoot: string = repo): Promise<N8nNodeLintResult> {
  const view = mkdtempSync(join(tmpdir(), 'docex-n8n-lint-'));
  try {
    for (const entry of PACKAGE_SOURCES)
      cpSync(join(sourceRoot, entry), join(view, entry), { recursive: true });
    copyFileSync(N8N_DEFAULT_ESLINT_CONFIG, join(view, 'eslint.config.mjs'));
    symlinkSync(nodeModules, join(view, 'node_modules'));
    // eslint-plugin-n8n-nodes-base reads NODE_ENV when it loads: under "test" (vitest sets it) every
    // file counts as "Test.node.ts" and its file-name rules report nonsense.
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${join(nodeModules, '.bin')}:${process.env.PATH ?? ''}`,
    };
    delete env.NODE_ENV;
    const child = spawn(join(nodeModules, '.bin', 'n8n-node'), ['lint'], {
      cwd: view,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => chunks.push(c));
    const code = await new Promise<number>((done, fail) => {
      child.on('error', fail);
      child.on('close', (exitCode, signal) => done(exitCode ?? (signal ? 128 : 1)));
    });
    // n8n-node forces colours on its eslint (FORCE_COLOR=1); the view's path means nothing afterwards.
    const output = Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\x1b\[[0-9;]*m/g, '')
      .split(view)
      .join('<package>');
    return { code, output };
  } finally {
    rmSync(view, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { code, output } = await n8nNodeLint(process.argv[2] ? resolve(process.argv[2]) : repo);
  process.stdout.write(output);
  if (code !== 0) console.error(`n8n-node lint: failed (exit code ${code})`);
  process.exitCode = code;
}
