#!/usr/bin/env bash
# A binary run from its sources in this checkout, for people and scripts working on the repo:
# `npm run docex-sync -- ARGS` (`npm run -s` for output without npm's header). It runs in the folder
# npm was called from (npm's INIT_CWD), so relative paths (--config ./x.yaml) mean what they say,
# and it stays the same when the sources move: only the entry below follows them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${1:-}" in
  docex-sync) entry="$root/daemon/src/commands/docex-sync.ts" ;;
  *) echo "usage: scripts/from-checkout.sh docex-sync [ARGS...]" >&2; exit 2 ;;
esac
shift
source "$root/scripts/env.sh"
cd "${INIT_CWD:-$PWD}"
exec node "$entry" "$@"
