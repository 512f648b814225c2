#!/usr/bin/env node
// The installed `docex-sync` command: the Node version check, the compile cache, then the bundle
// (daemon/src/commands/docex-sync.ts).
import { requireNode } from './require-node.js';
import { enableCompileCache } from './compile-cache.js';

requireNode('docex-sync');
enableCompileCache();
import('../dist/cli.js').then(function (cli) {
  return cli.run(process.argv.slice(2));
});
