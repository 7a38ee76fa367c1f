#!/usr/bin/env bash
# Runs .ci/run on fresh clones of this checkout's HEAD, one after another, as CI would on a clean machine, and writes a
# line per run (number, exit code, seconds, commit) to $TMPDIR/ci-loop.txt; each run's output is $TMPDIR/ciN.log.
# A run number ending in h runs with a CPU hog beside it (a busy machine). Issue 23: five consecutive clean runs.
#   scripts/ci-loop.sh 1 2 3h 4 5
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=${TMPDIR:-/tmp}
for n in "$@"; do
  dir="$tmp/ci${n%h}"
  rm -rf "$dir" && git clone -q "$repo" "$dir"
  hog=
  case $n in *h) node -e 'for(;;){}' & hog=$! ;; esac
  start=$SECONDS
  (cd "$dir" && .ci/run) >"$tmp/ci${n%h}.log" 2>&1
  rc=$?
  [ -n "$hog" ] && kill "$hog"
  echo "run $n rc=$rc $((SECONDS - start)) s $(git -C "$dir" log --oneline -1 | cut -c1-8)" >>"$tmp/ci-loop.txt"
  rm -rf "$dir/node_modules"
done
