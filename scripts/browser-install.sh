#!/usr/bin/env bash
# Installs what the status page's browser test needs: Debian's chromium (apt-get, as root) and
# playwright-core as the driver (npm, into the user cache, outside the repo; it downloads no
# browser). Idempotent; prints the playwright-core folder on stdout.
set -euo pipefail
DOCEX_SKIP_DEPS=1 source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
version=1.65.1
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "docex: the browser test needs Debian's chromium: run 'sudo apt-get install -y chromium'" >&2
    exit 1
  fi
  echo "docex: installing Debian's chromium for the status page's browser test (apt-get, a few minutes)" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >&2
fi
dir="$DOCEX_CACHE/playwright-core-$version"
if [ ! -f "$dir/node_modules/playwright-core/package.json" ]; then
  echo "docex: installing playwright-core $version into $dir (the browser driver)" >&2
  mkdir -p "$dir"
  echo '{ "name": "docex-browser-e2e", "private": true }' > "$dir/package.json"
  (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_outside install --loglevel=error --no-audit \
    --no-fund --ignore-scripts --strict-allow-scripts=false "playwright-core@$version" >&2)
fi
echo "$dir/node_modules/playwright-core"
