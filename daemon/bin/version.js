// `--version` (and the other spellings: -v, -V, version) answered by the installed commands before
// their bundle is imported: for `docex` that bundle is 0.8 MB to read and deserialise, and
// process.stdout would load Node's stream and net modules, so the answer writes with fs.writeSync.
// The words and the version are those of dist/version.js, which scripts/build.ts writes from
// daemon/src/common/flags.ts and package.json, the same sources the bundles print from: the line
// is the bundle's, byte for byte (test/docex-cli/startup.test.ts).
//
// Syntax every Node with ES modules parses (require-node.js runs after this file is loaded), and
// the built-ins from process.getBuiltinModule: on a Node without it (before 22.3) the bundle answers.
import { VERSION, VERSION_WORDS } from '../dist/version.js';

/**
 * Writes all of `bytes` to stdout (fd 1) with fs.writeSync, as the bundle's process.stdout would
 * deliver it: a partial write goes on with the rest; a full non-blocking pipe (EAGAIN) hands the
 * rest to `later` (process.stdout, which waits until the pipe takes it); a reader that is gone
 * (EPIPE) or no stdout at all (EBADF) ends it quietly, exit 0, as the bundle does.
 */
export function writeOut(fs, bytes, later) {
  var done = 0;
  while (done < bytes.length) {
    try {
      done += fs.writeSync(1, bytes, done, bytes.length - done);
    } catch (error) {
      var code = error && error.code;
      if (code === 'EINTR') continue;
      if (code === 'EPIPE' || code === 'EBADF') return;
      if (code === 'EAGAIN' || code === 'EWOULDBLOCK') {
        later(bytes.subarray(done));
        return;
      }
      throw error;
    }
  }
}

/** True when `word` (the first argument) asks for the version and it was printed; else the bundle runs. */
export function answerVersion(command, word) {
  if (VERSION_WORDS.indexOf(word) === -1 || typeof process.getBuiltinModule !== 'function') return false;
  writeOut(process.getBuiltinModule('node:fs'), Buffer.from(command + ' ' + VERSION + '\n'), function (rest) {
    process.stdout.write(rest);
  });
  return true;
}
