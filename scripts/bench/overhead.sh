# shellcheck shell=bash
# --overhead: each workload untracked and under every tool (memtrack's modes, the trap floors,
# bpftrace, heaptrack, massif): wall and CPU time, net cost per allocation. Leaves NET[wl,tool] and
# NETC[wl,tool] (net wall / CPU us per allocation) for the stacks section.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# MEMTRACK_BENCH_WORKLOADS / MEMTRACK_BENCH_TOOLS (space-separated) run a subset; the net columns
# need untracked, memtrack-nostacks (its event counts) and floor among the tools.
read -r -a WORKLOADS <<<"${MEMTRACK_BENCH_WORKLOADS:-flood churn_c churn_cxx churn_nofp}"
read -r -a TOOLS <<<"${MEMTRACK_BENCH_TOOLS:-untracked memtrack memtrack-fp memtrack-nostacks memtrack-wakeall memtrack-entry floor floor-entry bpftrace heaptrack massif}"
workload_cmd() { # NAME SIZE -> the command line
    case "$1" in
    flood) echo "$BIN/flood 1 $2" ;;
    churn_c) echo "$BIN/churn_c $2" ;;
    churn_nofp) echo "$BIN/churn_nofp $2 8" ;;
    churn_cxx) echo "$BIN/churn_cxx $2" ;;
    esac
}
declare -A WL_N=([flood]=$FLOOD_N [churn_c]=$CHURN_C_N [churn_cxx]=$CHURN_CXX_N [churn_nofp]=$CHURN_C_N)

begin_section "Overhead"
# Interleaved: every repetition runs every workload under every tool, so drift in the
# machine's load spreads over all of them.
for ((REP = 1; REP <= REPS; ++REP)); do
    for wl in "${WORKLOADS[@]}"; do
        for tool in "${TOOLS[@]}"; do
            for size in "${WL_N[$wl]}" 1; do
                # shellcheck disable=SC2046  # the command line is words
                run "$tool" "${wl}__${tool}__$size" $(workload_cmd "$wl" "$size")
            done
        done
    done
done
echo "Sizes: flood 1 $FLOOD_N (malloc+free pairs), churn_c and churn_nofp $CHURN_C_N (allocation calls; churn_nofp 8 frames below main), churn_cxx $CHURN_CXX_N (rounds)."
echo "Medians of $REPS runs. Wall: elapsed time; CPU: user + system time of the tool and the command"
echo "(getrusage of the tool and all it reaped), less sensitive to the machine's load than wall time."
echo "net us/alloc: (T(N) - T(1)) / (A(N) - A(1)) minus the untracked run's; x floor: net us/alloc"
echo "divided by the placed trap floor's; start+tear: wall T(1) - untracked wall T(1). memtrack's own split of"
echo "its run at N, from its stats (docs/STATS.md): start-up (its start to the command's release), the"
echo "command's run, teardown (the shutdown's start to the exit stats), and the rest of the wall time (its"
echo "process's exec and exit, the probes' detach still under way, the stats written)."
echo
printf '| %-9s | %-38s | %10s | %9s | %12s | %9s | %9s | %11s | %9s | %15s | %30s |\n' workload tool "wall N (s)" slowdown \
    "net us/alloc" "x floor" "CPU N (s)" "net CPU us" "x floor" "start+tear (ms)" "start / run / tear / rest (ms)"
echo "|-----------|----------------------------------------|-----------:|----------:|-------------:|----------:|----------:|------------:|----------:|----------------:|-------------------------------:|"
declare -A NET=() NETC=() WALL=() CPU=() STU=() ALLOCS=()
# memtrack's phases at size N, medians of its stats: "start / run / tear / rest" in ms ("-" for the
# other tools, which have no stats).
phases_at_n() { # WORKLOAD TOOL
    [[ -v "MT_OPTS[$2]" ]] || { echo -; return 0; }
    local tag="${1}__${2}__${WL_N[$1]}" s r t
    s=$(stat_median "$tag" .startup_ms) r=$(stat_median "$tag" .run_ms) t=$(stat_median "$tag" .teardown_ms)
    echo "$(fmt "$s" '%.0f') / $(fmt "$r" '%.0f') / $(fmt "$t" '%.0f') / $(fmt "$(calc "${WALL[$1,$2]} * 1e3 - $s - $r - $t")" '%.0f')"
}
# net_per_alloc WORKLOAD TOOL SUFFIX -> (T(N) - T(1)) / allocations, in us (SUFFIX "" wall, .cpu CPU)
net_per_alloc() {
    local n="${WL_N[$1]}"
    calc "($(median "$WORK/t/${1}__${2}__$n$3") - $(median "$WORK/t/${1}__${2}__1$3")) / ${ALLOCS[$1]} * 1e6"
}
for wl in "${WORKLOADS[@]}"; do
    n="${WL_N[$wl]}"
    a_n=$(stat_median "${wl}__memtrack-nostacks__$n" .allocation_events)
    a_1=$(stat_median "${wl}__memtrack-nostacks__1" .allocation_events)
    ALLOCS[$wl]=$(calc "$a_n - $a_1")
    u_n=$(median "$WORK/t/${wl}__untracked__$n")
    u_1=$(median "$WORK/t/${wl}__untracked__1")
    u_per=$(net_per_alloc "$wl" untracked "")
    u_perc=$(net_per_alloc "$wl" untracked .cpu)
    for tool in "${TOOLS[@]}"; do
        WALL[$wl,$tool]=$(median "$WORK/t/${wl}__${tool}__$n")
        CPU[$wl,$tool]=$(median "$WORK/t/${wl}__${tool}__$n.cpu")
        NET[$wl,$tool]=$(calc "$(net_per_alloc "$wl" "$tool" "") - $u_per")
        NETC[$wl,$tool]=$(calc "$(net_per_alloc "$wl" "$tool" .cpu) - $u_perc")
        STU[$wl,$tool]=$(calc "($(median "$WORK/t/${wl}__${tool}__1") - $u_1) * 1e3")
    done
    for tool in "${TOOLS[@]}"; do
        if [[ $tool == untracked ]]; then
            printf '| %-9s | %-38s | %10s | %9s | %12s | %9s | %9s | %11s | %9s | %15s | %30s |\n' "$wl" "${TOOL_LABEL[$tool]}" \
                "$(fmt "$u_n" '%.3f')" 1.0x "$(fmt "$u_per" '(%.3f)')" - "$(fmt "${CPU[$wl,$tool]}" '%.3f')" \
                "$(fmt "$u_perc" '(%.3f)')" - - -
            continue
        fi
        label="${TOOL_LABEL[$tool]}"
        # heaptrack does not follow fork(): flood's writer, a child, runs untraced.
        [[ $wl == flood && $tool == heaptrack ]] && label="heaptrack (writer untraced: no fork)"
        printf '| %-9s | %-38s | %10s | %9s | %12s | %9s | %9s | %11s | %9s | %15s | %30s |\n' "$wl" "$label" \
            "$(fmt "${WALL[$wl,$tool]}" '%.3f')" "$(fmt "$(calc "${WALL[$wl,$tool]} / $u_n")" '%.0fx')" \
            "$(fmt "${NET[$wl,$tool]}" '%.2f')" "$(fmt "$(calc "${NET[$wl,$tool]} / ${NET[$wl,floor]}")" '%.2f')" \
            "$(fmt "${CPU[$wl,$tool]}" '%.3f')" "$(fmt "${NETC[$wl,$tool]}" '%.2f')" \
            "$(fmt "$(calc "${NETC[$wl,$tool]} / ${NETC[$wl,floor]}")" '%.2f')" "$(fmt "${STU[$wl,$tool]}" '%.0f')" \
            "$(phases_at_n "$wl" "$tool")"
    done
done
echo
counted=""
for wl in "${WORKLOADS[@]}"; do counted+="${counted:+, }$wl ${ALLOCS[$wl]}"; done
echo "Allocation events counted by memtrack (A(N) - A(1)): $counted."
echo "The untracked rows' net columns (in parentheses) are the workload's own cost per allocation, already"
echo "subtracted from the other rows. heaptrack does not follow fork(): under flood it traces only the parent,"
echo "not the writer, so that row measures nothing (its churn rows are valid). bpftrace probes malloc (entry"
echo "and return) and free only: on churn_c it misses the calloc and realloc calls (half of them)."
echo
echo "Derived (wall / CPU):"
ratio() { # WORKLOAD TOOL-A TOOL-B -> "wall / CPU" ratios of their net costs
    echo "$(fmt "$(calc "${NET[$1,$2]-nan} / ${NET[$1,$3]-nan}")" '%.2f') / $(fmt "$(calc "${NETC[$1,$2]-nan} / ${NETC[$1,$3]-nan}")" '%.2f')"
}
for wl in "${WORKLOADS[@]}"; do
    echo "- $wl: memtrack --no-stacks / placed floor $(ratio "$wl" memtrack-nostacks floor);" \
        "memtrack --no-stacks --probe-at-entry / entry floor $(ratio "$wl" memtrack-entry floor-entry);" \
        "placement saves $(fmt "$(calc "${NET[$wl,memtrack-entry]-nan} - ${NET[$wl,memtrack-nostacks]}")" '%.2f') / $(fmt "$(calc "${NETC[$wl,memtrack-entry]-nan} - ${NETC[$wl,memtrack-nostacks]}")" '%.2f') us/alloc;" \
        "memtrack / bpftrace $(ratio "$wl" memtrack bpftrace); memtrack --no-stacks / bpftrace $(ratio "$wl" memtrack-nostacks bpftrace);" \
        "stack capture: memtrack / --no-stacks $(ratio "$wl" memtrack memtrack-nostacks);" \
        "memtrack (CFI walk) / placed floor $(ratio "$wl" memtrack floor); memtrack --unwind fp / placed floor $(ratio "$wl" memtrack-fp floor);" \
        "a wake-up per record (--wakeup-fill 0) / --no-stacks $(ratio "$wl" memtrack-wakeall memtrack-nostacks)"
done
end_section
