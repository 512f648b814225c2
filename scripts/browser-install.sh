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
  install_started=$SECONDS
  # Another apt-get may be installing a test's package at the same time: wait for its lock.
  wait_lock=(-o DPkg::Lock::Timeout=600)
  (apt-get "${wait_lock[@]}" update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get "${wait_lock[@]}" install -y -qq chromium) >&2
  record_install chromium "$install_started"
fi
dir="$DOCEX_CACHE/playwright-core-$version"
if [ ! -f "$dir/node_modules/playwright-core/package.json" ]; then
  echo "docex: installing playwright-core $version into $dir (the browser driver)" >&2
  mkdir -p "$dir"
  echo '{ "name": "docex-browser-e2e", "private": true }' > "$dir/package.json"
  install_started=$SECONDS
  (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_outside install --loglevel=error --no-audit \
    --no-fund --ignore-scripts --strict-allow-scripts=false "playwright-core@$version" >&2)
  record_install "playwright-core $version" "$install_started"
fi
echo "$dir/node_modules/playwright-core"
