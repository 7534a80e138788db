#!/bin/bash
# Runs inside a guest booted by scripts/kernels.sh for scripts/bench.sh --kernels (and on the host
# for its own kernel): the per-pair cost of `flood 1 N` (N malloc+free pairs) under memtrack
# --no-stacks, under memtrack with stacks and under the trap floor (empty BPF programs at
# memtrack's placed offsets, with the mechanism this kernel has: uprobe_multi or perf-event
# uprobes), each net of the same run at size 2 and of the untracked run, so start-up and teardown
# (seconds under TCG on 6.1) drop out. Prints "mt-bench TOOL SECONDS_AT_N SECONDS_AT_2" (medians)
# for the host to turn into ratios: TCG's absolute times mean nothing, their ratios do.
# From the kernel command line (the environment here): mt_bench_n (default 400000),
# mt_bench_reps (default 3).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # MEMTRACK, BIN, probe_sites_of, floor_args, run, median
N="${mt_bench_n:-400000}"
REPS="${mt_bench_reps:-3}"
export LC_ALL=C MEMTRACK_NO_SUMMARY=1
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-kbench.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/out" "$WORK/t" "$WORK/stats" "$WORK/log"
export MEMTRACK_CACHE_DIR="$WORK/cache"
echo "mt-bench kernel $(uname -r) $N"
# The mechanism memtrack picks here (memtrack doctor --json: yes or no). Its status is not this
# script's: a kernel whose verifier refuses the programs still says what it has.
"$MEMTRACK" doctor --json >"$WORK/doctor.json" || true
jq -r '.features | "mt-bench uprobe_multi \(if .uprobe_multi.present then "yes" else "no" end)",
    "mt-bench send_signal_task \(if .send_signal_task.present then "yes" else "no" end)"' "$WORK/doctor.json"
doctor_error=$(jq -r 'if .bpf_programs.loaded then empty else .bpf_programs.error end' "$WORK/doctor.json")
[[ -z "$doctor_error" ]] || warning "memtrack doctor: $doctor_error"
# Through files: the guest has no /dev/fd for a process substitution.
probe_sites_of "$BIN/flood" >"$WORK/log/sites.json"
floor_args placed >"$WORK/floor.args"
# shellcheck disable=SC2034  # read by lib.sh's run
mapfile -t FLOOR_PLACED <"$WORK/floor.args"
tools=(untracked memtrack-nostacks memtrack floor)
for ((REP = 1; REP <= REPS; REP++)); do
    for tool in "${tools[@]}"; do
        for n in "$N" 2; do run "$tool" "pairs.$tool.$n" "$BIN/flood" 1 "$n" >&2; done
    done
done
for tool in "${tools[@]}"; do
    echo "mt-bench $tool $(median "$WORK/t/pairs.$tool.$N") $(median "$WORK/t/pairs.$tool.2")"
done
[[ ! -f "$WORK/warnings" ]] || sed 's/^/mt-bench-warning /' "$WORK/warnings"
