// `--version` (and the other spellings: -v, -V, version) and the main help (--help, -h, help, or no
// command at all) answered by the installed commands (docex's bin and docex-sync's, which imports
// this file from its dependency docex) before their bundle is imported: for `docex`
// that bundle is 0.8 MB to read and deserialise, and process.stdout would load Node's stream and
// net modules, so the answer is written with fs.writeSync. The words and the texts are those of
// each package's dist/answers.js, given by its bin, which scripts/build.ts writes from
// cli-kit/src/flags.ts, the package.json and the program's own help function, the sources the bundle prints from: the answer is the bundle's,
// byte for byte, with the same exit code (test/docex-cli/startup.test.ts).
//
// Syntax every Node with ES modules parses (require-node.js runs after this file is loaded), and
// the built-ins from process.getBuiltinModule: on a Node without it (before 22.3) the bundle answers.
/**
 * Writes all of `bytes` to stdout (fd 1) with fs.writeSync, as the bundle's process.stdout would
 * deliver it: a partial write goes on with the rest; a full non-blocking pipe (EAGAIN) hands the
 * rest to `later` (process.stdout, which waits until the pipe takes it); a reader that is gone
 * (EPIPE) or no stdout at all (EBADF) ends it quietly, as the bundle does.
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

/**
 * True when `word` (the first argument) asks for the version or the main help, or is missing (the
 * help, exit 2, as the bundle), and the answer was written; else the bundle runs. `answers`: the
 * package's dist/answers.js (VERSION, VERSION_WORDS, HELP_WORDS, HELP).
 */
export function answerEarly(command, word, answers) {
  if (typeof process.getBuiltinModule !== 'function') return false;
  var text;
  if (answers.VERSION_WORDS.indexOf(word) !== -1) text = command + ' ' + answers.VERSION + '\n';
  else if (word === undefined || answers.HELP_WORDS.indexOf(word) !== -1) text = answers.HELP[command];
  else return false;
  if (word === undefined) process.exitCode = 2;
  writeOut(process.getBuiltinModule('node:fs'), Buffer.from(text), function (rest) {
    process.stdout.write(rest);
  });
  return true;
}
