// Node's compile cache for the installed commands: V8 keeps the compiled code of the bundle in a
// folder of the user's cache, so later starts skip most of the parsing and compiling (docs/cli.md,
// "Start-up"). Never fatal and never slow: without module.enableCompileCache (Node before 22.1),
// with NODE_DISABLE_COMPILE_CACHE set, or when the user's cache folder cannot be made or is not
// writable, the command starts without it. A missing cache folder (XDG_CACHE_HOME or ~/.cache) is
// made, as the XDG spec asks, but only when its parent exists: Node's recursive mkdir can spin
// forever on some paths, e.g. under /proc. NODE_COMPILE_CACHE, when set, names the folder.
//
// The built-ins come from process.getBuiltinModule (Node 22.3+; before it, no cache), not from
// `import ... from 'node:fs'`: an ES module import of node:fs reads every export of it, and so loads
// its lazy parts (the streams, fs/promises and with it readline), ~10 ms before the bundle starts.
// `command`: the folder of the cache (~/.cache/<command>/compile-cache), one per installed program.
export function enableCompileCache(command) {
  if (typeof process.getBuiltinModule !== 'function' || process.env.NODE_DISABLE_COMPILE_CACHE) return;
  var module = process.getBuiltinModule('node:module');
  if (typeof module.enableCompileCache !== 'function') return;
  var fs = process.getBuiltinModule('node:fs');
  var join = process.getBuiltinModule('node:path').join;
  try {
    if (process.env.NODE_COMPILE_CACHE) return; // Node enabled it at start, in that folder
    var base = process.env.XDG_CACHE_HOME || join(process.getBuiltinModule('node:os').homedir(), '.cache');
    if (!fs.existsSync(base)) fs.mkdirSync(base, { mode: 448 }); // 0700, not recursive
    fs.accessSync(base, fs.constants.W_OK);
    module.enableCompileCache(join(base, command, 'compile-cache'));
  } catch {
    // A cache is an optimisation: starting matters more.
  }
}
