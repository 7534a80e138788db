# shellcheck shell=bash
# --stacks: ring bytes per event with few and many call stacks, the symbolizer's throughput, and
# (with --overhead, from its NET/NETC) the cost of stack capture.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

begin_section "Stacks"
for ((REP = 1; REP <= REPS; ++REP)); do
    for k in 1 1024; do
        run memtrack "callsites__memtrack__$k" "$BIN/callsites" "$CALLSITES_N" "$k"
        run memtrack-nostacks "callsites__memtrack-nostacks__$k" "$BIN/callsites" "$CALLSITES_N" "$k"
    done
done
echo "callsites $CALLSITES_N K: malloc+free pairs from K distinct call stacks; memtrack with stacks; medians of $REPS runs."
echo "avg frames = (stack_ring_bytes / stacks_sent - 24) / 8 (a stack record is 16 bytes of header + 8 per frame"
echo "+ the ring's 8-byte header). Without deduplication every allocation event would carry its stack:"
echo "ring bytes per event = 56 + 16 + 8 * avg_frames + 8."
echo
echo "| K | wall (s) | --no-stacks wall (s) | allocation_events | stacks_unique | avg frames | ring bytes/event | without dedup | symbolize_ms p50 | p99 | cache hit rate |"
echo "|--:|---------:|---------------------:|------------------:|--------------:|-----------:|-----------------:|--------------:|-----------------:|----:|---------------:|"
for k in 1 1024; do
    p="callsites__memtrack__$k"
    su=$(stat_median "$p" .stacks_unique)
    frames=$(calc "($(stat_median "$p" .stack_ring_bytes) / $(stat_median "$p" .stacks_sent) - 24) / 8")
    printf '| %4s | %8s | %20s | %17s | %13s | %10s | %16s | %13s | %16s | %3s | %14s |\n' "$k" \
        "$(fmt "$(median "$WORK/t/$p")" '%.2f')" "$(fmt "$(median "$WORK/t/callsites__memtrack-nostacks__$k")" '%.2f')" \
        "$(fmt "$(stat_median "$p" .allocation_events)" '%.0f')" "$(fmt "$su" '%.0f')" "$(fmt "$frames" '%.1f')" \
        "$(fmt "$(stat_median "$p" .ring_bytes_per_event)" '%.2f')" "$(fmt "$(calc "56 + 24 + 8 * $frames")" '%.0f')" \
        "$(fmt "$(stat_median "$p" .symbolize_ms.p50)" '%.2f')" "$(fmt "$(stat_median "$p" .symbolize_ms.p99)" '%.1f')" \
        "$(fmt "$(stat_median "$p" .symbolizer_cache_hit_rate)" '%.4f')"
done
echo
p=callsites__memtrack__1024
su=$(stat_median "$p" .stacks_unique)
frames=$(calc "($(stat_median "$p" .stack_ring_bytes) / $(stat_median "$p" .stacks_sent) - 24) / 8")
p50=$(stat_median "$p" .symbolize_ms.p50)
hit=$(stat_median "$p" .symbolizer_cache_hit_rate)
echo "Symbolizer, K = 1024: $(fmt "$(calc "1000 / $p50")" '%.0f') stacks/s at the p50 symbolize time," \
    "$(fmt "$(calc "1000 / $p50 * $frames")" '%.0f') frames/s; distinct addresses resolved (cache misses: (1 - hit rate) *" \
    "frames looked up): $(fmt "$(calc "(1 - $hit) * $su * $frames")" '%.0f') in all, $(fmt "$(calc "(1 - $hit) * $frames * 1000 / $p50")" '%.0f')" \
    "per second of symbolizing (cache hit rate $(fmt "$hit" '%.4f'))."
echo "Symbolizing time, sum estimated as stacks_unique * p50: $(fmt "$(calc "$su * $p50 / 1000")" '%.2f') s of the" \
    "$(fmt "$(median "$WORK/t/$p")" '%.2f') s run ($(fmt "$(median "$WORK/t/callsites__memtrack-nostacks__1024")" '%.2f') s without stacks)."
if on overhead; then
    for wl in churn_c churn_cxx flood; do
        echo "- stack capture on $wl: wall memtrack $(fmt "${NET[$wl,memtrack]}" '%.2f') vs --no-stacks $(fmt "${NET[$wl,memtrack-nostacks]}" '%.2f') us/alloc:" \
            "$(fmt "$(calc "(${NET[$wl,memtrack]} / ${NET[$wl,memtrack-nostacks]} - 1) * 100")" '%+.0f') %; CPU $(fmt "${NETC[$wl,memtrack]}" '%.2f') vs $(fmt "${NETC[$wl,memtrack-nostacks]}" '%.2f') us/alloc:" \
            "$(fmt "$(calc "(${NETC[$wl,memtrack]} / ${NETC[$wl,memtrack-nostacks]} - 1) * 100")" '%+.0f') %"
    done
else
    echo "(the cost of stack capture on churn_c / churn_cxx is in the overhead section: --overhead)"
fi
end_section
