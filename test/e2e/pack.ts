/**
 * The packages packed the way README.md, docs/n8n.md, docs/cli.md and docs/daemon.md say: a plain
 * `npm pack` at the root (n8n-nodes-docex), in cli/ (docex) and in daemon/ (docex-sync), in a clean copy of the repo that holds no
 * build output, so only the packages' own `prepack` can build what ships.
 *
 * The copy holds the files git tracks or would track (committed or not, minus .gitignore'd ones:
 * no dist/, no daemon/dist/, no tarballs). Its node_modules is a hard-linked copy of the repo's,
 * installed from the same package-lock.json: a real fresh clone installs the same tree with
 * `npm ci --ignore-scripts` first (scripts/run.sh does it), which costs minutes, this a few seconds.
 *
 * npm runs with a user config that sets ignore-scripts=true, as many operators' ~/.npmrc does: the
 * repo's own .npmrc must still let `prepack` run.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const repo = join(import.meta.dirname, '../..');

export type PackageName = 'n8n-nodes-docex' | 'docex' | 'docex-sync';
const packageDirs: Record<PackageName, string> = {
  'n8n-nodes-docex': '.',
  docex: 'cli',
  'docex-sync': 'daemon',
};

export interface Packed {
  /** Scratch folder holding the copy, the tarballs and anything a test adds; remove() deletes it. */
  dir: string;
  /** Path of each package's tarball. */
  tarballs: Partial<Record<PackageName, string>>;
  /** Paths inside a tarball (without the leading `package/`). */
  list(tarball: string): string[];
  /** An environment for npm: no npm_config_* inherited from an outer `npm run` (but the machine's global config), the strict user config. */
  npmEnv: NodeJS.ProcessEnv;
  remove(): void;
}

/**
 * The dot-entries of node_modules the copy needs: npm's bins and lock, and the stamp of the lock
 * scripts/env.sh wrote (without it, each package's prepack would `npm ci` in the copy: minutes).
 */
const LINKED_DOT_ENTRIES = ['.bin', '.package-lock.json', '.docex-lock-hash'];

/**
 * Hard-links the repository's installed modules into the clone (what `npm pack` runs against),
 * leaving out the caches tools write in node_modules while the suite runs (vitest's, vite's): a
 * file made or removed there while `cp` walks the tree would fail the copy.
 */
function linkInstalledModules(from: string, to: string) {
  mkdirSync(to);
  const entries = readdirSync(from).filter(
    (entry) => !entry.startsWith('.') || LINKED_DOT_ENTRIES.includes(entry),
  );
  // One cp for all of them: a cp per package (~570) cost ~10 s of CPU, one ~2 s.
  execFileSync('cp', ['-al', ...entries.map((entry) => join(from, entry)), to]);
}

export function packAsDocumented(
  packages: PackageName[] = ['n8n-nodes-docex', 'docex', 'docex-sync'],
): Packed {
  const dir = mkdtempSync(join(tmpdir(), 'docex-pack-'));
  const clone = join(dir, 'clone');
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repo,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    mkdirSync(dirname(join(clone, file)), { recursive: true });
    try {
      cpSync(join(repo, file), join(clone, file));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // deleted, not yet committed
    }
  }
  linkInstalledModules(join(repo, 'node_modules'), join(clone, 'node_modules'));

  writeFileSync(join(dir, 'user.npmrc'), 'ignore-scripts=true\n');
  const { npmEnv } = packedIn(dir, {});
  const out = join(dir, 'tarballs');
  mkdirSync(out);
  const pack = (cwd: string) => {
    const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], {
      cwd,
      env: npmEnv,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
      .trim()
      .split('\n')
      .at(-1)!;
    return join(out, name);
  };
  const tarballs = Object.fromEntries(packages.map((p) => [p, pack(join(clone, packageDirs[p]))]));
  if (readdirSync(out).length !== packages.length)
    throw new Error(`expected ${packages.length} tarball(s) in ${out}`);
  return packedIn(dir, tarballs);
}

/**
 * The Packed of a folder packAsDocumented made (here, or in another process: the e2e global set-up
 * packs once per run, test/e2e/shared.ts).
 */
export function packedIn(dir: string, tarballs: Partial<Record<PackageName, string>>): Packed {
  const npmEnv: NodeJS.ProcessEnv = {
    // The machine's global config (npm_config_globalconfig) stays: under the Node 24 of the cache
    // npm would not find it by itself.
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !/^npm_config_/i.test(k) || /^npm_config_globalconfig$/i.test(k),
      ),
    ),
    npm_config_userconfig: join(dir, 'user.npmrc'),
  };
  return {
    dir,
    tarballs,
    npmEnv,
    list: (tarball) =>
      execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((p) => p.replace(/^package\//, '')),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

// `node test/e2e/pack.ts`: packs the three packages and prints the folder and tarballs as JSON (the e2e
// global set-up runs it in a child process, so that its event loop is never blocked by a pack).
if (import.meta.main) {
  const packed = packAsDocumented();
  process.stdout.write(`${JSON.stringify({ dir: packed.dir, tarballs: packed.tarballs })}\n`);
}
