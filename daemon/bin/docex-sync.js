#!/usr/bin/env node
// The installed `docex-sync` command: the Node version check, then the bundle (daemon/src/commands/docex-sync.ts).
import { requireNode } from './require-node.js';

requireNode('docex-sync');
import('../dist/cli.js').then(function (cli) {
  return cli.run(process.argv.slice(2));
});
