#!/usr/bin/env node
// The installed `docex` command: the Node version check, `--version` and the main help (answers.js), else the compile
// cache, then the bundle (cli/src/docex.ts), which starts itself when the command's name is docex.
// docex-sync's bin/docex.js runs this file: the docex of a docex-sync install is this package.
import { requireNode } from './require-node.js';
import { enableCompileCache } from './compile-cache.js';
import { answerEarly } from './answers.js';
import * as answers from '../dist/answers.js';

requireNode('docex');
if (!answerEarly('docex', process.argv[2], answers)) {
  enableCompileCache('docex');
  import('../dist/docex.js');
}
