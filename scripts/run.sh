#!/usr/bin/env bash
# Runs a command with the project's Node (>= 22) and dependencies in place: `scripts/run.sh vitest run`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
exec "$@"
