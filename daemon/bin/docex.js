#!/usr/bin/env node
// The installed `docex` command: the Node version check, `--version` (version.js), else the compile
// cache, then the bundle (daemon/src/docex-cli/docex.ts), which starts itself when the command's
// name is docex.
import { requireNode } from './require-node.js';
import { enableCompileCache } from './compile-cache.js';
import { answerVersion } from './version.js';

requireNode('docex');
if (!answerVersion('docex', process.argv[2])) {
  enableCompileCache();
  import('../dist/docex.js');
}
