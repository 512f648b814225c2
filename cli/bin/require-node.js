// Checked by each installed command before anything else is loaded: on an older Node,
// better-sqlite3's prebuilt addon can crash the process (a segmentation fault) instead of failing,
// and newer syntax fails with a message that does not say why. The message also says how to get
// docex-sync without a newer Node (the Debian package, the release archive: Node inside). Written
// in syntax every Node with ES modules still parses.
var FLOOR = 22;

export function requireNode(command) {
  var major = Number(process.versions.node.split('.')[0]);
  if (major >= FLOOR) return;
  process.stderr.write(
    command +
      ' needs Node.js ' +
      FLOOR +
      ' or newer, but this is Node.js ' +
      process.versions.node +
      ' (' +
      process.execPath +
      '); install Node.js ' +
      FLOOR +
      '+ and run it again.\n' +
      // Debian 12 and Ubuntu 24.04 ship Node.js 20: the installs that bring their own Node.
      'Or install ' +
      command +
      ' with a Node.js of its own, whatever this machine has: the Debian package, or the release archive' +
      ' for Linux, macOS or Windows (https://github.com/docex/docex/blob/main/docs/daemon.md#install).\n',
  );
  process.exit(2);
}
