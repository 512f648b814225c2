#!/usr/bin/env node
// The installed `docex` command: the Node version check, `--version` and the main help (answers.js), else the compile
// cache, then the bundle (daemon/src/docex-cli/docex.ts), which starts itself when the command's
// name is docex.
import { requireNode } from './require-node.js';
import { enableCompileCache } from './compile-cache.js';
import { answerEarly } from './answers.js';

requireNode('docex');
if (!answerEarly('docex', process.argv[2])) {
  enableCompileCache();
  import('../dist/docex.js');
}
