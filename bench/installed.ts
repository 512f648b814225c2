/**
 * docex-sync packed as docs/daemon.md says (test/e2e/pack.ts) and installed with npm into a scratch
 * prefix, for the benches that measure what users install; its two commands. Its dependency docex
 * is installed from its own tarball in the same command, as the registry gives it once published
 * (test/e2e/daemon-package.test.ts does the same).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { packAsDocumented } from '../test/e2e/pack.ts';

export function installDocexSync(dir: string): { docex: string; docexSync: string } {
  const packed = packAsDocumented(['docex', 'docex-sync']);
  try {
    const prefix = join(dir, 'prefix');
    execFileSync(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        packed.tarballs.docex!,
        packed.tarballs['docex-sync']!,
      ],
      { cwd: packed.dir, env: packed.npmEnv, stdio: 'ignore' },
    );
    return { docex: join(prefix, 'bin', 'docex'), docexSync: join(prefix, 'bin', 'docex-sync') };
  } finally {
    packed.remove();
  }
}
