#!/usr/bin/env node
// The installed `docex` command: the Node version check, then the bundle (daemon/src/docex-cli/docex.ts),
// which starts itself when the command's name is docex.
import { requireNode } from './require-node.js';

requireNode('docex');
import('../dist/docex.js');
