#!/usr/bin/env bash
# scripts/rss.sh [SECONDS]: memtrack's resident memory over a flood with drains. Runs
# `build/bench/flood 2 1000000000` under memtrack (--no-stacks, 1 MiB ring, consumer slowed by
# 1 ms a chunk), asks for a drain every 0.2 s, prints memtrack's VmRSS every 5 s for SECONDS
# (default 90), then stops memtrack with SIGTERM (which ends the flood) and prints the records
# and drains of its stats. Builds first; the artifact goes to a temporary folder, removed after.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
DUR="${1:-90}"
"$ROOT/scripts/build.sh"
B="$ROOT/build"
D="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-rss.XXXXXX")"
trap 'rm -rf "$D"' EXIT
S="$D/ctl.sock"

"$B/memtrack" track --no-summary --no-stacks --socket "$S" -o "$D/out" --stats "$D/stats.json" --ring-size 1M \
    --consumer-delay-us 1000 -- "$B/bench/flood" 2 1000000000 2>"$D/err" &
mt=$!
for _ in $(seq 300); do [[ -S "$S" ]] && break; sleep 0.1; done
sleep 3
(while kill -0 "$mt" 2>/dev/null; do "$B/memtrack" ctl --socket "$S" drain >/dev/null 2>&1 || true; sleep 0.2; done) &
drainer=$!
t0=$(date +%s)
while :; do
    el=$(($(date +%s) - t0))
    echo "rss: t=${el}s VmRSS=$(awk '/VmRSS/{print $2}' "/proc/$mt/status") kB"
    ((el >= DUR)) && break
    sleep 5
done
kill -TERM "$mt"
wait "$mt" || true
wait "$drainer" 2>/dev/null || true
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('rss: records', d['records'], 'drains', d['drain_ms']['count'])" "$D/stats.json"
