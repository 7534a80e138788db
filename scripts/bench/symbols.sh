# shellcheck shell=bash
# --symbols: the Resolver alone (bench/symbol_throughput), then a node script untracked and tracked.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

begin_section "Symbols"
NODE_BIN="$(readlink -f "$(command -v node)")"
SYMBOL_FILES=("$NODE_BIN" "$LIBC")
for ((REP = 1; REP <= REPS; ++REP)); do
    "$BIN/symbol_throughput" --addresses "$SYMBOL_ADDRS" --json "$WORK/stats/symbols__r$REP.json" "${SYMBOL_FILES[@]}" \
        >"$WORK/log/symbols__r$REP.log" 2>&1 || warning "symbols rep $REP: symbol_throughput failed"
    for tool in untracked memtrack-nostacks memtrack memtrack-nocache; do run "$tool" "node__$tool" "$NODE_BIN" -e "$NODE_JS"; done
done
echo "bench/symbol_throughput --addresses $SYMBOL_ADDRS: each file mapped without a process and resolved by a fresh"
echo "Resolver: one address (load: open, find debug info, index the symbols), then $SYMBOL_ADDRS distinct random code"
echo "addresses (pass 1: compile units and functions indexed as they are met, as in a run), then $SYMBOL_ADDRS others"
echo "(pass 2). Rates per CPU-second of the resolving thread; medians of $REPS runs."
echo
echo "| file | load (ms) | pass 1 (addresses/CPU-s) | pass 2 (addresses/CPU-s) | named | with a line |"
echo "|------|----------:|-------------------------:|-------------------------:|------:|------------:|"
for f in "${SYMBOL_FILES[@]}"; do
    q=".[\"$f\"]"
    printf '| %s | %s | %s | %s | %s %% | %s %% |\n' "$f" "$(fmt "$(stat_median symbols "$q.load_ms")" '%.1f')" \
        "$(fmt "$(stat_median symbols "$q.pass1.per_cpu_s")" '%.0f')" "$(fmt "$(stat_median symbols "$q.pass2.per_cpu_s")" '%.0f')" \
        "$(fmt "$(stat_median symbols "$q.pass1.named / $q.pass1.addresses * 100")" '%.0f')" \
        "$(fmt "$(stat_median symbols "$q.pass1.lined / $q.pass1.addresses * 100")" '%.0f')"
done
echo
echo "node -e '$NODE_JS' ($NODE_BIN, $(node --version)): wall time, medians of $REPS runs;"
echo "symbolize_cpu_s, shutdown_stacks_ms (shutdown start to stacks file closed), unwind build_ms (the unwind"
echo "tables, built or read from the cache: node is held meanwhile) from memtrack's stats. memtrack reads the"
echo "tables from the cache its first run made; memtrack --no-cache builds them in every run, as a first run does."
echo
echo "| run | wall (s) | vs --no-stacks | symbolize_cpu_s | shutdown_stacks_ms | stacks wait / run | unwind build_ms | stacks_unique | new addresses | pressure_stops |"
echo "|-----|---------:|---------------:|----------------:|-------------------:|------------------:|----------------:|--------------:|--------------:|---------------:|"
ns=$(median "$WORK/t/node__memtrack-nostacks")
for tool in untracked memtrack-nostacks memtrack memtrack-nocache; do
    p="node__$tool"
    w=$(median "$WORK/t/$p")
    if [[ $tool == memtrack* && $tool != memtrack-nostacks ]]; then
        printf '| %s | %s | %s | %s | %s | %s %% | %s | %s | %s | %s |\n' "${TOOL_LABEL[$tool]}" "$(fmt "$w" '%.2f')" \
            "$(fmt "$(calc "$w / $ns")" '%.2fx')" "$(fmt "$(stat_median "$p" .symbolize_cpu_s)" '%.3f')" \
            "$(fmt "$(stat_median "$p" .shutdown_stacks_ms)" '%.1f')" \
            "$(fmt "$(stat_median "$p" '.shutdown_stacks_ms / 10 / .duration_s')" '%.2f')" \
            "$(fmt "$(stat_median "$p" .unwind.build_ms)" '%.1f')" \
            "$(fmt "$(stat_median "$p" .stacks_unique)" '%.0f')" "$(fmt "$(stat_median "$p" .symbolizer_addresses)" '%.0f')" \
            "$(fmt "$(stat_median "$p" .pressure_stops)" '%.0f')"
    else
        printf '| %s | %s | %s | | | | | | | |\n' "${TOOL_LABEL[$tool]}" "$(fmt "$w" '%.2f')" "$(fmt "$(calc "$w / $ns")" '%.2fx')"
    fi
done
end_section
