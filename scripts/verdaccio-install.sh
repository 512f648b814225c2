#!/usr/bin/env bash
# Installs verdaccio, a local npm registry, into the user cache for the end-to-end registry test
# (test/e2e/registry.test.ts publishes the packed package to it and n8n installs from it).
# 6.8.0 with node-fetch pinned to 2.7.0: newer verdaccio wants a newer Node, and the node-fetch its
# dependencies ask for does not install from this registry. Idempotent; prints the binary's path.
set -euo pipefail
DOCEX_SKIP_DEPS=1 source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
version=6.8.0
dir="$DOCEX_CACHE/verdaccio-$version"
if [ ! -x "$dir/node_modules/.bin/verdaccio" ]; then
  echo "docex: installing verdaccio $version into $dir (first run only, about 2 minutes)" >&2
  install_started=$SECONDS
  mkdir -p "$dir"
  cat > "$dir/package.json" <<JSON
{ "name": "docex-verdaccio", "private": true, "overrides": { "node-fetch": "2.7.0" } }
JSON
  (cd "$dir" && npm_outside install --loglevel=error --no-audit --no-fund --ignore-scripts \
    --strict-allow-scripts=false "verdaccio@$version" >&2)
  record_install "verdaccio $version" "$install_started"
fi
echo "$dir/node_modules/.bin/verdaccio"
