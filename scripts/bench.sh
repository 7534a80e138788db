#!/usr/bin/env bash
# memtrack's benchmarks, in one run (docs/BENCHMARKS.md shows a run and how to read it).
#
#   scripts/bench.sh [--overhead] [--pressure] [--drain] [--stacks] [--symbols] [--consumer] [--others]
#                    [--report] [--allocators] [--cfi] [--reps N] [--scale F] [--system-libc] [--keep]
#
# Sections (all of them when none is named):
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
#   --allocators  the flood linked against glibc, jemalloc and mimalloc: net us per malloc+free pair
#               under memtrack and at the placed trap floor of each; what holding new code until it
#               is probed adds to a dlopen+dlclose and to an exec (bench/dlopen_loop, sh + /bin/true).
#   --cfi       unwind tables (bench/cfi_tables, issue 12): build time, rows and bytes of the table
#               built from the CFI of libc, libstdc++, python3.11, node and cc1 (those installed).
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
set -euo pipefail
export LC_ALL=C
# memtrack track's closing summary reads the artifact once more: not part of what is measured here.
export MEMTRACK_NO_SUMMARY=1

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD="$ROOT/build"
MEMTRACK="$BUILD/memtrack"
BIN="$BUILD/bench"
SCRIPT_T0=$EPOCHREALTIME

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() {
    echo "bench: error: $*" >&2
    exit 1
}

# ---- arguments ----
declare -A SECTION=()
REPS=3
SCALE=1
ISOLATE=1
KEEP=0
while (($#)); do
    case "$1" in
    --overhead | --pressure | --drain | --stacks | --symbols | --consumer | --others | --report | --allocators | --cfi) SECTION[${1#--}]=1 ;;
    --reps) REPS="${2:?--reps needs a number}"; shift ;;
    --scale) SCALE="${2:?--scale needs a factor}"; shift ;;
    --system-libc) ISOLATE=0 ;;
    --keep) KEEP=1 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
    shift
done
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
[[ "$SCALE" =~ ^[0-9]*\.?[0-9]+$ ]] || die "--scale must be a positive number"
if ((${#SECTION[@]} == 0)); then
    for s in overhead others pressure drain stacks symbols consumer report allocators cfi; do SECTION[$s]=1; done
fi
on() { [[ -n "${SECTION[$1]:-}" ]]; }
[[ $EUID -eq 0 ]] || die "needs root (memtrack, bpftrace and the trap floor load BPF programs)"

# Workload sizes at --scale 1: each tracked run takes about 1-3 s on a 2-core VM.
scaled() { awk -v n="$1" -v f="$SCALE" 'BEGIN { v = int(n * f); print (v < 2 ? 2 : v) }'; }
FLOOD_N=$(scaled 200000)        # flood 1 FLOOD_N: malloc+free pairs in one writer
CHURN_C_N=$(scaled 150000)      # churn_c: allocation calls
CHURN_CXX_N=$(scaled 4000)      # churn_cxx: rounds of about 27 operator new/delete pairs
PRESSURE_N=$(scaled 50000)      # flood 2 PRESSURE_N under a 64 KiB ring and a slowed consumer
DEFAULT_N=$(scaled 100000)      # flood 2 DEFAULT_N at default settings
DRAIN_N=$(scaled 200000)        # flood 2 DRAIN_N while drains are timed
STORM_N=$(scaled 400000)        # the seed's storms: 8 threads x STORM_N, 16 processes x STORM_N
CALLSITES_N=$(scaled 100000)    # callsites: malloc+free pairs
CONSUMER_RECORDS=$(scaled 20000000)  # records through consumer_throughput
FORKS_N=$(scaled 200)           # a tracked shell starting /bin/true FORKS_N times
REPORT_EVENTS=$(scaled 50000000)  # events in the recording memtrack report reads
ALLOC_N=$(scaled 200000)        # --allocators: flood 1 ALLOC_N per allocator
NEWCODE_N=$(scaled 200)         # --allocators: dlopen+dlclose rounds, and execs of /bin/true
SYSCALLS_N=$(scaled 500000)     # dd bs=1 count=SYSCALLS_N beside memtrack: 2 syscalls each
SYMBOL_ADDRS=$(scaled 100000)   # symbol_throughput: distinct addresses per pass and file
NODE_N=$(scaled 1000000)        # the node script's objects (issue 16's command at --scale 1)
NODE_JS="const a=[]; for(let i=0;i<$NODE_N;i++) a.push({id:i, name:\"n\"+i, v:[i]})"

# ---- build and peers, under the build lock ----
# The lock is held for the whole run (as scripts/flood.sh does): no build or test of the machine
# that takes it overlaps the measurements, and nobody relinks memtrack under them.
# MEMTRACK_BUILD_LOCK names it; empty: no lock.
LOCK="${MEMTRACK_BUILD_LOCK-/tmp/memtrack-build.lock}"
lock_t0=$EPOCHREALTIME
if [[ -n "$LOCK" ]]; then
    echo "bench: waiting for the build lock $LOCK" >&2
    exec 9>"$LOCK"
    flock 9
fi
LOCK_WAIT_S=$(awk -v a="$lock_t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
echo "bench: building (scripts/build.sh)" >&2
build_t0=$EPOCHREALTIME
"$ROOT/scripts/build.sh"
BUILD_S=$(awk -v a="$build_t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
for b in "$MEMTRACK" "$BIN/flood" "$BIN/churn_c" "$BIN/churn_nofp" "$BIN/churn_cxx" "$BIN/callsites" "$BIN/trap_floor" "$BIN/consumer_throughput" \
    "$BIN/report_artifact" "$BIN/artifact_read" "$BIN/symbol_throughput" "$BIN/cfi_tables"; do
    [[ -x "$b" ]] || die "$b was not built"
done

declare -A PKG_OF=([heaptrack]=heaptrack [valgrind]=valgrind [bpftrace]=bpftrace [jq]=jq [/usr/bin/time]=time)
if on symbols; then PKG_OF[node]=nodejs; fi
if on report; then PKG_OF[zstd]=zstd; fi
missing=()
for cmd in "${!PKG_OF[@]}"; do command -v "$cmd" >/dev/null || missing+=("${PKG_OF[$cmd]}"); done
if ((${#missing[@]})); then
    echo "bench: installing ${missing[*]}" >&2
    apt-get update -q >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed"
fi

# ---- work folder, private libraries ----
WORK="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-bench.XXXXXX")"
cleanup() {
    if ((KEEP)); then echo "bench: work folder kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
mkdir -p "$WORK/out" "$WORK/t" "$WORK/stats" "$WORK/log"

lib_path() { ldd "$1" | awk -v n="$2" '$1 == n { print $3 }'; }
if ((ISOLATE)); then
    mkdir -p "$WORK/lib"
    for lib in libc.so.6 libm.so.6 libgcc_s.so.1; do cp "$(lib_path "$MEMTRACK" "$lib")" "$WORK/lib/"; done
    cp "$(lib_path "$BIN/churn_cxx" libstdc++.so.6)" "$WORK/lib/"
    export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
LIBC="$(lib_path "$MEMTRACK" libc.so.6)"
LIBSTDCXX="$(lib_path "$BIN/churn_cxx" libstdc++.so.6)"
[[ -n "$LIBC" && -n "$LIBSTDCXX" ]] || die "cannot find libc.so.6 and libstdc++.so.6"

foreign_uprobe_links() {
    bpftool link list -j 2>/dev/null | jq '[.[] | select(.type == 12 or .type == "uprobe_multi")] | length' 2>/dev/null || echo "?"
}

# ---- the trap floor's probe lists, from memtrack's own placement log ----
# "memtrack: probe free+0x3 at 0x98ef3 in /lib/.../libc.so.6 (entry): skips ..." -> entry probe
# at 0x98ef3 (placed) or 0x98ef0 (entry); "(entry+return)": a return probe there too.
"$MEMTRACK" -v track -o "$WORK/out" --no-stacks -- true 2>"$WORK/log/placement.log" >/dev/null ||
    die "memtrack -v track -- true failed: $(tail -n 3 "$WORK/log/placement.log")"
floor_args() { # placed|entry [LOG] -> -e LIB:OFFS -r LIB:OFFS ... (one word per line)
    local mode="$1" log="${2:-$WORK/log/placement.log}" line rel at off lib how
    local -A seen_e=() seen_r=() e=() r=()
    while read -r line; do
        [[ "$line" =~ probe\ [A-Za-z0-9_]+\+(0x[0-9a-f]+)\ at\ (0x[0-9a-f]+)\ in\ (.+)\ \((entry|entry\+return)\): ]] || continue
        rel="${BASH_REMATCH[1]}" at="${BASH_REMATCH[2]}" lib="${BASH_REMATCH[3]}" how="${BASH_REMATCH[4]}"
        if [[ "$mode" == placed ]]; then off=$((at)); else off=$((at - rel)); fi
        if [[ -z "${seen_e[$lib:$off]:-}" ]]; then
            seen_e[$lib:$off]=1
            e[$lib]+="${e[$lib]:+,}$(printf '0x%x' "$off")"
        fi
        if [[ "$how" == entry+return && -z "${seen_r[$lib:$off]:-}" ]]; then
            seen_r[$lib:$off]=1
            r[$lib]+="${r[$lib]:+,}$(printf '0x%x' "$off")"
        fi
    done <"$log"
    for lib in "${!e[@]}"; do printf -- '-e\n%s:%s\n' "$lib" "${e[$lib]}"; done
    for lib in "${!r[@]}"; do printf -- '-r\n%s:%s\n' "$lib" "${r[$lib]}"; done
}
mapfile -t FLOOR_PLACED < <(floor_args placed)
mapfile -t FLOOR_ENTRY < <(floor_args entry)
((${#FLOOR_PLACED[@]} >= 4)) || die "no probe placement lines in memtrack -v output (see $WORK/log/placement.log)"

BT_SCRIPT="uprobe:$LIBC:malloc { @malloc = count(); } uretprobe:$LIBC:malloc { @malloc_ret = count(); } uprobe:$LIBC:free { @free = count(); }"

# ---- timing ----
now() { echo "$EPOCHREALTIME"; }
elapsed_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
median() { [[ -f "$1" ]] || { echo nan; return 0; }; sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
jget() { jq -r "$2" "$1"; }
# The median over the stats files of one key (a jq path) of runs named PREFIX__r*.json.
stat_median() {
    local prefix="$1" path="$2" f tmp="$WORK/t/.stat"
    : >"$tmp"
    for f in "$WORK/stats/$prefix"__r*.json; do [[ -f "$f" ]] && jq -r "$path" "$f" >>"$tmp"; done
    median "$tmp"
}

# run TOOL TAG CMD... : runs CMD under TOOL; appends the wall time (s) to $WORK/t/TAG and the CPU
# time (user + system, s, of the tool and everything it reaped, the command included: bash's
# `time`, i.e. getrusage(RUSAGE_CHILDREN)) to
# $WORK/t/TAG.cpu; memtrack's stats go to $WORK/stats/TAG__rREP.json, stderr to $WORK/log/TAG__rREP.log.
REP=1
TIMEFORMAT='%3R %3U %3S'
run() {
    local tool="$1" tag="$2"
    shift 2
    local log="$WORK/log/${tag}__r$REP.log" stats="$WORK/stats/${tag}__r$REP.json" rc=0 t0 t1
    local -a cmd
    case "$tool" in
    untracked) cmd=("$@") ;;
    memtrack) cmd=("$MEMTRACK" -v track -o "$WORK/out" --stats "$stats" -- "$@") ;;
    memtrack-nostacks) cmd=("$MEMTRACK" -v track -o "$WORK/out" --stats "$stats" --no-stacks -- "$@") ;;
    memtrack-fp) cmd=("$MEMTRACK" -v track -o "$WORK/out" --stats "$stats" --unwind fp -- "$@") ;;
    memtrack-entry) cmd=("$MEMTRACK" -v track -o "$WORK/out" --stats "$stats" --no-stacks --probe-at-entry -- "$@") ;;
    memtrack-wakeall) cmd=("$MEMTRACK" -v track -o "$WORK/out" --stats "$stats" --no-stacks --wakeup-fill 0 -- "$@") ;;
    heaptrack) cmd=(heaptrack -o "$WORK/out/heaptrack.$tag" "$@") ;;
    bpftrace) cmd=(bpftrace -e "$BT_SCRIPT" -c "$*") ;;
    massif) cmd=(valgrind --tool=massif --trace-children=yes --massif-out-file="$WORK/out/massif.%p" "$@") ;;
    floor) cmd=("$BIN/trap_floor" "${FLOOR_PLACED[@]}" -- "$@") ;;
    floor-entry) cmd=("$BIN/trap_floor" "${FLOOR_ENTRY[@]}" -- "$@") ;;
    *) die "unknown tool $tool" ;;
    esac
    t0=$(now)
    { time "${cmd[@]}" >"$log.out" 2>"$log"; } 2>"$log.time" || rc=$?
    t1=$(now)
    elapsed_s "$t0" "$t1" >>"$WORK/t/$tag"
    tail -n 1 "$log.time" | awk '{ printf "%.3f\n", $2 + $3 }' >>"$WORK/t/$tag.cpu"
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
    if ((rc != 0)); then
        echo "bench: warning: $tool $* exited with $rc ($(grep -m1 -e dropped -e error "$log" 2>/dev/null || true))" >&2
        echo "$tag rep $REP: $tool exited with $rc" >>"$WORK/warnings"
    fi
    return 0
}

# mt_run TAG MEMTRACK-OPTIONS... -- CMD... : memtrack with options, timed like run(); also
# keeps memtrack's max RSS (GNU time) in $WORK/log/TAG__rREP.log.rss.
mt_run() { # TAG MEMTRACK-OPTIONS... -- CMD...
    local tag="$1" rc=0 t0 t1
    shift
    local stats="$WORK/stats/${tag}__r$REP.json" log="$WORK/log/${tag}__r$REP.log"
    t0=$(now)
    /usr/bin/time -f '%M' -o "$log.rss" "$MEMTRACK" -v track -o "$WORK/out" --stats "$stats" "$@" >/dev/null 2>"$log" || rc=$?
    t1=$(now)
    elapsed_s "$t0" "$t1" >>"$WORK/t/$tag"
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
    if ((rc != 0)); then
        echo "bench: warning: memtrack $* exited with $rc ($(grep -m1 -e dropped -e error "$log" || true))" >&2
        echo "$tag rep $REP: exited with $rc ($(grep -m1 -e dropped -e error "$log" || true))" >>"$WORK/warnings"
    fi
    return 0
}

percentile() { # FILE P -> the P-th percentile (nearest rank) of the numbers in FILE
    sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } i = int(p * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
# storm_run TAG MEMTRACK-OPTIONS... -- CMD...: mt_run with --socket, timing `memtrack ctl drain`
# every 0.5 s while it runs (milliseconds, one a line, to $WORK/t/TAG.drain).
storm_run() {
    local tag="$1" sock="$WORK/storm.sock" rc=0 t0 t1 d0 d1 pid
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
        awk -v a="$d0" -v b="$d1" 'BEGIN { printf "%.6f\n", (b - a) * 1e3 }' >>"$WORK/t/$tag.drain"
    done
    wait "$pid" || rc=$?
    t1=$(now)
    elapsed_s "$t0" "$t1" >>"$WORK/t/$tag"
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
    if ((rc != 0)); then
        echo "bench: warning: memtrack $* exited with $rc" >&2
        echo "$tag rep $REP: exited with $rc ($(grep -m1 -e dropped -e error "$log" || true))" >>"$WORK/warnings"
    fi
    return 0
}

fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "nan" || v == "") print "n/a"; else printf f, v }'; }
# calc EXPR: awk arithmetic; nan when an operand is missing (nan) or on division by zero.
calc() {
    [[ "$1" == *nan* || "$1" == *n/a* ]] && { echo nan; return 0; }
    awk "BEGIN { v = $1; printf \"%.6g\", v }" 2>/dev/null || echo nan
}

section_t0=0
begin_section() {
    section_t0=$(now)
    echo "bench: $1" >&2
    echo
    echo "## $1"
    echo
    echo "(load average at the start of this section: $(cut -d' ' -f1-3 /proc/loadavg))"
    echo
}
end_section() { echo; echo "($(fmt "$(elapsed_s "$section_t0" "$(now)")" '%.0f') s)"; }

# ---- header ----
echo "# memtrack benchmarks"
echo
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "- command: scripts/bench.sh$( ((${#SECTION[@]} < 8)) && printf ' --%s' "${!SECTION[@]}") --reps $REPS --scale $SCALE$( ((ISOLATE)) || echo ' --system-libc')"
# shellcheck source=/dev/null
echo "- machine: $(nproc) cpu ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg); other processes' uprobe_multi links: $(foreign_uprobe_links)"
echo "- libraries: $( ((ISOLATE)) && echo "private copies ($LIBC)" || echo "system ($LIBC)")"
echo "- peers: $(heaptrack --version 2>&1 | head -n1), $(valgrind --version), $(bpftrace --version)"
echo "- build lock wait: $LOCK_WAIT_S s; build (scripts/build.sh): $BUILD_S s"

# ---- overhead ----
# MEMTRACK_BENCH_WORKLOADS / MEMTRACK_BENCH_TOOLS (space-separated) run a subset; the net columns
# need untracked, memtrack-nostacks (its event counts) and floor among the tools.
read -r -a WORKLOADS <<<"${MEMTRACK_BENCH_WORKLOADS:-flood churn_c churn_cxx churn_nofp}"
read -r -a TOOLS <<<"${MEMTRACK_BENCH_TOOLS:-untracked memtrack memtrack-fp memtrack-nostacks memtrack-wakeall memtrack-entry floor floor-entry bpftrace heaptrack massif}"
declare -A TOOL_LABEL=(
    [untracked]="untracked" [memtrack]="memtrack" [memtrack-fp]="memtrack --unwind fp" [memtrack-nostacks]="memtrack --no-stacks"
    [memtrack-entry]="memtrack --no-stacks --probe-at-entry" [floor]="trap floor (placed)"
    [memtrack-wakeall]="memtrack --no-stacks --wakeup-fill 0"
    [floor-entry]="trap floor (entry)" [bpftrace]="bpftrace (counting)" [heaptrack]="heaptrack"
    [massif]="valgrind massif"
)
workload_cmd() { # NAME SIZE -> the command line
    case "$1" in
    flood) echo "$BIN/flood 1 $2" ;;
    churn_c) echo "$BIN/churn_c $2" ;;
    churn_nofp) echo "$BIN/churn_nofp $2 8" ;;
    churn_cxx) echo "$BIN/churn_cxx $2" ;;
    esac
}
declare -A WL_N=([flood]=$FLOOD_N [churn_c]=$CHURN_C_N [churn_cxx]=$CHURN_CXX_N [churn_nofp]=$CHURN_C_N)

if on overhead; then
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
    echo "divided by the placed trap floor's; start+tear: wall T(1) - untracked wall T(1)."
    echo
    printf '| %-9s | %-38s | %10s | %9s | %12s | %9s | %9s | %11s | %9s | %15s |\n' workload tool "wall N (s)" slowdown \
        "net us/alloc" "x floor" "CPU N (s)" "net CPU us" "x floor" "start+tear (ms)"
    echo "|-----------|----------------------------------------|-----------:|----------:|-------------:|----------:|----------:|------------:|----------:|----------------:|"
    declare -A NET=() NETC=() WALL=() CPU=() STU=() ALLOCS=()
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
                printf '| %-9s | %-38s | %10s | %9s | %12s | %9s | %9s | %11s | %9s | %15s |\n' "$wl" "${TOOL_LABEL[$tool]}" \
                    "$(fmt "$u_n" '%.3f')" 1.0x "$(fmt "$u_per" '(%.3f)')" - "$(fmt "${CPU[$wl,$tool]}" '%.3f')" \
                    "$(fmt "$u_perc" '(%.3f)')" - -
                continue
            fi
            label="${TOOL_LABEL[$tool]}"
            # heaptrack does not follow fork(): flood's writer, a child, runs untraced.
            [[ $wl == flood && $tool == heaptrack ]] && label="heaptrack (writer untraced: no fork)"
            printf '| %-9s | %-38s | %10s | %9s | %12s | %9s | %9s | %11s | %9s | %15s |\n' "$wl" "$label" \
                "$(fmt "${WALL[$wl,$tool]}" '%.3f')" "$(fmt "$(calc "${WALL[$wl,$tool]} / $u_n")" '%.0fx')" \
                "$(fmt "${NET[$wl,$tool]}" '%.2f')" "$(fmt "$(calc "${NET[$wl,$tool]} / ${NET[$wl,floor]}")" '%.2f')" \
                "$(fmt "${CPU[$wl,$tool]}" '%.3f')" "$(fmt "${NETC[$wl,$tool]}" '%.2f')" \
                "$(fmt "$(calc "${NETC[$wl,$tool]} / ${NETC[$wl,floor]}")" '%.2f')" "$(fmt "${STU[$wl,$tool]}" '%.0f')"
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
    st_up=$(for f in "$WORK"/log/*__memtrack__1__r*.log; do sed -n 's/.*start-up took \([0-9.]*\) ms.*/\1/p' "$f"; done >"$WORK/t/.su"; median "$WORK/t/.su")
    td=$(for f in "$WORK"/log/*__memtrack__1__r*.log; do sed -n 's/.*teardown took \([0-9.]*\) ms.*/\1/p' "$f"; done >"$WORK/t/.td"; median "$WORK/t/.td")
    echo "- memtrack -v at size 1, all workloads: start-up took $(fmt "$st_up" '%.0f') ms, teardown took $(fmt "$td" '%.0f') ms (medians of its own log lines)"
    end_section
fi

# ---- other processes ----
# An untracked flood while memtrack tracks `a command that waits`: the probes memtrack attaches
# are on the same library file the flood maps (the private copy, or the system's).
others_run() { # TAG MEMTRACK-OPTIONS... : times the untracked flood and syscalls beside a memtrack run
    local tag="$1" stop="$WORK/others.stop" log="$WORK/log/others.log" mt t0 t1
    shift
    rm -f "$stop"
    "$MEMTRACK" -v track -o "$WORK/out" --no-stacks "$@" -- bash -c "while [ ! -e '$stop' ]; do sleep 0.02; done" \
        >/dev/null 2>"$log" &
    mt=$!
    for ((i = 0; i < 500; ++i)); do grep -q "start-up took" "$log" 2>/dev/null && break; sleep 0.02; done
    others_time "$tag"
    touch "$stop"
    wait "$mt" || echo "$tag rep $REP: memtrack exited with $?" >>"$WORK/warnings"
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
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

if on others; then
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
fi

# ---- pressure ----
if on pressure; then
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
fi

# ---- drain ----
# drain_run TAG MEMTRACK-OPTIONS...: a flood under memtrack --socket, `memtrack ctl drain` timed
# in a loop (one at a time, 20 ms apart) until memtrack exits.
drain_run() {
    local tag="$1" sock="$WORK/ctl.sock" pid t0 t1 i
    shift
    local stats="$WORK/stats/${tag}__r1.json" log="$WORK/log/${tag}__r1.log"
    rm -f "$sock"
    : >"$WORK/t/$tag"
    t0=$(now)
    "$MEMTRACK" -v track --socket "$sock" -o "$WORK/out" --stats "$stats" "$@" -- "$BIN/flood" 2 "$DRAIN_N" >/dev/null 2>"$log" &
    pid=$!
    for ((i = 0; i < 200; ++i)); do
        "$MEMTRACK" ctl --socket "$sock" --timeout 10 ping >/dev/null 2>&1 && break
        sleep 0.05
    done
    while kill -0 "$pid" 2>/dev/null; do
        t0=$(now)
        "$MEMTRACK" ctl --socket "$sock" --timeout 120 drain >/dev/null 2>&1 || break
        t1=$(now)
        awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", (b - a) * 1e3 }' >>"$WORK/t/$tag"
        sleep 0.02
    done
    wait "$pid" || echo "$tag: memtrack exited with $? ($(grep -m1 -e dropped -e error "$log" || true))" >>"$WORK/warnings"
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
}
# The consumer's read rate while it reads (records/s), and with the testing delay per chunk.
consumer_rate() { # STATS-FILE DELAY-US
    jq -r --argjson d "$2" 'if .chunks > 0 and .chunk_ms.p50 > 0 then (.records / .chunks) / ((.chunk_ms.p50 + $d / 1000) / 1000) else "nan" end' "$1"
}

if on drain; then
    begin_section "Drain"
    declare -A DRAIN_OPTS=([default]="" [slow64M]="--consumer-delay-us 5000" [slow4M]="--ring-size 4M --consumer-delay-us 5000")
    declare -A DRAIN_RING=([default]=67108864 [slow64M]=67108864 [slow4M]=4194304)
    declare -A DRAIN_DELAY=([default]=0 [slow64M]=5000 [slow4M]=5000)
    for d in default slow64M slow4M; do
        # shellcheck disable=SC2086  # options are words
        drain_run "drain__$d" --no-stacks ${DRAIN_OPTS[$d]}
    done
    echo "flood 2 $DRAIN_N under memtrack --no-stacks --socket; \`memtrack ctl drain\` round trips timed by the client,"
    echo "one at a time, 20 ms apart, while the flood runs (client ms), and drain_ms from the stats (server side)."
    echo "Full-ring read: ring_bytes / 56 records at the consumer's read rate of that run (records per chunk /"
    echo "(chunk_ms p50 + the delay per chunk))."
    echo
    echo "| consumer | drains | client p50 (ms) | p99 | max | server drain_ms p50 | p99 | max | read rate (M rec/s) | full ring read (ms) | paused_fraction |"
    echo "|----------|-------:|----------------:|----:|----:|--------------------:|----:|----:|--------------------:|--------------------:|----------------:|"
    for d in default slow64M slow4M; do
        f="$WORK/t/drain__$d"
        st="$WORK/stats/drain__${d}__r1.json"
        rate=$( [[ -f "$st" ]] && consumer_rate "$st" "${DRAIN_DELAY[$d]}" || echo nan)
        printf '| %-40s | %6s | %15s | %3s | %3s | %19s | %3s | %3s | %19s | %19s | %15s |\n' \
            "$( [[ -z "${DRAIN_OPTS[$d]}" ]] && echo "default (64 MiB ring)" || echo "${DRAIN_OPTS[$d]}")" "$(wc -l <"$f")" \
            "$(fmt "$(percentile "$f" 0.50)" '%.1f')" "$(fmt "$(percentile "$f" 0.99)" '%.1f')" "$(fmt "$(percentile "$f" 1)" '%.1f')" \
            "$(fmt "$(jget "$st" .drain_ms.p50 2>/dev/null)" '%.1f')" "$(fmt "$(jget "$st" .drain_ms.p99 2>/dev/null)" '%.1f')" \
            "$(fmt "$(jget "$st" .drain_ms.max 2>/dev/null)" '%.1f')" "$(fmt "$(calc "$rate / 1e6")" '%.2f')" \
            "$(fmt "$(calc "${DRAIN_RING[$d]} / 56 / $rate * 1e3")" '%.0f')" "$(fmt "$(jget "$st" .paused_fraction 2>/dev/null)" '%.3f')"
    done
    end_section
fi

# ---- stacks ----
if on stacks; then
    begin_section "Stacks"
    for ((REP = 1; REP <= REPS; ++REP)); do
        for k in 1 1024; do
            run memtrack "callsites__memtrack__$k" "$BIN/callsites" "$CALLSITES_N" "$k"
            run memtrack-nostacks "callsites__memtrack-nostacks__$k" "$BIN/callsites" "$CALLSITES_N" "$k"
        done
    done
    echo "callsites $CALLSITES_N K: malloc+free pairs from K distinct call stacks; memtrack with stacks; medians of $REPS runs."
    echo "avg frames = (stack_ring_bytes / stacks_sent - 24) / 8 (a stack record is 16 bytes of header + 8 per frame"
    echo "+ the ring's 8-byte header). Without deduplication every allocation event would carry its stack:"
    echo "ring bytes per event = 56 + 16 + 8 * avg_frames + 8."
    echo
    echo "| K | wall (s) | --no-stacks wall (s) | allocation_events | stacks_unique | avg frames | ring bytes/event | without dedup | symbolize_ms p50 | p99 | cache hit rate |"
    echo "|--:|---------:|---------------------:|------------------:|--------------:|-----------:|-----------------:|--------------:|-----------------:|----:|---------------:|"
    for k in 1 1024; do
        p="callsites__memtrack__$k"
        su=$(stat_median "$p" .stacks_unique)
        frames=$(calc "($(stat_median "$p" .stack_ring_bytes) / $(stat_median "$p" .stacks_sent) - 24) / 8")
        printf '| %4s | %8s | %20s | %17s | %13s | %10s | %16s | %13s | %16s | %3s | %14s |\n' "$k" \
            "$(fmt "$(median "$WORK/t/$p")" '%.2f')" "$(fmt "$(median "$WORK/t/callsites__memtrack-nostacks__$k")" '%.2f')" \
            "$(fmt "$(stat_median "$p" .allocation_events)" '%.0f')" "$(fmt "$su" '%.0f')" "$(fmt "$frames" '%.1f')" \
            "$(fmt "$(stat_median "$p" .ring_bytes_per_event)" '%.2f')" "$(fmt "$(calc "56 + 24 + 8 * $frames")" '%.0f')" \
            "$(fmt "$(stat_median "$p" .symbolize_ms.p50)" '%.2f')" "$(fmt "$(stat_median "$p" .symbolize_ms.p99)" '%.1f')" \
            "$(fmt "$(stat_median "$p" .symbolizer_cache_hit_rate)" '%.4f')"
    done
    echo
    p=callsites__memtrack__1024
    su=$(stat_median "$p" .stacks_unique)
    frames=$(calc "($(stat_median "$p" .stack_ring_bytes) / $(stat_median "$p" .stacks_sent) - 24) / 8")
    p50=$(stat_median "$p" .symbolize_ms.p50)
    hit=$(stat_median "$p" .symbolizer_cache_hit_rate)
    echo "Symbolizer, K = 1024: $(fmt "$(calc "1000 / $p50")" '%.0f') stacks/s at the p50 symbolize time," \
        "$(fmt "$(calc "1000 / $p50 * $frames")" '%.0f') frames/s; distinct addresses resolved (cache misses: (1 - hit rate) *" \
        "frames looked up): $(fmt "$(calc "(1 - $hit) * $su * $frames")" '%.0f') in all, $(fmt "$(calc "(1 - $hit) * $frames * 1000 / $p50")" '%.0f')" \
        "per second of symbolizing (cache hit rate $(fmt "$hit" '%.4f'))."
    echo "Symbolizing time, sum estimated as stacks_unique * p50: $(fmt "$(calc "$su * $p50 / 1000")" '%.2f') s of the" \
        "$(fmt "$(median "$WORK/t/$p")" '%.2f') s run ($(fmt "$(median "$WORK/t/callsites__memtrack-nostacks__1024")" '%.2f') s without stacks)."
    if on overhead; then
        for wl in churn_c churn_cxx flood; do
            echo "- stack capture on $wl: wall memtrack $(fmt "${NET[$wl,memtrack]}" '%.2f') vs --no-stacks $(fmt "${NET[$wl,memtrack-nostacks]}" '%.2f') us/alloc:" \
                "$(fmt "$(calc "(${NET[$wl,memtrack]} / ${NET[$wl,memtrack-nostacks]} - 1) * 100")" '%+.0f') %; CPU $(fmt "${NETC[$wl,memtrack]}" '%.2f') vs $(fmt "${NETC[$wl,memtrack-nostacks]}" '%.2f') us/alloc:" \
                "$(fmt "$(calc "(${NETC[$wl,memtrack]} / ${NETC[$wl,memtrack-nostacks]} - 1) * 100")" '%+.0f') %"
        done
    else
        echo "(the cost of stack capture on churn_c / churn_cxx is in the overhead section: --overhead)"
    fi
    end_section
fi

# ---- symbols ----
if on symbols; then
    begin_section "Symbols"
    NODE_BIN="$(readlink -f "$(command -v node)")"
    SYMBOL_FILES=("$NODE_BIN" "$LIBC")
    for ((REP = 1; REP <= REPS; ++REP)); do
        "$BIN/symbol_throughput" --addresses "$SYMBOL_ADDRS" --json "$WORK/stats/symbols__r$REP.json" "${SYMBOL_FILES[@]}" \
            >"$WORK/log/symbols__r$REP.log" 2>&1 || echo "symbols rep $REP: symbol_throughput failed" >>"$WORK/warnings"
        for tool in untracked memtrack-nostacks memtrack; do run "$tool" "node__$tool" "$NODE_BIN" -e "$NODE_JS"; done
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
    echo "symbolize_cpu_s, shutdown_stacks_ms (shutdown start to stacks file closed) from memtrack's stats."
    echo
    echo "| run | wall (s) | vs --no-stacks | symbolize_cpu_s | shutdown_stacks_ms | stacks wait / run | stacks_unique | new addresses | pressure_stops |"
    echo "|-----|---------:|---------------:|----------------:|-------------------:|------------------:|--------------:|--------------:|---------------:|"
    ns=$(median "$WORK/t/node__memtrack-nostacks")
    for tool in untracked memtrack-nostacks memtrack; do
        p="node__$tool"
        w=$(median "$WORK/t/$p")
        if [[ $tool == memtrack ]]; then
            printf '| %s | %s | %s | %s | %s | %s %% | %s | %s | %s |\n' "${TOOL_LABEL[$tool]}" "$(fmt "$w" '%.2f')" \
                "$(fmt "$(calc "$w / $ns")" '%.2fx')" "$(fmt "$(stat_median "$p" .symbolize_cpu_s)" '%.3f')" \
                "$(fmt "$(stat_median "$p" .shutdown_stacks_ms)" '%.1f')" \
                "$(fmt "$(stat_median "$p" '.shutdown_stacks_ms / 10 / .duration_s')" '%.2f')" \
                "$(fmt "$(stat_median "$p" .stacks_unique)" '%.0f')" "$(fmt "$(stat_median "$p" .symbolizer_addresses)" '%.0f')" \
                "$(fmt "$(stat_median "$p" .pressure_stops)" '%.0f')"
        else
            printf '| %s | %s | %s | | | | | | |\n' "${TOOL_LABEL[$tool]}" "$(fmt "$w" '%.2f')" "$(fmt "$(calc "$w / $ns")" '%.2fx')"
        fi
    done
    end_section
fi

# ---- cfi ----
# bench/cfi_tables: build_cfi_table on each file, as when a process maps it (fresh open, fresh
# libdw state), REPS builds per file in one process, medians.
if on cfi; then
    begin_section "Unwind tables"
    CFI_FILES=()
    for f in /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/bin/python3.11 \
        "$(readlink -f "$(command -v node || echo /usr/bin/node)")" /usr/lib/gcc/x86_64-linux-gnu/12/cc1; do
        if [[ -e "$f" ]]; then CFI_FILES+=("$(readlink -f "$f")"); else echo "(not installed, skipped: $f)"; fi
    done
    "$BIN/cfi_tables" --reps "$REPS" --json "$WORK/stats/cfi__r1.json" "${CFI_FILES[@]}" >"$WORK/log/cfi__r1.log" 2>&1 ||
        echo "cfi: cfi_tables failed" >>"$WORK/warnings"
    echo "bench/cfi_tables --reps $REPS: each file's .eh_frame (and .debug_frame where it has one) compiled into"
    echo "8-byte unwind rows; build time from open to the finished table, wall and CPU of the building thread,"
    echo "medians of $REPS builds. libdw rows: the rows of the FDEs' own tables, before equal neighbours merge"
    echo "and NONE rows mark the gaps between FDEs."
    echo
    echo "| file | size (MB) | FDEs | libdw rows | rows | KB | rsp | rbp | plt | end | unsupported | none | build (ms) | CPU (ms) |"
    echo "|------|----------:|-----:|-----------:|-----:|---:|----:|----:|----:|----:|------------:|-----:|-----------:|---------:|"
    # j FIELD: the current file's FIELD from cfi_tables' JSON, nan when missing.
    j() { jq -r ".[\"$f\"].$1 // \"nan\"" "$WORK/stats/cfi__r1.json" 2>/dev/null || echo nan; }
    for f in "${CFI_FILES[@]}"; do
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$f" \
            "$(fmt "$(calc "$(stat -c %s "$f") / 1048576")" '%.1f')" "$(j fdes)" "$(j libdw_rows)" "$(j rows)" \
            "$(fmt "$(calc "$(j bytes) / 1024")" '%.0f')" "$(j rows_by_type.rsp)" "$(j rows_by_type.rbp)" \
            "$(j rows_by_type.plt)" "$(j rows_by_type.end)" "$(j rows_by_type.unsupported)" "$(j rows_by_type.none)" \
            "$(fmt "$(j build_ms)" '%.1f')" "$(fmt "$(j build_cpu_ms)" '%.1f')"
    done
    echo
    echo "Unsupported libdw rows by cause (before merging):"
    echo
    for f in "${CFI_FILES[@]}"; do
        echo "- $f: $(jq -c ".[\"$f\"].unsupported_libdw_rows" "$WORK/stats/cfi__r1.json" 2>/dev/null || echo n/a)"
    done
    end_section
fi

# ---- consumer ----
# bench/consumer_throughput: memtrack's RingConsumer and Writer alone, fed from a BPF program run
# with BPF_PROG_TEST_RUN (no uprobes, no tracked process), the artifact read back and checked.
# ct_run TAG OPTIONS...: one run, its JSON in stats/TAG__rREP.json, a warning when it failed.
ct_run() {
    local tag="$1" rc=0
    shift
    local stats="$WORK/stats/${tag}__r$REP.json" log="$WORK/log/${tag}__r$REP.log"
    "$BIN/consumer_throughput" --records "$CONSUMER_RECORDS" -o "$WORK/out" --json "$stats" "$@" >"$log" 2>&1 || rc=$?
    ((rc == 0)) || echo "$tag rep $REP: consumer_throughput exited with $rc ($(grep -m1 -e FAILED -e error "$log" || true))" >>"$WORK/warnings"
}

if on consumer; then
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
            "$( ((ok == 1)) && echo "$(fmt "$rb" '%.0f')" || echo "**FAILED**")" "$(fmt "$(stat_median "$p" .dropped)" '%.0f')"
    done
    echo
    echo "M records per io CPU-s is what the pipeline sustains on a core of its own; records/s also depends on the"
    echo "feeder thread and the rest of the machine getting the other core ($(nproc) cpu(s) here)."
    end_section
fi

# ---- report ----
# `memtrack report` reading a recording made by bench/report_artifact (memtrack's own encoders):
# one pass over the events, memory bounded by the live blocks and the distinct stacks.
# CPU is user + system (GNU time): on a shared machine it moves less than wall time. Two floors
# on the same file: `zstd -d` alone (decompression, the part no decoder change removes) and
# bench/artifact_read (read_artifact: decompression and decoding, no analysis).
# MEMTRACK_REPORT_BASE=BIN also times another memtrack binary (json and folded) in the same
# repetitions, interleaved: a ratio measured under the same load.
if on report; then
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
    # One timed run: name, then the command; GNU time's wall, user, sys and max RSS (KiB).
    report_time() {
        local name="$1"
        shift
        local rc=0
        /usr/bin/time -f '%e %U %S %M' -o "$WORK/t/report.$name.$REP" "$@" >/dev/null 2>"$WORK/log/report.$name.$REP.log" || rc=$?
        ((rc == 0)) || echo "report run $name rep $REP: exited with $rc ($(tail -n 1 "$WORK/log/report.$name.$REP.log"))" >>"$WORK/warnings"
        tail -n 1 "$WORK/t/report.$name.$REP" | awk '{ print $1 }' >>"$WORK/t/report.$name.wall"
        tail -n 1 "$WORK/t/report.$name.$REP" | awk '{ print $2 + $3 }' >>"$WORK/t/report.$name.cpu"
        tail -n 1 "$WORK/t/report.$name.$REP" | awk '{ print $4 }' >>"$WORK/t/report.$name.rss"
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
fi

# ---- allocators: per-pair cost by allocator, and what probing new code adds ----
if on allocators; then
    begin_section "Allocators: per-pair cost, dlopen and exec"
    echo "\`flood 1 $ALLOC_N\` ($ALLOC_N malloc+free pairs) linked against each allocator; net us per pair"
    echo "above the untracked run, medians of $REPS runs; the floor: empty BPF programs at memtrack's placed"
    echo "offsets for that binary (from its -v placement log)."
    echo
    echo "| allocator | untracked (s) | memtrack --no-stacks us/pair | memtrack us/pair | placed floor us/pair | --no-stacks / floor |"
    echo "|-----------|--------------:|-----------------------------:|-----------------:|---------------------:|--------------------:|"
    saved_floor=("${FLOOR_PLACED[@]}")
    for alloc in glibc jemalloc mimalloc; do
        exe="$BIN/flood"
        [[ "$alloc" == glibc ]] || exe="$BIN/flood_$alloc"
        if [[ ! -x "$exe" ]]; then
            echo "| $alloc | not built (scripts/deps.sh installs lib$alloc-dev) | | | | |"
            continue
        fi
        "$MEMTRACK" -v track -o "$WORK/out" --no-stacks -- "$exe" 1 2 2>"$WORK/log/placement.$alloc.log" >/dev/null || true
        rm -rf "$WORK/out" && mkdir -p "$WORK/out"
        mapfile -t FLOOR_PLACED < <(floor_args placed "$WORK/log/placement.$alloc.log")
        for ((REP = 1; REP <= REPS; REP++)); do
            for tool in untracked memtrack-nostacks memtrack floor; do run "$tool" "alloc.$alloc.$tool" "$exe" 1 "$ALLOC_N"; done
        done
        u=$(median "$WORK/t/alloc.$alloc.untracked")
        per() { calc "($(median "$WORK/t/alloc.$alloc.$1") - $u) / $ALLOC_N * 1e6"; }
        ns=$(per memtrack-nostacks) st=$(per memtrack) fl=$(per floor)
        printf '| %s | %s | %s | %s | %s | %s |\n' "$alloc" "$(fmt "$u" '%.3f')" "$(fmt "$ns" '%.2f')" "$(fmt "$st" '%.2f')" \
            "$(fmt "$fl" '%.2f')" "$(fmt "$(calc "$ns / $fl")" '%.2f')"
    done
    FLOOR_PLACED=("${saved_floor[@]}")
    echo
    # New code held until probed: dlopen+dlclose of libmimalloc (or libz) and exec of /bin/true.
    lib=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
    [[ -e "$lib" ]] || lib=/lib/x86_64-linux-gnu/libz.so.1
    for ((REP = 1; REP <= REPS; REP++)); do
        for tool in untracked memtrack-nostacks; do
            run "$tool" "newcode.dlopen.$tool" "$BIN/dlopen_loop" "$NEWCODE_N" "$lib"
            run "$tool" "newcode.exec.$tool" sh -c "i=0; while [ \$i -lt $NEWCODE_N ]; do /bin/true; i=\$((i + 1)); done"
        done
    done
    echo "New code held until probed (MODULE pauses), memtrack --no-stacks, medians of $REPS runs:"
    echo
    echo "| workload | untracked (s) | memtrack (s) | ms per round above untracked | new_code_held_ms (stats) |"
    echo "|----------|--------------:|-------------:|-----------------------------:|--------------------------|"
    for w in dlopen exec; do
        u=$(median "$WORK/t/newcode.$w.untracked") m=$(median "$WORK/t/newcode.$w.memtrack-nostacks")
        held=$(jq -c '.new_code_held_ms' "$WORK/stats/newcode.$w.memtrack-nostacks__r$REPS.json" 2>/dev/null || echo n/a)
        printf '| %s x %s | %s | %s | %s | %s |\n' "$w" "$NEWCODE_N" "$(fmt "$u" '%.3f')" "$(fmt "$m" '%.3f')" \
            "$(fmt "$(calc "($m - $u) / $NEWCODE_N * 1e3")" '%.3f')" "$held"
    done
    echo
    echo "(dlopen: dlopen($lib) + dlclose per round; exec: sh forking and exec'ing /bin/true per round.)"
    end_section
fi

# ---- footer ----
echo
if [[ -s "$WORK/warnings" ]]; then
    echo "Warnings (non-zero exits; memtrack exits 1 when it dropped records):"
    echo
    sed 's/^/- /' "$WORK/warnings"
    echo
fi
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg); other processes' uprobe_multi links: $(foreign_uprobe_links)."
echo "Whole script: $(fmt "$(elapsed_s "$SCRIPT_T0" "$(now)")" '%.0f') s (lock wait $LOCK_WAIT_S s, build $BUILD_S s)."
