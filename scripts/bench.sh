#!/usr/bin/env bash
# memtrack's benchmarks, in one run (docs/BENCHMARKS.md shows a run and how to read it).
#
#   scripts/bench.sh [--real] [--overhead] [--pressure] [--drain] [--stacks] [--symbols] [--consumer] [--others]
#                    [--report] [--html] [--allocators] [--cfi] [--dlopen] [--rss] [--kernels] [--reps N] [--scale F] [--system-libc] [--keep]
#
# Sections (all of them when none is named):
#   --real      programs people run: gcc -O2 -c of a generated file, Debian's python3 (JSON, regular
#               expressions), node building objects, sqlite3 inserting rows, a Rust release binary
#               (bench/real_rust): untracked, the trap floor on the probes memtrack placed in each,
#               memtrack --no-stacks, with stacks (CFI and --unwind fp) and heaptrack: wall, CPU,
#               events, cost over the floor; then one run each with kernel.bpf_stats_enabled and
#               --time-bpf-parts: BPF ns per call of each program and per event of each part.
#   --overhead  each workload (flood, churn_c, churn_cxx, churn_nofp: churn_c without frame pointers,
#               8 frames below main) untracked and under memtrack (default: stacks walked by CFI,
#               --unwind fp, --no-stacks, --probe-at-entry --no-stacks), heaptrack, bpftrace (a counting
#               uprobe script), valgrind massif, and the trap floor (bench/trap_floor: empty BPF
#               programs on memtrack's probes, at its placed offsets and at the entries).
#   --pressure  a small ring and a slowed consumer, resume at 25 % (default) vs resume at empty;
#               paused fraction at default settings; a ring-size sweep; the seed's experiments
#               (8 threads, and 16 processes, x 400000 malloc+free, stacks on, drains every 0.5 s).
#   --drain     `memtrack ctl drain` latency during a flood, default consumer and slowed ones.
#   --stacks    ring bytes per allocation event with few and many call stacks, the estimate
#               without deduplication, the symbolizer's throughput, the cost of stack capture.
#   --symbols   the Resolver alone (bench/symbol_throughput) on node's executable and on libc: module
#               load time, then new (distinct) addresses per CPU-second; and a node script
#               (NODE_JS below) untracked, under memtrack --no-stacks and with stacks: wall time, the
#               symbolizer's CPU time, and how long the stacks file took to finish after the exit.
#               Installs Debian's nodejs when node is missing.
#   --consumer  records per second through RingConsumer and Writer alone (bench/consumer_throughput).
#   --others    untracked processes (a malloc loop, a syscall loop) beside a memtrack that tracks an
#               idle command: alone, beside memtrack (per-process probes), beside
#               --system-wide-probes; and what per-process probes cost a tracked shell's forks.
#   --report    `memtrack report` on a synthetic recording of 50 M events (bench/report_artifact):
#               events/s and max RSS per output format.
#   --html      the html report of a 10 M-event recording (bench/report_artifact) in headless
#               Chromium (tests/unit/html_timing): its load and each action's time, in ms.
#   --allocators  the flood linked against glibc, jemalloc and mimalloc: net us per malloc+free pair
#               under memtrack and at the placed trap floor of each; what holding new code until it
#               is probed adds to a dlopen+dlclose and to an exec (bench/dlopen_loop, sh + /bin/true).
#   --cfi       unwind tables (bench/cfi_tables, issue 12): build time, rows and bytes of the table
#               built from the CFI of libc, libstdc++, python3.11, node and cc1 (those installed).
#   --dlopen    one process dlopening 1000, 5000 and 10000 distinct small libraries (tests/progs/
#               dlopen_many), untracked, memtrack --no-stacks and memtrack: the hold at each new
#               object must cost O(new objects); target: memtrack within 3x of untracked at each size.
#   --rss       what the timeline's RSS records cost a page-fault-heavy program (bench/touch_pages:
#               4 GiB of anonymous memory faulted in 4 KiB pages): untracked, memtrack --no-stacks
#               --no-rss, with RSS records at the default granularity and at every change.
#   --kernels   the per-pair cost (flood 1 N) against each kernel's own trap floor, net of start-up:
#               this machine's kernel, and Debian's 6.1 and 6.12 booted under qemu TCG
#               (scripts/kernels.sh; MEMTRACK_BENCH_KERNELS="6.1 6.12" names others), where the
#               probes' mechanism differs (perf-event uprobes on 6.1, shared uprobe_multi on 6.12).
#               Ratios only: TCG's absolute times mean nothing. About 10 minutes.
# Options:
#   --reps N       repetitions of every timed run; medians are reported (default 3)
#   --scale F      multiply every workload size by F (e.g. 0.1 to try the script quickly)
#   --system-libc  run everything on the system's C and C++ libraries (see "Isolation" below)
#   --keep         keep the work folder (stats JSON, logs, artifacts of the last runs)
# Environment: MEMTRACK_BENCH_WORKLOADS and MEMTRACK_BENCH_TOOLS (space-separated names) run a part
# of the overhead section, e.g. MEMTRACK_BENCH_TOOLS="untracked memtrack memtrack-nostacks floor".
#
# It takes the build lock (MEMTRACK_BUILD_LOCK, default /tmp/memtrack-build.lock; empty: none) for the
# whole run, builds (scripts/build.sh) and apt-installs the peers that are missing: heaptrack,
# valgrind, bpftrace, jq, time. Needs root. The report (markdown) goes to stdout, progress to stderr.
#
# Isolation: bpftrace's and the trap floor's probes (and memtrack's with --system-wide-probes or
# past 4 live tracked processes) are system-wide uprobes on the C library's file. Such a tool
# running elsewhere on the machine makes every process here pay traps, "untracked" included, and
# ours slow every process there. So by default the
# workloads and the tools run on private copies of libc, libstdc++, libm and libgcc_s
# (LD_LIBRARY_PATH): the same code in another file, which only the benchmark's processes map.
# memtrack finds and probes the copy by itself (it probes the libc it has loaded).
#
# Timing: wall time of the whole command, from the shell ($EPOCHREALTIME), and in the overhead
# section also its CPU time (user + system of the tool and all it reaped, the command included),
# which depends less on the machine's load. Each tool also runs at size 1: "start-up+teardown" is
# wall T(1) - untracked wall T(1), and the net cost per allocation is
# (T(N) - T(1)) / (A(N) - A(1)) minus the same for the untracked run, where A is the number of
# allocation events memtrack counts (stats allocation_events of the --no-stacks runs).
#
# Code: this file runs the steps in order. scripts/bench/lib.sh holds what the sections share
# (options, sizes, build, peers, work folder, trap floor, timed runs, numbers, header and footer);
# scripts/bench/SECTION.sh measures and prints one section; they run in lib.sh's SECTIONS order.
set -euo pipefail
export LC_ALL=C
# memtrack track's closing summary reads the artifact once more: not part of what is measured here.
export MEMTRACK_NO_SUMMARY=1
SCRIPT_T0=$EPOCHREALTIME

# shellcheck source-path=SCRIPTDIR source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/bench/lib.sh"
parse_args "$@"
[[ $EUID -eq 0 ]] || die "needs root (memtrack, bpftrace and the trap floor load BPF programs)"
workload_sizes
lock_and_build
install_peers
make_work
private_libraries
place_floor

print_header
for s in "${SECTIONS[@]}"; do
    # shellcheck source=/dev/null  # one of scripts/bench/*.sh, each checked on its own
    if on "$s"; then . "$BENCH_DIR/$s.sh"; fi
done
print_footer "$SCRIPT_T0"
