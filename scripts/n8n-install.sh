#!/usr/bin/env bash
# Installs a real n8n for the end-to-end test into the user cache (outside the repo), the way
# ../shared/docs/real-n8n-offline.md describes: linkedom pinned, install scripts off, sqlite3 rebuilt
# for the running Node. Idempotent; prints the n8n binary path on stdout.
# Usage: n8n-install.sh [VERSION]   (default: DOCEX_N8N_VERSION, else the one the suite runs on,
# N8N_VERSION of test/e2e/n8n-instance.ts); each version has its own folder
# ~/.cache/docex/n8n-VERSION, so versions never share (or redo) an install.
set -euo pipefail
DOCEX_SKIP_DEPS=1 source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
version="${1:-${DOCEX_N8N_VERSION:-2.41.1}}"
# linkedom 0.18.15 needs cssomnom, which the registry lacks. (n8n 2.41.3 does not install from the
# registry at all: its @n8n/agents 0.26.2 and @n8n/ai-node-sdk 0.31.2 are missing there.)
overrides='"linkedom": "0.18.12"'
dir="$DOCEX_CACHE/n8n-$version"
stamp="$dir/.installed-$(node -p process.version)"
# n8n keeps its database in SQLite: without a built sqlite3 addon every command fails at start-up.
sqlite_loads() { (cd "$dir" && node -e 'require("sqlite3")' >/dev/null 2>&1); }
if [ ! -f "$stamp" ] || ! sqlite_loads; then
  echo "docex: installing n8n $version into $dir (first run only, 5-15 minutes)" >&2
  install_started=$SECONDS
  mkdir -p "$dir"
  cat > "$dir/package.json" <<JSON
{ "name": "docex-n8n-e2e", "private": true, "overrides": { $overrides } }
JSON
  # env.sh points npm_config_nodedir at Node 24's headers when it installed Node 24; a machine Node
  # >= 22 builds against its own headers (npm's default, or the machine's npmrc).
  # n8n has 16 dependencies with install scripts: none runs (a user config's strict-allow-scripts
  # would refuse the whole install for them).
  (cd "$dir" && npm_outside install --loglevel=error --no-audit --no-fund --ignore-scripts \
    --strict-allow-scripts=false "n8n@$version" >&2)
  # The rebuild runs sqlite3's install script, the one that must run.
  (cd "$dir" && npm_outside rebuild sqlite3 --ignore-scripts=false --strict-allow-scripts=false \
    --loglevel=error >&2)
  if ! sqlite_loads; then
    echo "docex: n8n's sqlite3 addon did not build in $dir (see the npm output above)" >&2
    exit 1
  fi
  touch "$stamp"
  record_install "n8n $version" "$install_started"
fi
echo "$dir/node_modules/.bin/n8n"
