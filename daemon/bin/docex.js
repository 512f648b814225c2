#!/usr/bin/env node
// The installed `docex` command: the Node version check, the compile cache, then the bundle
// (daemon/src/docex-cli/docex.ts), which starts itself when the command's name is docex.
import { requireNode } from './require-node.js';
import { enableCompileCache } from './compile-cache.js';

requireNode('docex');
enableCompileCache();
import('../dist/docex.js');
