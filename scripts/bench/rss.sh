# shellcheck shell=bash
# --rss: what the timeline's RSS records cost a page-fault-heavy program (issue 29): bench/
# touch_pages faulting RSS_MIB MiB of anonymous memory in 4 KiB pages, untracked and under
# memtrack --no-stacks without RSS records (--no-rss: the rss_stat program, still attached,
# returns at once), with them at the default granularity (1 MiB or 1/64 of the value) and at
# every change (--rss-granularity 0).
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

begin_section "RSS records (timeline)"
# The memtrack modes as run()'s tools (lib.sh's MT_OPTS and TOOL_LABEL).
MT_OPTS["rss-norss"]="--no-stacks --no-rss"
MT_OPTS["rss-default"]="--no-stacks"
MT_OPTS["rss-every"]="--no-stacks --rss-granularity 0"
TOOL_LABEL["rss-norss"]="memtrack --no-stacks --no-rss"
TOOL_LABEL["rss-default"]="memtrack --no-stacks (RSS at 1 MiB or 1/64 moves)"
TOOL_LABEL["rss-every"]="memtrack --no-stacks --rss-granularity 0"
RSS_TOOLS=(untracked rss-norss rss-default rss-every)
# Wall time to $WORK/t/rss__TOOL, CPU time (user + system of everything reaped: memtrack and the
# program, whose faults run the BPF program) to $WORK/t/rss__TOOL.cpu.
for ((REP = 1; REP <= REPS; REP++)); do
    for m in "${RSS_TOOLS[@]}"; do run "$m" "rss__$m" "$BIN/touch_pages" "$RSS_MIB"; done
done
# One more run of each, untimed, to count its RSS records (the timed runs' folders are emptied).
rss_records() { # MODE -> the timeline's rss records of one run
    local out="$WORK/rss-count" n
    rm -rf "$out"
    # shellcheck disable=SC2086  # options are words
    "$MEMTRACK" track --no-summary ${MT_OPTS[$1]} -o "$out" -- "$BIN/touch_pages" "$RSS_MIB" >/dev/null 2>&1 || {
        echo nan
        return 0
    }
    n=$("$MEMTRACK" dump --timeline "$out"/*.MemtrackTimeline.msgpack | grep -c '"type":"rss"' || true)
    rm -rf "$out"
    echo "$n"
}
faults=$((RSS_MIB * 256))
cpu0=$(median "$WORK/t/rss__untracked.cpu")
cpu_norss=$(median "$WORK/t/rss__rss-norss.cpu")
echo "bench/touch_pages $RSS_MIB: one mmap of $RSS_MIB MiB, one byte written to each 4 KiB page ($faults faults), munmap;"
echo "transparent huge pages off for the range (madvise). Medians of $REPS; CPU: user + system of memtrack and the"
echo "program (the BPF program runs in the faulting thread). Over untracked: memtrack's start-up and shutdown"
echo "included; over --no-rss: what the RSS records add, per fault."
echo
echo "| run | wall (s) | CPU (s) | CPU over untracked (s) | CPU over --no-rss (s) | ns per fault over --no-rss | RSS records |"
echo "|-----|---------:|--------:|-----------------------:|----------------------:|---------------------------:|------------:|"
for m in "${RSS_TOOLS[@]}"; do
    wall=$(median "$WORK/t/rss__$m")
    cpu=$(median "$WORK/t/rss__$m.cpu")
    if [[ "$m" == untracked ]]; then
        printf '| %s | %s | %s | - | - | - | - |\n' "${TOOL_LABEL[$m]}" "$(fmt "$wall" '%.2f')" "$(fmt "$cpu" '%.2f')"
        continue
    fi
    over="-" per="-"
    if [[ "$m" != rss-norss ]]; then
        over=$(fmt "$(calc "$cpu - $cpu_norss")" '%.2f')
        per=$(fmt "$(calc "($cpu - $cpu_norss) / $faults * 1e9")" '%.0f')
    fi
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "${TOOL_LABEL[$m]}" "$(fmt "$wall" '%.2f')" "$(fmt "$cpu" '%.2f')" \
        "$(fmt "$(calc "$cpu - $cpu0")" '%.2f')" "$over" "$per" "$(rss_records "$m")"
done
end_section
