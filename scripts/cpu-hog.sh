#!/usr/bin/env bash
# Keeps every core busy (one `yes >/dev/null` per core) to check that tests pass on a loaded machine.
#
#   bash scripts/cpu-hog.sh                      # hogs until Ctrl-C or SIGTERM
#   bash scripts/cpu-hog.sh CMD [ARGS...]        # hogs while CMD runs, exits with CMD's status
#   HOGS=4 bash scripts/cpu-hog.sh CMD ...       # another number of hogs (default: nproc)
#
# The hogs' PIDs are printed to stderr; they are stopped by those PIDs on every way out (exit,
# Ctrl-C, SIGTERM), never by name.
set -u

count="${HOGS:-$(nproc)}"
pids=()

stop_hogs() {
  if [ "${#pids[@]}" -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
    echo "cpu-hog: stopped ${pids[*]}" >&2
    pids=()
  fi
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq "$count"); do
  yes >/dev/null &
  pids+=("$!")
done
echo "cpu-hog: ${count} hog(s) running, PIDs ${pids[*]}" >&2

if [ "$#" -eq 0 ]; then
  echo "cpu-hog: Ctrl-C or SIGTERM stops them" >&2
  # `wait` returns when a trapped signal arrives, so the traps run at once.
  wait
else
  "$@"
  status=$?
  exit "$status"
fi
