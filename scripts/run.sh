#!/usr/bin/env bash
# scripts/run.sh [memtrack arguments]: installs what is missing for building and running memtrack
# (scripts/deps.sh --run: none of the tests' packages), builds memtrack and the demo, then runs
# memtrack with the given arguments (from the current directory, so relative paths in them work).
# With no arguments, runs the demo: tracks build/examples/demo into ${TMPDIR:-/tmp}/memtrack-demo
# and prints the summary of the artifact it wrote.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
MEMTRACK="$ROOT/build/memtrack"

"$ROOT/scripts/build.sh" --no-tests memtrack examples/demo

if (($#)); then
    exec "$MEMTRACK" "$@"
fi

out="${TMPDIR:-/tmp}/memtrack-demo"
rm -rf "$out"
mkdir -p "$out"

"$MEMTRACK" track -o "$out" -- "$ROOT/build/examples/demo"

artifact=""
newest=0
for f in "$out"/*.MemtrackArtifact.msgpack; do
    [[ -f "$f" ]] || continue
    mtime="$(stat -c %Y "$f")"
    if [[ -z "$artifact" ]] || ((mtime > newest)); then
        artifact="$f"
        newest="$mtime"
    fi
done
if [[ -z "$artifact" ]]; then
    echo "run: error: memtrack track wrote no *.MemtrackArtifact.msgpack in $out" >&2
    exit 1
fi

exec "$MEMTRACK" dump --summary "$artifact"
