// `docex-sync run` lives for months, and Node 24 lets V8's young generation grow to 128 MB on a
// large host (Node 20: 32 MB): each doubling, weeks into a run, is a step of RSS an operator reads
// as a leak (docs/daemon.md, "Memory over time, measured"). The flag that holds it at 32 MB only
// works when Node starts, and a shebang with arguments (`env -S`) fails with BusyBox's `env`
// (Alpine), so `run` replaces itself with the same Node, the same script and arguments, plus the
// flag: process.execve keeps the PID, so systemd, Docker and a pid file still see one process.
// Nothing has been opened yet when this runs (no lock, no DB, no socket).
//
// The user's choice wins: a --max-semi-space-size in Node's own arguments or NODE_OPTIONS is kept
// as it is (that is also what stops a second exec). Without process.execve (Node before 22.15,
// Windows) or when it fails, the run goes on without the flag, as before.
export var SEMI_SPACE_FLAG = '--max-semi-space-size=16';

/**
 * The arguments to exec for `run` with the flag, or undefined when Node already has one (from its
 * arguments or NODE_OPTIONS) or cannot exec. Pure: everything it reads is given.
 */
export function daemonExecArgs(execPath, execArgv, scriptAndArgs, nodeOptions, canExec) {
  if (!canExec) return undefined;
  var given = execArgv.concat((nodeOptions || '').split(/\s+/));
  for (var i = 0; i < given.length; i++) {
    // V8 reads - and _ in a flag's name alike.
    if (/^--max[-_]semi[-_]space[-_]size(=|$)/.test(given[i])) return undefined;
  }
  return [execPath].concat(execArgv, [SEMI_SPACE_FLAG], scriptAndArgs);
}

export function execWithDaemonHeap() {
  var args = daemonExecArgs(
    process.execPath,
    process.execArgv,
    process.argv.slice(1),
    process.env.NODE_OPTIONS,
    typeof process.execve === 'function' && process.platform !== 'win32',
  );
  if (!args) return;
  // Node 22 announces process.execve as experimental on stderr; the operator cannot act on that
  // line, so it is not printed. On success nothing after execve runs in this image.
  var emitWarning = process.emitWarning;
  process.emitWarning = function () {};
  try {
    process.execve(process.execPath, args, process.env);
  } catch {
    // Not allowed here (a seccomp profile, a vanished node binary): run without the flag.
  } finally {
    process.emitWarning = emitWarning;
  }
}
