# shellcheck shell=bash disable=SC2034  # BENCH_DIR, the sizes and TOOL_LABEL are read by the sections
# What every section of scripts/bench.sh shares: options, workload sizes, the build under the lock,
# the peers, the work folder and private libraries, the trap floor's probe sites, the timed runs,
# the numbers (median, percentile, calc, fmt) and the markdown around the sections.
# Sourced by scripts/bench.sh (and kernel_guest.sh); it runs nothing by itself. Each section is
# scripts/bench/SECTION.sh, sourced in SECTIONS' order with these globals and functions in scope.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
BENCH_DIR="$ROOT/scripts/bench"
BUILD="$ROOT/build"
MEMTRACK="$BUILD/memtrack"
BIN="$BUILD/bench"
# The order the sections run in (and print in).
SECTIONS=(real overhead others pressure drain stacks symbols cfi consumer report html allocators dlopen rss kernels)

# The help is scripts/bench.sh's header comment.
usage() { sed -n '2,/^set -euo/p' "$ROOT/scripts/bench.sh" | sed -e '$d' -e 's/^# \{0,1\}//'; }
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
is_section() { local s; for s in "${SECTIONS[@]}"; do [[ "$s" == "$1" ]] && return 0; done; return 1; }
parse_args() { # the command line -> SECTION, REPS, SCALE, ISOLATE, KEEP (exits 2 on a bad option)
    local s
    while (($#)); do
        case "$1" in
        --reps) REPS="${2:?--reps needs a number}"; shift ;;
        --scale) SCALE="${2:?--scale needs a factor}"; shift ;;
        --system-libc) ISOLATE=0 ;;
        --keep) KEEP=1 ;;
        -h | --help) usage; exit 0 ;;
        --*) is_section "${1#--}" || { usage >&2; exit 2; }; SECTION[${1#--}]=1 ;;
        *) usage >&2; exit 2 ;;
        esac
        shift
    done
    [[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive integer"
    [[ "$SCALE" =~ ^[0-9]*\.?[0-9]+$ ]] || die "--scale must be a positive number"
    if ((${#SECTION[@]} == 0)); then
        for s in "${SECTIONS[@]}"; do SECTION[$s]=1; done
    fi
}
on() { [[ -n "${SECTION[$1]:-}" ]]; }

# Workload sizes at --scale 1: each tracked run takes about 1-3 s on a 2-core VM.
scaled() { awk -v n="$1" -v f="$SCALE" 'BEGIN { v = int(n * f); print (v < 2 ? 2 : v) }'; }
workload_sizes() {
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
    HTML_EVENTS=$(scaled 10000000)  # --html: events in the recording whose html page is opened
    ALLOC_N=$(scaled 200000)        # --allocators: flood 1 ALLOC_N per allocator
    NEWCODE_N=$(scaled 200)         # --allocators: dlopen+dlclose rounds, and execs of /bin/true
    DLOPEN_SIZES=("$(scaled 1000)" "$(scaled 5000)" "$(scaled 10000)")  # --dlopen: libraries opened
    SYSCALLS_N=$(scaled 500000)     # dd bs=1 count=SYSCALLS_N beside memtrack: 2 syscalls each
    SYMBOL_ADDRS=$(scaled 100000)   # symbol_throughput: distinct addresses per pass and file
    NODE_N=$(scaled 1000000)        # the node script's objects (issue 16's command at --scale 1)
    REAL_GCC_FUNCS=$(scaled 300)    # --real: functions in the C file gcc -O2 compiles
    REAL_PY_N=$(scaled 200000)      # --real: records python3 dumps and loads as JSON
    REAL_SQL_N=$(scaled 100000)     # --real: rows sqlite3 inserts
    REAL_RUST_N=$(scaled 4000)      # --real: expressions bench/real_rust parses
    RSS_MIB=$(scaled 4096)          # --rss: MiB touch_pages faults in, 4 KiB pages
    NODE_JS="const a=[]; for(let i=0;i<$NODE_N;i++) a.push({id:i, name:\"n\"+i, v:[i]})"
}

# ---- build and peers, under the build lock ----
# The lock is held for the whole run (as scripts/flood.sh does): no build or test of the machine
# that takes it overlaps the measurements, and nobody relinks memtrack under them.
# MEMTRACK_BUILD_LOCK names it; empty: no lock.
lock_and_build() { # -> LOCK_WAIT_S, BUILD_S; fd 9 holds the lock until the script exits
    local lock="${MEMTRACK_BUILD_LOCK-/tmp/memtrack-build.lock}" lock_t0=$EPOCHREALTIME build_t0 b
    if [[ -n "$lock" ]]; then
        echo "bench: waiting for the build lock $lock" >&2
        exec 9>"$lock"
        flock 9
    fi
    LOCK_WAIT_S=$(awk -v a="$lock_t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    echo "bench: building (scripts/build.sh)" >&2
    build_t0=$EPOCHREALTIME
    "$ROOT/scripts/build.sh"
    BUILD_S=$(awk -v a="$build_t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
    for b in "$MEMTRACK" "$BIN/flood" "$BIN/churn_c" "$BIN/churn_nofp" "$BIN/churn_cxx" "$BIN/callsites" "$BIN/trap_floor" "$BIN/consumer_throughput" \
        "$BIN/report_artifact" "$BIN/artifact_read" "$BIN/symbol_throughput" "$BIN/cfi_tables" "$BIN/real_rust" "$BIN/touch_pages"; do
        [[ -x "$b" ]] || die "$b was not built"
    done
}

install_peers() { # apt-installs the tools the sections run that are missing
    local -A pkg_of=([heaptrack]=heaptrack [valgrind]=valgrind [bpftrace]=bpftrace [jq]=jq [/usr/bin/time]=time)
    local -a missing=()
    local cmd
    if on symbols || on real; then pkg_of[node]=nodejs; fi
    if on real; then pkg_of[sqlite3]=sqlite3 pkg_of[/usr/bin/python3]=python3; fi
    if on report; then pkg_of[zstd]=zstd; fi
    for cmd in "${!pkg_of[@]}"; do command -v "$cmd" >/dev/null || missing+=("${pkg_of[$cmd]}"); done
    if ((${#missing[@]})); then
        echo "bench: installing ${missing[*]}" >&2
        apt-get update -q >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null ||
            die "apt-get install ${missing[*]} failed"
    fi
}

# ---- work folder, private libraries ----
BPF_STATS_WAS=""  # kernel.bpf_stats_enabled before a section turned it on (bpf_stats_on), restored at exit
bpf_stats_on() { BPF_STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled); sysctl -q -w kernel.bpf_stats_enabled=1; }
bpf_stats_off() { [[ -z "$BPF_STATS_WAS" ]] || sysctl -q -w kernel.bpf_stats_enabled="$BPF_STATS_WAS"; BPF_STATS_WAS=""; }
cleanup() {
    bpf_stats_off
    if ((KEEP)); then echo "bench: work folder kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
make_work() { # -> WORK (removed at exit unless --keep), with out/ t/ stats/ log/
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-bench.XXXXXX")"
    trap cleanup EXIT
    mkdir -p "$WORK/out" "$WORK/t" "$WORK/stats" "$WORK/log"
    # The unwind table cache starts empty in every bench run: a workload's first memtrack run
    # builds its tables, later ones read them (memtrack-nocache builds them every time).
    export MEMTRACK_CACHE_DIR="$WORK/cache"
}
# Every timed run leaves its output folder empty for the next.
clear_out() { rm -rf "$WORK/out" && mkdir -p "$WORK/out"; }

lib_path() { ldd "$1" | awk -v n="$2" '$1 == n { print $3 }'; }
private_libraries() { # -> LIBC, LIBSTDCXX; with ISOLATE, copies of them first in LD_LIBRARY_PATH
    local lib
    if ((ISOLATE)); then
        mkdir -p "$WORK/lib"
        for lib in libc.so.6 libm.so.6 libgcc_s.so.1; do cp "$(lib_path "$MEMTRACK" "$lib")" "$WORK/lib/"; done
        cp "$(lib_path "$BIN/churn_cxx" libstdc++.so.6)" "$WORK/lib/"
        export LD_LIBRARY_PATH="$WORK/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
    LIBC="$(lib_path "$MEMTRACK" libc.so.6)"
    LIBSTDCXX="$(lib_path "$BIN/churn_cxx" libstdc++.so.6)"
    [[ -n "$LIBC" && -n "$LIBSTDCXX" ]] || die "cannot find libc.so.6 and libstdc++.so.6"
}

foreign_uprobe_links() {
    bpftool link list -j 2>/dev/null | jq '[.[] | select(.type == 12 or .type == "uprobe_multi")] | length' 2>/dev/null || echo "?"
}

# ---- the trap floor's probe sites, from bench/probe_sites (memtrack's own resolution) ----
# probe_sites FILE... prints one JSON line per site: {"object","entry","placed","return"}.
# probe_sites_of EXE: the sites memtrack probes in a process of EXE: EXE and every object it maps
# (ldd: the allocators it links, the C library, the loader's hook), and the C library and C++
# runtime memtrack maps itself (its --libc and --libstdcxx, probed in every run).
probe_sites_of() { # EXE -> JSON lines on stdout
    # No process substitution: a guest of scripts/kernels.sh has no /dev/fd.
    local IFS=$'\n' objects
    objects=$({
        ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
        ldd "$MEMTRACK" | awk '$1 ~ /^(libc[.]so|libstdc[+][+][.]so)/ { print $3 }'
    } | awk '!seen[$0]++')
    # shellcheck disable=SC2086  # one object a line
    "$BIN/probe_sites" "$1" $objects
}
floor_args() { # placed|entry [SITES] -> -e LIB:OFFS -r LIB:OFFS ... (one word per line)
    local mode="$1" sites="${2:-$WORK/log/sites.json}"
    jq -rs --arg at "$mode" '
        group_by(.object)[] as $lib
        | (["-e", "\($lib[0].object):\([$lib[] | .[$at]] | unique | map(tostring) | join(","))"][]),
          ([$lib[] | select(.return) | .[$at]] | unique
           | if length > 0 then ("-r", "\($lib[0].object):\(map(tostring) | join(","))") else empty end)
    ' "$sites"
}
place_floor() { # -> FLOOR_PLACED, FLOOR_ENTRY (trap_floor's arguments) and BT_SCRIPT
    # What memtrack probes in a process of `true`: the C library, the loader, the C++ runtime.
    probe_sites_of "$(type -P true)" >"$WORK/log/sites.json" || die "bench/probe_sites failed (see $WORK/log/sites.json)"
    mapfile -t FLOOR_PLACED < <(floor_args placed)
    mapfile -t FLOOR_ENTRY < <(floor_args entry)
    ((${#FLOOR_PLACED[@]} >= 4)) || die "no probe sites in $LIBC (see $WORK/log/sites.json)"
    BT_SCRIPT="uprobe:$LIBC:malloc { @malloc = count(); } uretprobe:$LIBC:malloc { @malloc_ret = count(); } uprobe:$LIBC:free { @free = count(); }"
}

# ---- numbers ----
now() { echo "$EPOCHREALTIME"; }
elapsed_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", b - a }'; }
elapsed_ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f\n", (b - a) * 1e3 }'; }
median() { [[ -f "$1" ]] || { echo nan; return 0; }; sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
percentile() { # FILE P -> the P-th percentile (nearest rank) of the numbers in FILE
    sort -g "$1" | awk -v p="$2" '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } i = int(p * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
jget() { jq -r "$2" "$1"; }
# The median over the stats files of one key (a jq path) of runs named PREFIX__r*.json.
stat_median() {
    local prefix="$1" path="$2" f tmp="$WORK/t/.stat"
    : >"$tmp"
    for f in "$WORK/stats/$prefix"__r*.json; do [[ -f "$f" ]] && jq -r "$path" "$f" >>"$tmp"; done
    median "$tmp"
}
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "nan" || v == "") print "n/a"; else printf f, v }'; }
# calc EXPR: awk arithmetic; nan when an operand is missing (nan) or on division by zero.
calc() {
    [[ "$1" == *nan* || "$1" == *n/a* ]] && { echo nan; return 0; }
    awk "BEGIN { v = $1; printf \"%.6g\", v }" 2>/dev/null || echo nan
}

# ---- timed runs ----
# A non-zero exit, where the footer lists it (under "Warnings").
warning() { echo "$*" >>"$WORK/warnings"; }
# The first line of a memtrack log that says why it failed.
first_error() { grep -m1 -e dropped -e error "$1" 2>/dev/null || true; }
# timed_end TAG T0: a timed run's wall time (since T0) to $WORK/t/TAG, its output folder emptied.
timed_end() {
    elapsed_s "$2" "$(now)" >>"$WORK/t/$1"
    clear_out
}

# timed TAG LOG CMD... : runs CMD, stdout to LOG.out and stderr to LOG; appends its wall time (s)
# to $WORK/t/TAG and its CPU time (user + system, s, of CMD and everything it reaped: bash's
# `time`, i.e. getrusage(RUSAGE_CHILDREN)) to $WORK/t/TAG.cpu; empties the output folder; returns
# CMD's status. The one timing route of every section's runs, but those measured with their
# memory by GNU time (gnu_timed).
TIMEFORMAT='%3R %3U %3S'
timed() {
    local tag="$1" log="$2" rc=0 t0
    shift 2
    t0=$(now)
    { time "$@" >"$log.out" 2>"$log"; } 2>"$log.time" || rc=$?
    timed_end "$tag" "$t0"
    tail -n 1 "$log.time" | awk '{ printf "%.3f\n", $2 + $3 }' >>"$WORK/t/$tag.cpu"
    return "$rc"
}

# gnu_timed NAME CMD... : runs CMD under GNU time, stdout to /dev/null and stderr to
# $WORK/log/NAME.$REP.log; appends its wall time (s) to $WORK/t/NAME.wall, its CPU time (user +
# system, s) to $WORK/t/NAME.cpu and its max RSS (KiB) to $WORK/t/NAME.rss; returns CMD's status.
# For a run measured with its memory (`memtrack report`: --report, --html).
gnu_timed() {
    local name="$1" rc=0
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$WORK/t/$name.$REP" "$@" >/dev/null 2>"$WORK/log/$name.$REP.log" || rc=$?
    # The last line: GNU time puts "Command exited with non-zero status N" before the figures.
    tail -n 1 "$WORK/t/$name.$REP" | awk '{ print $1 }' >>"$WORK/t/$name.wall"
    tail -n 1 "$WORK/t/$name.$REP" | awk '{ print $2 + $3 }' >>"$WORK/t/$name.cpu"
    tail -n 1 "$WORK/t/$name.$REP" | awk '{ print $4 }' >>"$WORK/t/$name.rss"
    return "$rc"
}

# run TOOL TAG CMD... : runs CMD under TOOL, timed (timed above); memtrack's stats go to
# $WORK/stats/TAG__rREP.json, stderr to $WORK/log/TAG__rREP.log. A TOOL of MT_OPTS is memtrack
# with those options: a section adds its own (and a TOOL_LABEL) before its runs.
REP=1
declare -A MT_OPTS=(
    [memtrack]="" [memtrack-nostacks]="--no-stacks" [memtrack-fp]="--unwind fp" [memtrack-nocache]="--no-cache"
    [memtrack-entry]="--no-stacks --probe-at-entry" [memtrack-wakeall]="--no-stacks --wakeup-fill 0"
    [memtrack-nopy]="--no-python-frames"
)
declare -A TOOL_LABEL=(
    [untracked]="untracked" [memtrack]="memtrack" [memtrack-fp]="memtrack --unwind fp" [memtrack-nostacks]="memtrack --no-stacks"
    [memtrack-entry]="memtrack --no-stacks --probe-at-entry" [floor]="trap floor (placed)"
    [memtrack-wakeall]="memtrack --no-stacks --wakeup-fill 0" [memtrack-nocache]="memtrack --no-cache"
    [floor-entry]="trap floor (entry)" [bpftrace]="bpftrace (counting)" [heaptrack]="heaptrack"
    [massif]="valgrind massif" [memtrack-nopy]="memtrack --no-python-frames"
)
run() {
    local tool="$1" tag="$2"
    shift 2
    local log="$WORK/log/${tag}__r$REP.log" stats="$WORK/stats/${tag}__r$REP.json" rc=0
    local -a cmd opts
    case "$tool" in
    untracked) cmd=("$@") ;;
    heaptrack) cmd=(heaptrack -o "$WORK/out/heaptrack.$tag" "$@") ;;
    bpftrace) cmd=(bpftrace -e "$BT_SCRIPT" -c "$*") ;;
    massif) cmd=(valgrind --tool=massif --trace-children=yes --massif-out-file="$WORK/out/massif.%p" "$@") ;;
    floor) cmd=("$BIN/trap_floor" "${FLOOR_PLACED[@]}" -- "$@") ;;
    floor-entry) cmd=("$BIN/trap_floor" "${FLOOR_ENTRY[@]}" -- "$@") ;;
    *)
        [[ -v "MT_OPTS[$tool]" ]] || die "unknown tool $tool"
        read -r -a opts <<<"${MT_OPTS[$tool]}"
        cmd=("$MEMTRACK" track -o "$WORK/out" --stats "$stats" ${opts[@]+"${opts[@]}"} -- "$@")
        ;;
    esac
    timed "$tag" "$log" "${cmd[@]}" || rc=$?
    if ((rc != 0)); then
        echo "bench: warning: $tool $* exited with $rc ($(first_error "$log"))" >&2
        warning "$tag rep $REP: $tool exited with $rc ($(first_error "$log"))"
    fi
    return 0
}

# mt_run TAG MEMTRACK-OPTIONS... -- CMD... : memtrack with options, timed like run(); also
# keeps memtrack's max RSS (GNU time) in $WORK/log/TAG__rREP.log.rss.
mt_run() { # TAG MEMTRACK-OPTIONS... -- CMD...
    local tag="$1" rc=0
    shift
    local stats="$WORK/stats/${tag}__r$REP.json" log="$WORK/log/${tag}__r$REP.log"
    timed "$tag" "$log" /usr/bin/time -f '%M' -o "$log.rss" "$MEMTRACK" track -o "$WORK/out" --stats "$stats" "$@" || rc=$?
    if ((rc != 0)); then
        echo "bench: warning: memtrack $* exited with $rc ($(first_error "$log"))" >&2
        warning "$tag rep $REP: exited with $rc ($(first_error "$log"))"
    fi
    return 0
}

# ---- markdown around the sections ----
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

print_header() {
    echo "# memtrack benchmarks"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- command: scripts/bench.sh$( ((${#SECTION[@]} < ${#SECTIONS[@]})) && printf ' --%s' "${!SECTION[@]}") --reps $REPS --scale $SCALE$( ((ISOLATE)) || echo ' --system-libc')"
    # shellcheck source=/dev/null
    echo "- machine: $(nproc) cpu ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")"
    echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg); other processes' uprobe_multi links: $(foreign_uprobe_links)"
    echo "- libraries: $( ((ISOLATE)) && echo "private copies ($LIBC)" || echo "system ($LIBC)")"
    echo "- peers: $(heaptrack --version 2>&1 | head -n1), $(valgrind --version), $(bpftrace --version)"
    echo "- build lock wait: $LOCK_WAIT_S s; build (scripts/build.sh): $BUILD_S s"
}

print_footer() { # SCRIPT_T0: when the script started
    echo
    if [[ -s "$WORK/warnings" ]]; then
        echo "Warnings (non-zero exits; memtrack exits 1 when it dropped records):"
        echo
        sed 's/^/- /' "$WORK/warnings"
        echo
    fi
    echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg); other processes' uprobe_multi links: $(foreign_uprobe_links)."
    echo "Whole script: $(fmt "$(elapsed_s "$1" "$(now)")" '%.0f') s (lock wait $LOCK_WAIT_S s, build $BUILD_S s)."
}
