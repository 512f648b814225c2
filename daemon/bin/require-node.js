// Checked by each installed command before anything else is loaded: on an older Node,
// better-sqlite3's prebuilt addon can crash the process (a segmentation fault) instead of failing,
// and newer syntax fails with a message that does not say why. Written in syntax every Node with
// ES modules still parses.
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
      '+ and run it again.\n',
  );
  process.exit(2);
}
