# shellcheck shell=bash
# --drain: `memtrack ctl drain` latency during a flood, default consumer and slowed ones.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# drain_run TAG MEMTRACK-OPTIONS...: a flood under memtrack --socket, `memtrack ctl drain` timed
# in a loop (one at a time, 20 ms apart) until memtrack exits.
drain_run() {
    local tag="$1" sock="$WORK/ctl.sock" pid t0 t1 i
    shift
    local stats="$WORK/stats/${tag}__r1.json" log="$WORK/log/${tag}__r1.log"
    rm -f "$sock"
    : >"$WORK/t/$tag"
    t0=$(now)
    "$MEMTRACK" track --socket "$sock" -o "$WORK/out" --stats "$stats" "$@" -- "$BIN/flood" 2 "$DRAIN_N" >/dev/null 2>"$log" &
    pid=$!
    for ((i = 0; i < 200; ++i)); do
        "$MEMTRACK" ctl --socket "$sock" --timeout 10 ping >/dev/null 2>&1 && break
        sleep 0.05
    done
    while kill -0 "$pid" 2>/dev/null; do
        t0=$(now)
        "$MEMTRACK" ctl --socket "$sock" --timeout 120 drain >/dev/null 2>&1 || break
        t1=$(now)
        elapsed_ms "$t0" "$t1" >>"$WORK/t/$tag"
        sleep 0.02
    done
    wait "$pid" || warning "$tag: memtrack exited with $? ($(first_error "$log"))"
    clear_out
}
# The consumer's read rate while it reads (records/s), and with the testing delay per chunk.
consumer_rate() { # STATS-FILE DELAY-US
    jq -r --argjson d "$2" 'if .chunks > 0 and .chunk_ms.p50 > 0 then (.records / .chunks) / ((.chunk_ms.p50 + $d / 1000) / 1000) else "nan" end' "$1"
}

begin_section "Drain"
declare -A DRAIN_OPTS=([default]="" [slow64M]="--consumer-delay-us 5000" [slow4M]="--ring-size 4M --consumer-delay-us 5000")
declare -A DRAIN_RING=([default]=67108864 [slow64M]=67108864 [slow4M]=4194304)
declare -A DRAIN_DELAY=([default]=0 [slow64M]=5000 [slow4M]=5000)
for d in default slow64M slow4M; do
    # shellcheck disable=SC2086  # options are words
    drain_run "drain__$d" --no-stacks ${DRAIN_OPTS[$d]}
done
echo "flood 2 $DRAIN_N under memtrack --no-stacks --socket; \`memtrack ctl drain\` round trips timed by the client,"
echo "one at a time, 20 ms apart, while the flood runs (client ms), and drain_ms from the stats (server side)."
echo "Full-ring read: ring_bytes / 56 records at the consumer's read rate of that run (records per chunk /"
echo "(chunk_ms p50 + the delay per chunk))."
echo
echo "| consumer | drains | client p50 (ms) | p99 | max | server drain_ms p50 | p99 | max | read rate (M rec/s) | full ring read (ms) | paused_fraction |"
echo "|----------|-------:|----------------:|----:|----:|--------------------:|----:|----:|--------------------:|--------------------:|----------------:|"
for d in default slow64M slow4M; do
    f="$WORK/t/drain__$d"
    st="$WORK/stats/drain__${d}__r1.json"
    rate=$( [[ -f "$st" ]] && consumer_rate "$st" "${DRAIN_DELAY[$d]}" || echo nan)
    printf '| %-40s | %6s | %15s | %3s | %3s | %19s | %3s | %3s | %19s | %19s | %15s |\n' \
        "$( [[ -z "${DRAIN_OPTS[$d]}" ]] && echo "default (64 MiB ring)" || echo "${DRAIN_OPTS[$d]}")" "$(wc -l <"$f")" \
        "$(fmt "$(percentile "$f" 0.50)" '%.1f')" "$(fmt "$(percentile "$f" 0.99)" '%.1f')" "$(fmt "$(percentile "$f" 1)" '%.1f')" \
        "$(fmt "$(jget "$st" .drain_ms.p50 2>/dev/null)" '%.1f')" "$(fmt "$(jget "$st" .drain_ms.p99 2>/dev/null)" '%.1f')" \
        "$(fmt "$(jget "$st" .drain_ms.max 2>/dev/null)" '%.1f')" "$(fmt "$(calc "$rate / 1e6")" '%.2f')" \
        "$(fmt "$(calc "${DRAIN_RING[$d]} / 56 / $rate * 1e3")" '%.0f')" "$(fmt "$(jget "$st" .paused_fraction 2>/dev/null)" '%.3f')"
done
end_section
