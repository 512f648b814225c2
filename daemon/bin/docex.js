#!/usr/bin/env node
// `docex` as docex-sync installs it: the docex package (a dependency), so that an install of
// docex-sync keeps both commands on PATH (npm links the bins of the package installed, not of its
// dependencies). Everything else is docex's own bin.
import 'docex/bin/docex.js';
