#!/usr/bin/env bash
# Runs a command with the project's Node (>= 22) and dependencies in place: `scripts/run.sh vitest run`.
set -euo pipefail
# When this run began, before any one-time install below: the test run's timing report tells the
# installs of this run from those of earlier runs by it.
export DOCEX_RUN_STARTED="${DOCEX_RUN_STARTED:-$(date +%s)}"
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
exec "$@"
