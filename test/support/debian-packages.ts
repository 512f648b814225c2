/**
 * Global set-up of the system project: installs the Debian packages its real servers come from
 * (dovecot, tinyproxy, openssl, unshare) before any test file runs, when they are missing.
 *
 * Each helper still checks on its own, but on a fresh machine an install takes minutes (apt-get
 * waits for another file's dpkg lock, downloads, unpacks), and a test file's hooks have a time limit
 * (hookTimeout, 30 s) meant for starting a server, not for installing one: the first hogged run on
 * a fresh machine failed exactly so (server-kinds.test.ts, "Hook timed out in 30000ms" in
 * startDovecot). Here the install has no limit but apt-get's own, and the hooks only start servers.
 * On a machine that has them, this is four look-ups.
 */
import { ensureDovecotPackage } from './dovecot.ts';
import { ensureNetworkPackages } from './network.ts';

export default function installDebianPackages() {
  ensureNetworkPackages();
  ensureDovecotPackage();
}
