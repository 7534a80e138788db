# shellcheck shell=bash
# --pressure: small rings with a slowed consumer (resume at 1/4 vs at empty), the default settings,
# a ring-size sweep and the seed's storms with drains.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# storm_run TAG MEMTRACK-OPTIONS... -- CMD...: mt_run with --socket, timing `memtrack ctl drain`
# every 0.5 s while it runs (milliseconds, one a line, to $WORK/t/TAG.drain).
storm_run() {
    local tag="$1" sock="$WORK/storm.sock" rc=0 t0 d0 d1 pid
    shift
    local stats="$WORK/stats/${tag}__r$REP.json" log="$WORK/log/${tag}__r$REP.log"
    rm -f "$sock"
    t0=$(now)
    "$MEMTRACK" track --socket "$sock" -o "$WORK/out" --stats "$stats" "$@" >/dev/null 2>"$log" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.5
        d0=$(now)
        "$MEMTRACK" ctl --socket "$sock" --timeout 60 drain >/dev/null 2>&1 || continue
        d1=$(now)
        elapsed_ms "$d0" "$d1" >>"$WORK/t/$tag.drain"
    done
    wait "$pid" || rc=$?
    timed_end "$tag" "$t0"
    if ((rc != 0)); then
        echo "bench: warning: memtrack $* exited with $rc" >&2
        warning "$tag rep $REP: exited with $rc ($(first_error "$log"))"
    fi
    return 0
}

begin_section "Pressure"
# Two small-ring settings: a ring smaller than one chunk (1024 records), the rings the pressure
# tests use, and a ring of about 18 chunks, where resuming at 25 % and at empty differ.
declare -A PCFG=([a]="--ring-size 64K --consumer-delay-us 2000" [b]="--ring-size 1M --consumer-delay-us 5000")
for ((REP = 1; REP <= REPS; ++REP)); do
    for c in a b; do
        # shellcheck disable=SC2086  # options are words
        mt_run "pressure_${c}__resume0" --no-stacks ${PCFG[$c]} --resume-fill 0 -- "$BIN/flood" 2 "$PRESSURE_N"
        # shellcheck disable=SC2086
        mt_run "pressure_${c}__default" --no-stacks ${PCFG[$c]} -- "$BIN/flood" 2 "$PRESSURE_N"
    done
    mt_run pressure__defaults64M -- "$BIN/flood" 2 "$DEFAULT_N"
done
echo "flood 2 $PRESSURE_N (2 writers), memtrack --no-stacks with a small ring and a slowed consumer, resuming"
echo "paused writers at 25 % fill (the default) or only at empty (--resume-fill 0); medians of $REPS runs:"
echo
echo "| settings | resume at | wall (s) | paused_fraction | stop_to_resume p50 (ms) | p99 (ms) | chunk_ms max | pressure_stops | dropped |"
echo "|----------|-----------|---------:|----------------:|------------------------:|---------:|-------------:|---------------:|--------:|"
for c in a b; do
    for v in resume0 default; do
        p="pressure_${c}__$v"
        printf '| %-40s | %-9s | %8s | %15s | %23s | %8s | %12s | %14s | %7s |\n' "${PCFG[$c]}" "$([[ $v == resume0 ]] && echo "empty (0)" || echo "0.25")" \
            "$(fmt "$(median "$WORK/t/$p")" '%.2f')" "$(fmt "$(stat_median "$p" .paused_fraction)" '%.3f')" \
            "$(fmt "$(stat_median "$p" .stop_to_resume_ms.p50)" '%.1f')" "$(fmt "$(stat_median "$p" .stop_to_resume_ms.p99)" '%.1f')" \
            "$(fmt "$(stat_median "$p" .chunk_ms.max)" '%.1f')" "$(fmt "$(stat_median "$p" .pressure_stops)" '%.0f')" \
            "$(fmt "$(stat_median "$p" .dropped)" '%.0f')"
    done
done
echo
for c in a b; do
    echo "Wall-time ratio resume-at-empty / resume-at-0.25, ${PCFG[$c]}:" \
        "$(fmt "$(calc "$(median "$WORK/t/pressure_${c}__resume0") / $(median "$WORK/t/pressure_${c}__default")")" '%.2f')x"
done
echo
p=pressure__defaults64M
echo "Default settings (64 MiB ring, stacks on), flood 2 $DEFAULT_N: wall $(fmt "$(median "$WORK/t/$p")" '%.2f') s," \
    "paused_fraction $(fmt "$(stat_median "$p" .paused_fraction)" '%.4f'), pressure_stops $(fmt "$(stat_median "$p" .pressure_stops)" '%.0f')," \
    "max_fill $(fmt "$(stat_median "$p" .max_fill)" '%.4f'), dropped $(fmt "$(stat_median "$p" .dropped)" '%.0f')."
echo
REP=1
for rs in 4M 16M 64M; do
    mt_run "sweep__$rs" --no-stacks --ring-size "$rs" -- "$BIN/flood" 2 "$DEFAULT_N"
    mt_run "sweepslow__$rs" --no-stacks --ring-size "$rs" --consumer-delay-us 5000 -- "$BIN/flood" 2 "$DEFAULT_N"
done
echo "Ring-size sweep, flood 2 $DEFAULT_N, --no-stacks, one run each; memory: the event ring (mapped by"
echo "memtrack and the kernel) plus the 16 MiB stacks ring when stacks are on; max RSS of memtrack (GNU time):"
echo
echo "| ring | consumer   | wall (s) | paused_fraction | max_fill | pressure_stops | dropped | max RSS (MiB) |"
echo "|-----:|------------|---------:|----------------:|---------:|---------------:|--------:|--------------:|"
for rs in 4M 16M 64M; do
    for kind in sweep sweepslow; do
        p="${kind}__$rs"
        printf '| %4s | %-10s | %8s | %15s | %8s | %14s | %7s | %13s |\n' "$rs" "$([[ $kind == sweep ]] && echo default || echo "5 ms/chunk")" \
            "$(fmt "$(median "$WORK/t/$p")" '%.2f')" "$(fmt "$(stat_median "$p" .paused_fraction)" '%.4f')" \
            "$(fmt "$(stat_median "$p" .max_fill)" '%.3f')" "$(fmt "$(stat_median "$p" .pressure_stops)" '%.0f')" \
            "$(fmt "$(stat_median "$p" .dropped)" '%.0f')" "$(fmt "$(calc "$(tail -n1 "$WORK/log/${p}__r1.log.rss") / 1024")" '%.0f')"
    done
done
echo
# The seed's experiments: alloc_storm (8 threads released by a barrier, each STORM_N
# malloc+free) and alloc_storm_procs (16 processes), stacks on, with `memtrack ctl drain` every
# 0.5 s (each timed), at default settings and with a slowed consumer, resuming at 1/4 or at empty.
declare -A SCFG=([defaults]="" [slowed]="--ring-size 1M --consumer-delay-us 2000")
declare -A SDELAY=([defaults]=0 [slowed]=2000)
declare -A SCMD=([threads]="1 $STORM_N 8" [procs]="16 $STORM_N 1")
for ((REP = 1; REP <= REPS; ++REP)); do
    for w in threads procs; do
        for c in defaults slowed; do
            for v in quarter empty; do
                resume=()
                [[ $v == empty ]] && resume=(--resume-fill 0)
                # shellcheck disable=SC2086  # options and the command's arguments are words
                storm_run "storm_${w}_${c}_$v" ${SCFG[$c]} ${resume[@]+"${resume[@]}"} -- "$BIN/flood" ${SCMD[$w]}
            done
        done
    done
done
echo "The seed's experiments: \`flood 1 $STORM_N 8\` (8 threads, alloc_storm) and \`flood 16 $STORM_N\` (16 processes,"
echo "alloc_storm_procs), stacks on, \`memtrack ctl drain\` every 0.5 s. The consumer-bound limit is records x (chunk p50 +"
echo "the per-chunk delay) / 1024: the time the consumer alone needs. Consumer idle: the events consumer waiting on an"
echo "empty ring. Medians of $REPS runs."
echo
echo "| workload | settings | resume at | wall (s) | consumer-bound limit (s) | wall / limit | pause per stop p50 / p99 (ms) | consumer idle (s) | paused_fraction | drain p50 / p99 (ms) | stops = resumes | dropped |"
echo "|----------|----------|-----------|---------:|-------------------------:|-------------:|------------------------------:|------------------:|----------------:|---------------------:|----------------:|--------:|"
for w in threads procs; do
    for c in defaults slowed; do
        for v in quarter empty; do
            p="storm_${w}_${c}_$v"
            wall=$(median "$WORK/t/$p")
            limit=$(stat_median "$p" "(.records * (.chunk_ms.p50 + ${SDELAY[$c]} / 1000) / 1000 / 1024)")
            printf '| %-8s | %-8s | %-9s | %8s | %24s | %12s | %29s | %17s | %15s | %20s | %15s | %7s |\n' "$w" "$c" \
                "$([[ $v == empty ]] && echo "empty" || echo "1/4")" "$(fmt "$wall" '%.2f')" "$(fmt "$limit" '%.2f')" \
                "$(fmt "$(calc "$wall / $limit")" '%.2f')" \
                "$(fmt "$(stat_median "$p" .stop_to_resume_ms.p50)" '%.1f') / $(fmt "$(stat_median "$p" .stop_to_resume_ms.p99)" '%.1f')" \
                "$(fmt "$(stat_median "$p" .consumer_idle_s)" '%.3f')" "$(fmt "$(stat_median "$p" .paused_fraction)" '%.3f')" \
                "$(fmt "$(percentile "$WORK/t/$p.drain" 0.5)" '%.1f') / $(fmt "$(percentile "$WORK/t/$p.drain" 0.99)" '%.1f')" \
                "$(stat_median "$p" 'if .pressure_stops == .pressure_resumes then 1 else 0 end' | awk '{ print ($1 == 1 ? "yes" : "NO") }')" \
                "$(fmt "$(stat_median "$p" .dropped)" '%.0f')"
        done
    done
done
for w in threads procs; do
    echo
    echo "Wall-time ratio resume-at-empty / resume-at-1/4, $w, slowed consumer:" \
        "$(fmt "$(calc "$(median "$WORK/t/storm_${w}_slowed_empty") / $(median "$WORK/t/storm_${w}_slowed_quarter")")" '%.2f')x;" \
        "pause per stop p50 ratio: $(fmt "$(calc "$(stat_median "storm_${w}_slowed_empty" .stop_to_resume_ms.p50) / $(stat_median "storm_${w}_slowed_quarter" .stop_to_resume_ms.p50)")" '%.2f')x"
done
end_section
