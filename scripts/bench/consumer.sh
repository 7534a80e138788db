# shellcheck shell=bash
# --consumer: records per second through RingConsumer and Writer alone (bench/consumer_throughput).
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# bench/consumer_throughput: memtrack's RingConsumer and Writer alone, fed from a BPF program run
# with BPF_PROG_TEST_RUN (no uprobes, no tracked process), the artifact read back and checked.
# ct_run TAG OPTIONS...: one run, its JSON in stats/TAG__rREP.json, a warning when it failed.
ct_run() {
    local tag="$1" rc=0
    shift
    local stats="$WORK/stats/${tag}__r$REP.json" log="$WORK/log/${tag}__r$REP.log"
    "$BIN/consumer_throughput" --records "$CONSUMER_RECORDS" -o "$WORK/out" --json "$stats" "$@" >"$log" 2>&1 || rc=$?
    ((rc == 0)) || warning "$tag rep $REP: consumer_throughput exited with $rc ($(grep -m1 -e FAILED -e error "$log" || true))"
}

begin_section "Consumer"
for ((REP = 1; REP <= REPS; ++REP)); do
    ct_run consumer__one           # one thread runs the io_context: consumer and Writer share it
    ct_run consumer__split --split # consumer and Writer on a thread each, to time them apart
done
echo "bench/consumer_throughput --records $CONSUMER_RECORDS: RingConsumer + Writer (memtrack's classes, default"
echo "ring, chunk and zstd level) fed by a BPF program run with BPF_PROG_TEST_RUN that writes malloc/free"
echo "records with bpf_loop, keeping the ring below 3/4 full; records/s = records / (first record written .."
echo "artifact finished). The artifact is read back: every record, in order, fields as written. Medians of $REPS runs:"
echo
echo "| threads   | M records/s | wall (s) | io thread CPU (s) | M records per io CPU-s | consumer CPU (s) | Writer CPU (s) | feeder CPU (s) | artifact (MiB) | read back | dropped |"
echo "|-----------|------------:|---------:|------------------:|-----------------------:|-----------------:|---------------:|---------------:|---------------:|----------:|--------:|"
for p in consumer__one consumer__split; do
    rb=$(stat_median "$p" .events_read_back)
    ok=$(stat_median "$p" '(if .ok then 1 else 0 end)')
    printf '| %-9s | %11s | %8s | %17s | %22s | %16s | %14s | %14s | %14s | %9s | %7s |\n' \
        "$([[ $p == *split ]] && echo "2 (split)" || echo 1)" \
        "$(fmt "$(stat_median "$p" '.records_per_s / 1e6')" '%.2f')" "$(fmt "$(stat_median "$p" .seconds)" '%.3f')" \
        "$(fmt "$(stat_median "$p" .io_cpu_s)" '%.3f')" "$(fmt "$(stat_median "$p" '.records / .io_cpu_s / 1e6')" '%.2f')" \
        "$(fmt "$(stat_median "$p" '.thread_cpu_s.consumer // "nan"')" '%.3f')" "$(fmt "$(stat_median "$p" '.thread_cpu_s.writer // "nan"')" '%.3f')" \
        "$(fmt "$(stat_median "$p" .feeder_cpu_s)" '%.3f')" "$(fmt "$(stat_median "$p" '.artifact_bytes / 1048576')" '%.1f')" \
        "$( ((ok == 1)) && fmt "$rb" '%.0f' || echo "**FAILED**")" "$(fmt "$(stat_median "$p" .dropped)" '%.0f')"
done
echo
echo "M records per io CPU-s is what the pipeline sustains on a core of its own; records/s also depends on the"
echo "feeder thread and the rest of the machine getting the other core ($(nproc) cpu(s) here)."
end_section
