/**
 * The release (scripts/release.ts) made once for the tests that need it: release.test.ts,
 * debian-package.test.ts and container.test.ts share one build, kept in the system's temp folder
 * under a hash of everything that goes into it, so a run whose sources did not change reuses the
 * previous run's archives and packages. Made with --fast (the least compression): the same files,
 * in the same formats, minutes sooner; `npm run release` compresses best.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repo } from './pack.ts';

const INPUTS = [
  'cli/src',
  'cli/bin',
  'cli/package.json',
  'cli-kit/src',
  'cli-kit/package.json',
  'daemon/src',
  'daemon/bin',
  'daemon/package.json',
  'daemon/README.md',
  'daemon/CHANGELOG.md',
  'shared/src',
  'scripts/build.ts',
  'scripts/eager-modules.ts',
  'scripts/release.ts',
  'scripts/release-layout.ts',
  'examples/docex-sync.yaml',
  'examples/docex-sync.service',
  'package-lock.json',
];

function inputsHash(): string {
  const files = execFileSync(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--', ...INPUTS],
    {
      cwd: repo,
      encoding: 'utf8',
    },
  )
    .split('\0')
    .filter(Boolean)
    .sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(file);
    hash.update(existsSync(join(repo, file)) ? readFileSync(join(repo, file)) : 'deleted');
  }
  hash.update(process.version);
  return hash.digest('hex').slice(0, 16);
}

export interface Release {
  dir: string;
  version: string;
  /** file name -> bytes */
  sizes: Record<string, number>;
  file(name: string): string;
}

let made: Promise<Release> | undefined;

/** The release of the current sources: made now, or the one made from the same inputs before. */
export function releaseOnce(): Promise<Release> {
  made ??= (async () => {
    const dir = join(tmpdir(), `docex-release-${inputsHash()}`);
    const stamp = join(dir, '.complete');
    if (!existsSync(stamp)) {
      const scratch = `${dir}.${process.pid}`;
      await rm(scratch, { recursive: true, force: true });
      const started = Date.now();
      // The project's Node runs the script (it is this process's); the script itself builds the bundles.
      execFileSync(process.execPath, [join(repo, 'scripts/release.ts'), '--fast', '--out', scratch], {
        cwd: repo,
        stdio: ['ignore', 'inherit', 'inherit'],
      });
      console.log(`release: made in ${((Date.now() - started) / 1000).toFixed(0)} s (${scratch})`);
      await writeFile(join(scratch, '.complete'), '');
      await rm(dir, { recursive: true, force: true });
      await rename(scratch, dir);
    }
    const { version } = JSON.parse(await readFile(join(repo, 'daemon/package.json'), 'utf8')) as {
      version: string;
    };
    const sizes: Record<string, number> = {};
    for (const name of await readdir(dir))
      if (!name.startsWith('.') && name !== 'SHA256SUMS')
        sizes[name] = (await import('node:fs')).statSync(join(dir, name)).size;
    return { dir, version, sizes, file: (name: string) => join(dir, name) };
  })();
  return made;
}
