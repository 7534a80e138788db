# shellcheck shell=bash
# --report: `memtrack report` on a synthetic recording, per output format.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# `memtrack report` reading a recording made by bench/report_artifact (memtrack's own encoders):
# one pass over the events, memory bounded by the live blocks and the distinct stacks.
# CPU is user + system (GNU time): on a shared machine it moves less than wall time. Two floors
# on the same file: `zstd -d` alone (decompression, the part no decoder change removes) and
# bench/artifact_read (read_artifact: decompression and decoding, no analysis).
# MEMTRACK_REPORT_BASE=BIN also times another memtrack binary (json and folded) in the same
# repetitions, interleaved: a ratio measured under the same load.
begin_section "Report"
rdir="$WORK/report"
mkdir -p "$rdir"
"$BIN/report_artifact" "$rdir/big" "$REPORT_EVENTS" >"$WORK/log/report_artifact.log" 2>&1 ||
    die "bench/report_artifact failed: $(tail -n 1 "$WORK/log/report_artifact.log")"
big="$rdir/big.MemtrackArtifact.msgpack"
base="${MEMTRACK_REPORT_BASE:-}"
formats=(json folded text pprof html)
runs=("${formats[@]}" zstd-d artifact-read)
[[ -n "$base" ]] && runs+=(base-json base-folded)
# One timed run (lib.sh's gnu_timed): name, then the command; a failure is a warning.
report_time() {
    local name="$1" rc=0
    shift
    gnu_timed "report.$name" "$@" || rc=$?
    ((rc == 0)) || warning "report run $name rep $REP: exited with $rc ($(tail -n 1 "$WORK/log/report.$name.$REP.log"))"
}
for ((REP = 1; REP <= REPS; ++REP)); do
    for format in "${formats[@]}"; do
        report_time "$format" "$MEMTRACK" report "$big" --format "$format" -o "$rdir/out.$format"
        if [[ -n "$base" && ( "$format" == json || "$format" == folded ) ]]; then
            report_time "base-$format" "$base" report "$big" --format "$format" -o "$rdir/base.$format"
        fi
    done
    report_time zstd-d zstd -q -d -c "$big"
    report_time artifact-read "$BIN/artifact_read" "$big"
done
echo "bench/report_artifact $REPORT_EVENTS: $(cat "$WORK/log/report_artifact.log")"
echo "\`memtrack report ARTIFACT --format F -o FILE\`, medians of $REPS runs (one thread; CPU = user + sys from GNU time)."
echo "zstd-d: \`zstd -d -c ARTIFACT\` alone; artifact-read: bench/artifact_read ARTIFACT (decompress and decode, no analysis)."
[[ -n "$base" ]] && echo "base-*: $base ($("$base" --version 2>/dev/null | head -n 1)) on the same file, interleaved."
echo
echo "| run | wall (s) | CPU (s) | M events/s (wall) | M events per CPU-s | max RSS (MiB) | output (KiB) |"
echo "|-----|---------:|--------:|------------------:|-------------------:|--------------:|-------------:|"
for name in "${runs[@]}"; do
    wall=$(median "$WORK/t/report.$name.wall")
    cpu=$(median "$WORK/t/report.$name.cpu")
    out="$rdir/out.$name"
    [[ "$name" == base-* ]] && out="$rdir/base.${name#base-}"
    printf '| %-12s | %8s | %7s | %17s | %18s | %13s | %12s |\n' "$name" "$(fmt "$wall" '%.2f')" "$(fmt "$cpu" '%.2f')" \
        "$(fmt "$(calc "$REPORT_EVENTS / $wall / 1e6")" '%.2f')" "$(fmt "$(calc "$REPORT_EVENTS / $cpu / 1e6")" '%.2f')" \
        "$(fmt "$(calc "$(median "$WORK/t/report.$name.rss") / 1024")" '%.0f')" \
        "$(fmt "$(calc "$(stat -c %s "$out" 2>/dev/null || echo nan) / 1024")" '%.0f')"
done
if [[ -n "$base" ]]; then
    for format in json folded; do
        cmp -s "$rdir/out.$format" "$rdir/base.$format" && same=identical || same="**different**"
        echo
        echo "$format: CPU $(fmt "$(calc "$(median "$WORK/t/report.$format.cpu") / $(median "$WORK/t/report.base-$format.cpu")")" '%.2f')x the base's; output $same."
    done
fi
end_section
