#!/usr/bin/env node
// The installed `docex-sync` command: the Node version check, `--version` and the main help (answers.js), else for
// `run` the daemon's V8 flags, the compile cache, then the bundle (daemon/src/commands/docex-sync.ts).
// The start-up helpers are docex's (a dependency: the same checks and early answers for both).
import { requireNode } from 'docex/bin/require-node.js';
import { enableCompileCache } from 'docex/bin/compile-cache.js';
import { answerEarly } from 'docex/bin/answers.js';
import * as answers from '../dist/answers.js';

requireNode('docex-sync');
// daemon-heap.js is loaded only for `run` (the other commands start without it); no top-level
// await, so that an old Node still parses this file and reads requireNode's sentence.
if (!answerEarly('docex-sync', process.argv[2], answers))
  (process.argv[2] === 'run' ? import('./daemon-heap.js') : Promise.resolve())
    .then(function (heap) {
      if (heap) heap.execWithDaemonHeap();
      enableCompileCache('docex-sync');
      return import('../dist/cli.js');
    })
    .then(function (cli) {
      return cli.run(process.argv.slice(2));
    });
