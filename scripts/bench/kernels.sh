# shellcheck shell=bash
# --kernels: the per-pair cost against each kernel's own trap floor, on this machine's kernel and
# on Debian's kernels booted under qemu (scripts/kernels.sh; MEMTRACK_BENCH_KERNELS, default
# "6.1 6.12"), where the probes' mechanism differs: ratios only, TCG's absolute times mean nothing.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

begin_section "Kernels: per-pair cost against each kernel's trap floor"
echo "\`flood 1 N\` (N malloc+free pairs) in each kernel (scripts/bench/kernel_guest.sh): each tool's time at N"
echo "less its time at 2 (start-up and teardown drop out), less the same for the untracked run, medians of"
echo "$REPS runs; the floor: empty BPF programs at memtrack's placed offsets with the mechanism that kernel"
echo "has (uprobe_multi links, else one perf-event uprobe per site). Guests: qemu TCG, 2 vCPU, the host's"
echo "build over 9p: only the ratios mean something there. The pair at the floor over the untracked pair is"
echo "n/a where the untracked net is not above its noise (an untracked pair takes tens of ns)."
echo
echo "| kernel | where | uprobe_multi | bpf_send_signal_task | N | pair at the floor / untracked pair | memtrack --no-stacks / floor | memtrack / floor |"
echo "|--------|-------|--------------|----------------------|--:|----------------------------------:|-----------------------------:|-----------------:|"
# One row from kernel_guest.sh's "mt-bench ..." lines in FILE.
kernel_row() {
    local file="$1" where="$2" kernel n multi signal
    read -r _ _ kernel n < <(grep -m1 '^mt-bench kernel ' "$file" 2>/dev/null) || { echo "| ? | $where | no result (see $file) | | | | | |"; return; }
    multi=$(awk '$1 == "mt-bench" && $2 == "uprobe_multi" { print $3 }' "$file")
    signal=$(awk '$1 == "mt-bench" && $2 == "send_signal_task" { print $3 }' "$file")
    net() { awk -v t="$1" '$1 == "mt-bench" && $2 == t { print $3 - $4 }' "$file"; }
    local u ns st fl
    u=$(net untracked) ns=$(net memtrack-nostacks) st=$(net memtrack) fl=$(net floor)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$kernel" "$where" "$multi" "$signal" "$n" \
        "$(fmt "$(awk -v u="$u" -v f="$fl" 'BEGIN { if (u > 0) print f / u; else print "nan" }')" '%.2f')" \
        "$(fmt "$(calc "($ns - $u) / ($fl - $u)")" '%.2f')" \
        "$(fmt "$(calc "($st - $u) / ($fl - $u)")" '%.2f')"
    grep '^mt-bench-warning ' "$file" | sed 's/^mt-bench-warning /  warning: /' >>"$WORK/warnings" || true
}
KERNEL_N=$(scaled 400000)
mt_bench_n=$((KERNEL_N * 4)) mt_bench_reps=$REPS "$BENCH_DIR/kernel_guest.sh" >"$WORK/log/kernel.host.log" 2>"$WORK/log/kernel.host.err" ||
    warning "kernel_guest.sh on the host exited with $? (see $WORK/log/kernel.host.err)"
kernel_row "$WORK/log/kernel.host.log" "this machine"
for v in ${MEMTRACK_BENCH_KERNELS:-6.1 6.12}; do
    echo "bench: booting $v (scripts/kernels.sh)" >&2
    MEMTRACK_KERNELS_SCRIPT="$BENCH_DIR/kernel_guest.sh" MEMTRACK_KERNELS_ARGS="mt_bench_n=$KERNEL_N mt_bench_reps=$REPS" \
        "$ROOT/scripts/kernels.sh" "$v" >"$WORK/log/kernel.$v.log" 2>&1 ||
        warning "scripts/kernels.sh $v for the benchmark exited with $? (see $WORK/log/kernel.$v.log)"
    kernel_row "$WORK/log/kernel.$v.log" "qemu TCG"
done
echo
echo "(The host runs 4x N: its pairs are 5-20x cheaper. memtrack's ratio includes the ring, the consumer"
echo "and, with stacks, the walk: what a kernel's mechanism changes is the floor under it and the column"
echo "of shared probes' cost that other processes pay, docs/BENCHMARKS.md \"Other processes\".)"
end_section
