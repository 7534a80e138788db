# shellcheck shell=bash
# --others: untracked processes beside a tracking memtrack (per-process and system-wide probes),
# and what per-process probes cost a tracked shell's forks.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# An untracked flood while memtrack tracks `a command that waits`: the probes memtrack attaches
# are on the same library file the flood maps (the private copy, or the system's).
others_run() { # TAG MEMTRACK-OPTIONS... : times the untracked flood and syscalls beside a memtrack run
    local tag="$1" stop="$WORK/others.stop" log="$WORK/log/others.log" sock="$WORK/others.sock" mt
    shift
    rm -f "$stop" "$sock"
    "$MEMTRACK" track -o "$WORK/out" --no-stacks --socket "$sock" "$@" -- bash -c "while [ ! -e '$stop' ]; do sleep 0.02; done" \
        >/dev/null 2>"$log" &
    mt=$!
    # Started once the command's probes are attached: its process counted as probed (own links)
    # or on the shared ones, in the live stats.
    for ((i = 0; i < 500; ++i)); do
        "$MEMTRACK" ctl --socket "$sock" --timeout 5 stats 2>/dev/null |
            jq -e '.stats.processes_probed + .stats.processes_on_shared_probes >= 1' >/dev/null 2>&1 && break
        sleep 0.02
    done
    others_time "$tag"
    touch "$stop"
    wait "$mt" || warning "$tag rep $REP: memtrack exited with $?"
    clear_out
}

others_time() { # TAG: the untracked flood, then SYSCALLS_N one-byte reads and writes (dd)
    local t0
    t0=$(now)
    "$BIN/flood" 1 "$FLOOD_N" >/dev/null
    elapsed_s "$t0" "$(now)" >>"$WORK/t/$1"
    t0=$(now)
    dd if=/dev/zero of=/dev/null bs=1 count="$SYSCALLS_N" status=none
    elapsed_s "$t0" "$(now)" >>"$WORK/t/$1.sys"
}

begin_section "Other processes"
for ((REP = 1; REP <= REPS; ++REP)); do
    others_time others__alone
    others_run others__perprocess
    others_run others__systemwide --system-wide-probes
    # The price of per-process probes: every new process waits for its own links.
    forks="for i in \$(seq $FORKS_N); do /bin/true; done"
    t0=$(now); bash -c "$forks"; elapsed_s "$t0" "$(now)" >>"$WORK/t/forks__alone"
    mt_run forks__perprocess --no-stacks -- bash -c "$forks"
    mt_run forks__systemwide --no-stacks --system-wide-probes -- bash -c "$forks"
done
echo "Not tracked, run by the shell while \`memtrack track --no-stacks\` tracks a command that only waits:"
echo "\`flood 1 $FLOOD_N\` ($FLOOD_N malloc+free pairs) and \`dd bs=1 count=$SYSCALLS_N\` ($((2 * SYSCALLS_N)) read/write"
echo "syscalls). Medians of $REPS."
echo
echo "| beside                              | flood wall (s) | slowdown | us per pair above alone | dd wall (s) | slowdown | us per syscall above alone |"
echo "|-------------------------------------|---------------:|---------:|------------------------:|------------:|---------:|---------------------------:|"
alone=$(median "$WORK/t/others__alone")
salone=$(median "$WORK/t/others__alone.sys")
printf '| %-35s | %14s | %8s | %23s | %11s | %8s | %26s |\n' "nothing" "$(fmt "$alone" '%.3f')" 1x - "$(fmt "$salone" '%.3f')" 1x -
for m in perprocess systemwide; do
    w=$(median "$WORK/t/others__$m")
    sw=$(median "$WORK/t/others__$m.sys")
    label="memtrack (per-process probes)"
    [[ $m == systemwide ]] && label="memtrack --system-wide-probes"
    printf '| %-35s | %14s | %8s | %23s | %11s | %8s | %26s |\n' "$label" "$(fmt "$w" '%.3f')" "$(fmt "$(calc "$w / $alone")" '%.1fx')" \
        "$(fmt "$(calc "($w - $alone) / $FLOOD_N * 1e6")" '%.2f')" "$(fmt "$sw" '%.3f')" \
        "$(fmt "$(calc "$sw / $salone")" '%.2fx')" "$(fmt "$(calc "($sw - $salone) / (2 * $SYSCALLS_N) * 1e6")" '%.3f')"
done
echo
echo "What per-process probes cost instead: a tracked shell running /bin/true $FORKS_N times (each new process"
echo "is held until its links exist; its links close when it exits). Wall time of the whole memtrack run,"
echo "start-up and teardown included; held and attach times from the stats (medians of the runs' p50 / max)."
echo
echo "| run                                       | wall (s) | ms per process above untracked | spawn held p50 / max (ms) | attach p50 (ms) |"
echo "|-------------------------------------------|---------:|-------------------------------:|--------------------------:|----------------:|"
falone=$(median "$WORK/t/forks__alone")
printf '| %-41s | %8s | %30s | %25s | %15s |\n' "untracked" "$(fmt "$falone" '%.3f')" - - -
for m in perprocess systemwide; do
    w=$(median "$WORK/t/forks__$m")
    label="memtrack --no-stacks"
    [[ $m == systemwide ]] && label="memtrack --no-stacks --system-wide-probes"
    printf '| %-41s | %8s | %30s | %25s | %15s |\n' "$label" "$(fmt "$w" '%.3f')" \
        "$(fmt "$(calc "($w - $falone) / $FORKS_N * 1e3")" '%.2f')" \
        "$(fmt "$(stat_median "forks__$m" .spawn_held_ms.p50)" '%.2f') / $(fmt "$(stat_median "forks__$m" .spawn_held_ms.max)" '%.1f')" \
        "$(fmt "$(stat_median "forks__$m" .probe_attach_ms.p50)" '%.2f')"
done
end_section
