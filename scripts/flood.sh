#!/usr/bin/env bash
# The back-pressure stress test: K writers flooding a small ring read by a slowed consumer,
# under memtrack, then checks that nothing was lost and nothing was left paused.
#
#   scripts/flood.sh [-k K] [-n N] [-T THREADS] [-r RING] [-d DELAY_US] [-D DRAIN_S] [-b BUSY]
#                    [-R REPS] [-s|--no-stacks] [-t TIMEOUT_S] [-- extra memtrack track arguments]
#   scripts/flood.sh --threads [-R REPS]
#
#   -k K            writers (default 4); writer k makes N malloc+free pairs of size 1000 + k
#   -T THREADS      threads per writer (default 1): thread j of writer k makes N pairs of size
#                   2000 + k * THREADS + j
#   -D DRAIN_S      `memtrack ctl drain` every DRAIN_S seconds while it runs (default: none)
#   -b BUSY         BUSY competing busy loops while it runs (default 0)
#   -R REPS         the run REPS times, stopping at the first failure (default 1)
#   --threads       the multi-threaded race hunt: REPS (default 100) runs cycling through 8, 32
#                   and 64 threads in one writer and 4 x 16 threads, 64K to 4M rings, slowed
#                   consumers, drains every 0.1 s and a competing busy loop
#   --pipelines     the missed-exec hunt: REPS (default 20) runs, each of 40 rounds (-n) of short
#                   pipelines under one bash (`git status --short | wc -l`, `seq | sort -r | head`,
#                   `printf | tr | cut`) beside a competing busy loop (-b, default 1); every process
#                   that exec'd one of these programs must have as many events after its exec as
#                   the others of that program (git: more than none), and each program one exec a
#                   round (scripts/pipelines_check.py); memtrack must exit 0 with loader_hooks_missed
#                   0 (a failed run's files, stats and messages are kept)
#   --lifecycle     the lifecycle stress: REPS (default 100) runs of the root suite's lifecycle
#                   cases (tests/root/test_lifecycle.cpp: exec from a thread, SIGCONT storms to
#                   new children, a stop/continue loop, a leader's pthread_exit, ...) under a 64K
#                   ring and a slowed consumer, beside a competing busy loop
#   -n N            iterations per writer (default 200000)
#   -r RING         --ring-size (default 1M)
#   -d DELAY_US     --consumer-delay-us (default 2000: at 200 four writers on this 2-core
#                   machine no longer reached the stop mark, 2026-12-04, and the run failed as
#                   testing nothing)
#   -s, --no-stacks passed to memtrack (no call stacks)
#   -t TIMEOUT_S    give up after this many seconds: SIGTERM to memtrack, and a failure (default 600)
#   -- ARGS         more `memtrack track` arguments (e.g. -- --resume-fill 0 --chunk-records 256)
#
# Builds first (scripts/build.sh), then runs `build/bench/flood K N` under memtrack with --stats,
# both under the build lock /tmp/memtrack-build.lock (MEMTRACK_BUILD_LOCK; empty: no lock) so the
# run overlaps no other build or test run of the machine. Prints one summary line:
#
#   flood: k=4 n=200000 ring=1M delay_us=2000 records=... dropped=0 stops=... resumes=...
#          stopped_at_exit=0 paused_fraction=... stop_to_resume_ms=p50/p99 chunk_ms_max=... wall_s=...
#
# then reads the artifact back (`memtrack dump`): every writer must have exactly N Mallocs of its
# size, each freed once. Exits 1, saying why on stderr, when memtrack failed, records were dropped,
# stops != resumes, a process of the run is left stopped (state T), or a writer's counts are off.
# The work folder (a mktemp -d) is removed at exit, unless FLOOD_KEEP_TMP=1.
set -euo pipefail
export LC_ALL=C

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
MEMTRACK="$ROOT/build/memtrack"
FLOOD="$ROOT/build/bench/flood"
LOCK="${MEMTRACK_BUILD_LOCK-/tmp/memtrack-build.lock}"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() {
    echo "flood: error: $*" >&2
    exit 2
}

K=4
N=200000
T=1
RING=1M
DELAY=2000
DRAIN=""
BUSY=0
REPS=""
THREADS_HUNT=0
LIFECYCLE=0
PIPELINES=0
TIMEOUT=600
STACKS=()
EXTRA=()
ARGS=("$@")
while (($#)); do
    case "$1" in
        -k) (($# >= 2)) || die "-k needs a value"; K="$2"; shift 2 ;;
        -T) (($# >= 2)) || die "-T needs a value"; T="$2"; shift 2 ;;
        -D) (($# >= 2)) || die "-D needs a value"; DRAIN="$2"; shift 2 ;;
        -b) (($# >= 2)) || die "-b needs a value"; BUSY="$2"; shift 2 ;;
        -R) (($# >= 2)) || die "-R needs a value"; REPS="$2"; shift 2 ;;
        --threads) THREADS_HUNT=1; shift ;;
        --lifecycle) LIFECYCLE=1; shift ;;
        --pipelines) PIPELINES=1; shift ;;
        -n) (($# >= 2)) || die "-n needs a value"; N="$2"; shift 2 ;;
        -r) (($# >= 2)) || die "-r needs a value"; RING="$2"; shift 2 ;;
        -d) (($# >= 2)) || die "-d needs a value"; DELAY="$2"; shift 2 ;;
        -t) (($# >= 2)) || die "-t needs a value"; TIMEOUT="$2"; shift 2 ;;
        -s | --no-stacks) STACKS=(--no-stacks); shift ;;
        -h | --help) usage; exit 0 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) die "unknown argument: $1 (see --help)" ;;
    esac
done
[[ "$K" =~ ^[1-9][0-9]*$ ]] || die "-k: not a positive integer: $K"
[[ "$T" =~ ^[1-9][0-9]*$ ]] || die "-T: not a positive integer: $T"
[[ "$BUSY" =~ ^[0-9]+$ ]] || die "-b: not an integer: $BUSY"
[[ -z "$REPS" || "$REPS" =~ ^[1-9][0-9]*$ ]] || die "-R: not a positive integer: $REPS"
[[ -z "$DRAIN" || "$DRAIN" =~ ^[0-9]*\.?[0-9]+$ ]] || die "-D: not a number of seconds: $DRAIN"
((K * T <= 3000)) || die "-k x -T: at most 3000 writer threads (their sizes must stay apart)"

# Under the build lock from here on (nobody relinks memtrack under a run), after the build.
lock_and_build() {
    if [[ -n "$LOCK" ]]; then
        exec 9>"$LOCK"
        flock 9
    fi
    [[ "${FLOOD_NO_BUILD:-}" == 1 ]] || "$ROOT/scripts/build.sh" 9>&-
}

# Competing busy loops, each its own process (fd 9, the lock, not passed on); stop_busy ends them.
BUSY_PIDS=()
start_busy() {
    for ((b = 0; b < $1; b++)); do
        bash -c 'while :; do :; done' </dev/null >/dev/null 2>&1 9>&- &
        BUSY_PIDS+=($!)
    done
}
stop_busy() {
    for b in ${BUSY_PIDS[@]+"${BUSY_PIDS[@]}"}; do kill -KILL "$b" 2>/dev/null || true; wait "$b" 2>/dev/null || true; done
    BUSY_PIDS=()
}

# The stopped processes (state T) of process group $1 (of every process with "all"), one
# "pid(comm)" a line: what a run must never leave behind.
stopped_processes() {
    ps -e -o pid=,pgid=,stat=,comm= | awk -v g="$1" '(g == "all" || $2 == g) && $3 ~ /^T/ {print $1 "(" $4 ")"}'
}

# The lifecycle stress: the root suite's lifecycle cases, each run checking its exact counts.
if ((LIFECYCLE)); then
    "$ROOT/scripts/build.sh" root-prereq
    reps=${REPS:-100}
    trap stop_busy EXIT
    start_busy 1
    for ((i = 1; i <= reps; i++)); do
        if ! out=$(MEMTRACK_TEST_TRACK_ARGS="--ring-size 64K --consumer-delay-us 200 ${EXTRA[*]}" \
            meson test -C "$ROOT/build" --no-rebuild --suite root --print-errorlogs --test-args='-tc=lifecycle:*' 2>&1); then
            echo "$out" | tail -n 60 >&2
            echo "flood: FAIL in lifecycle run $i of $reps" >&2
            exit 1
        fi
        stopped=$(stopped_processes all)
        [[ -z "$stopped" ]] || { echo "flood: FAIL in lifecycle run $i: left stopped: $stopped" >&2; exit 1; }
        echo "lifecycle run $i/$reps: passed"
    done
    echo "flood: $reps lifecycle runs passed"
    exit 0
fi

# The missed-exec hunt: many short exec'd processes under one memtrack per run; a process whose
# exec memtrack missed has no events (or fewer than its siblings, all running the same input).
if ((PIPELINES)); then
    lock_and_build
    command -v python3 >/dev/null || die "python3 is needed to check the results"
    reps=${REPS:-20}
    rounds=40
    [[ " ${ARGS[*]} " == *" -n "* ]] && rounds=$N
    [[ " ${ARGS[*]} " == *" -b "* ]] || BUSY=1
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-pipelines-XXXXXX")"
    cleanup_pipelines() {
        stop_busy
        if [[ "${FLOOD_KEEP_TMP:-}" == 1 ]]; then echo "flood: kept $WORK" >&2; else rm -rf "$WORK"; fi
    }
    trap cleanup_pipelines EXIT
    start_busy "$BUSY"
    script="cd '$ROOT'; for ((i = 0; i < $rounds; i++)); do git status --short | wc -l; seq 1000 | sort -r | head -n 1; printf 'a:b\nc:d\n' | tr a-z A-Z | cut -d: -f2; done >/dev/null"
    for ((i = 1; i <= reps; i++)); do
        rm -rf "$WORK/out" "$WORK/stats.json"
        status=0
        # Its own process group (set -m): what is left of the run afterwards is exactly that group.
        set -m
        timeout -s TERM "$TIMEOUT" "$MEMTRACK" track --no-summary -o "$WORK/out" --stats "$WORK/stats.json" \
            ${STACKS[@]+"${STACKS[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} -- bash -c "$script" </dev/null \
            >"$WORK/memtrack.out" 2>"$WORK/memtrack.err" 9>&- &
        run_pid=$!
        set +m
        wait "$run_pid" || status=$?
        stopped=$(stopped_processes "$run_pid")
        [[ -z "$stopped" ]] || { echo "flood: FAIL in pipelines run $i: left stopped: $stopped" >&2; exit 1; }
        # A run memtrack itself failed (a miss it saw: loader_hooks_missed, ...) is checked too,
        # and its files kept with its stats and messages.
        checked=0
        result=$(python3 "$ROOT/scripts/pipelines_check.py" "$MEMTRACK" "$WORK/out" "$WORK/stats.json" "$rounds") || checked=$?
        if ((status != 0 || checked != 0)); then
            echo "$result" >&2
            ((status == 0)) || echo "flood: memtrack exited $status: $(tr '\n' ' ' <"$WORK/memtrack.err")" >&2
            mv "$WORK/out" "$WORK/failed-run-$i" 2>/dev/null || mkdir -p "$WORK/failed-run-$i"
            cp "$WORK/stats.json" "$WORK/memtrack.err" "$WORK/failed-run-$i/" 2>/dev/null || true
            FLOOD_KEEP_TMP=1
            echo "flood: FAIL in pipelines run $i of $reps (its files: $WORK/failed-run-$i)" >&2
            exit 1
        fi
        echo "pipelines run $i/$reps: $result"
    done
    echo "flood: $reps pipelines runs passed"
    exit 0
fi

# Repetitions: this script again, once per run, after one build.
if ((THREADS_HUNT)) || [[ -n "$REPS" && "$REPS" != 1 ]]; then
    "$ROOT/scripts/build.sh"
    reps=${REPS:-$((THREADS_HUNT ? 100 : 1))}
    inner=()
    for a in "${ARGS[@]}"; do [[ "$a" == --threads ]] || inner+=("$a"); done
    # -R and its value out of the inner runs' arguments.
    filtered=()
    skip=0
    for a in "${inner[@]}"; do
        if ((skip)); then skip=0; continue; fi
        [[ "$a" == -R ]] && { skip=1; continue; }
        filtered+=("$a")
    done
    # The hunt's configurations: writers threads ring delay_us iterations.
    configs=("1 8 64K 2000 6000" "1 32 64K 500 1500" "1 64 1M 200 1500" "4 16 4M 2000 3000" "1 8 1M 2000 20000")
    for ((i = 1; i <= reps; i++)); do
        if ((THREADS_HUNT)); then
            read -r ck ct cr cd cn <<<"${configs[$(((i - 1) % ${#configs[@]}))]}"
            run_args=(-k "$ck" -T "$ct" -r "$cr" -d "$cd" -n "$cn" -D 0.1 -b 1 "${filtered[@]}")
        else
            run_args=("${filtered[@]}")
        fi
        if ! out=$(FLOOD_NO_BUILD=1 "${BASH_SOURCE[0]}" "${run_args[@]}" 2>&1); then
            echo "$out" >&2
            echo "flood: FAIL in run $i of $reps (${run_args[*]})" >&2
            exit 1
        fi
        echo "run $i/$reps: $out"
    done
    echo "flood: $reps runs passed"
    exit 0
fi
[[ "$N" =~ ^[0-9]+$ ]] || die "-n: not an integer: $N"
[[ "$DELAY" =~ ^[0-9]+$ ]] || die "-d: not an integer: $DELAY"
[[ "$TIMEOUT" =~ ^[1-9][0-9]*$ ]] || die "-t: not a positive integer: $TIMEOUT"
((K <= 1000)) || die "-k: at most 1000 writers (their sizes must stay apart)"
command -v python3 >/dev/null || die "python3 is needed to check the results"
[[ $EUID -eq 0 ]] || echo "flood: warning: not root; memtrack needs CAP_BPF and CAP_PERFMON" >&2

WORK="$(mktemp -d "${TMPDIR:-/tmp}/memtrack-flood-XXXXXX")"
MT_PID=""
cleanup() {
    # Nothing of the run may outlive the script: whatever is left of memtrack's process group
    # (a stopped writer included) is killed.
    stop_busy
    if [[ -n "$MT_PID" ]]; then
        kill -KILL -- "-$MT_PID" 2>/dev/null || true
        kill -CONT -- "-$MT_PID" 2>/dev/null || true
    fi
    if [[ "${FLOOD_KEEP_TMP:-}" == 1 ]]; then
        echo "flood: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
# Ctrl-C reaches the script's process group, not memtrack's: pass it on, memtrack shuts down.
trap '[[ -n "$MT_PID" ]] && kill -INT "$MT_PID" 2>/dev/null' INT
trap '[[ -n "$MT_PID" ]] && kill -TERM "$MT_PID" 2>/dev/null' TERM

# ---- build, then run, under the lock ----
lock_and_build
[[ -x "$MEMTRACK" && -x "$FLOOD" ]] || die "build did not produce $MEMTRACK and $FLOOD"

# memtrack gets its own process group (set -m), so the run's processes are exactly that group.
T0=$EPOCHREALTIME
set -m
start_busy "$BUSY"
SOCKET=()
[[ -n "$DRAIN" ]] && SOCKET=(--socket "$WORK/ctl.sock")
"$MEMTRACK" track -o "$WORK/out" --stats "$WORK/stats.json" --ring-size "$RING" --consumer-delay-us "$DELAY" \
    ${SOCKET[@]+"${SOCKET[@]}"} ${STACKS[@]+"${STACKS[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} -- "$FLOOD" "$K" "$N" "$T" \
    </dev/null >"$WORK/memtrack.out" 2>"$WORK/memtrack.err" 9>&- &
MT_PID=$!
set +m
DRAIN_EVERY_US=0
[[ -n "$DRAIN" ]] && DRAIN_EVERY_US=$(python3 -c "print(int($DRAIN * 1e6))")
NEXT_DRAIN=$((${EPOCHREALTIME/./} + DRAIN_EVERY_US))

# A watchdog: a run that never ends (a writer left stopped keeps the flood waiting) is asked to
# stop after TIMEOUT seconds. It polls, so it leaves no sleeping child behind.
timed_out=0
status=0
while kill -0 "$MT_PID" 2>/dev/null; do
    if [[ "$(cut -d' ' -f3 "/proc/$MT_PID/stat" 2>/dev/null)" == Z ]]; then break; fi
    now=$EPOCHREALTIME
    if ((${now/./} - ${T0/./} >= TIMEOUT * 1000000)); then
        timed_out=1
        echo "flood: error: still running after $TIMEOUT s, its processes:" >&2
        ps -e -o pid=,pgid=,ppid=,stat=,wchan:20=,comm= | awk -v g="$MT_PID" '$2 == g' >&2 || true
        kill -TERM "$MT_PID" 2>/dev/null || true
        break
    fi
    if ((DRAIN_EVERY_US)) && ((${now/./} >= NEXT_DRAIN)); then
        "$MEMTRACK" ctl --socket "$WORK/ctl.sock" drain >/dev/null 2>&1 9>&- || true
        NEXT_DRAIN=$((${now/./} + DRAIN_EVERY_US))
    fi
    sleep 0.05
done
stop_busy
wait "$MT_PID" || status=$?
T1=$EPOCHREALTIME
WALL="$(python3 -c "print(f'{$T1 - $T0:.2f}')")"

# What is left of the run right after memtrack exited, and what is stopped among it.
mapfile -t STOPPED < <(stopped_processes "$MT_PID")
if [[ -n "$LOCK" ]]; then
    flock -u 9
fi

failures=()
((timed_out == 0)) || failures+=("timed out after $TIMEOUT s")
((status == 0)) || failures+=("memtrack exited $status: $(tr '\n' ' ' <"$WORK/memtrack.err")")
((${#STOPPED[@]} == 0)) || failures+=("left stopped: $(printf '[%s] ' "${STOPPED[@]}")")

# ---- the summary line, from --stats ----
if [[ ! -s "$WORK/stats.json" ]]; then
    failures+=("no --stats file written")
else
    python3 - "$WORK/stats.json" "$K" "$N" "$RING" "$DELAY" "$WALL" "$T" >"$WORK/summary" 2>"$WORK/stats-problems" <<'EOF' || true
import json, sys
path, k, n, ring, delay, wall, t = sys.argv[1:]
s = json.load(open(path))
# Once the ring is at its stop mark, each producer thread writes at most two more traps (one
# whose SIGSTOP a resume may cancel, one after), each process a fork and an exit record: 112 B a trap.
producers = int(k) * int(t) + int(k) + 1
bound = s['stop_bytes'] + 2 * producers * 112
if s['max_fill_bytes'] > bound:
    print(f"max_fill_bytes {s['max_fill_bytes']} above the bound {bound}", file=sys.stderr)
print(f"flood: k={k} T={t} n={n} ring={ring} delay_us={delay} records={s['records']} dropped={s['dropped']} "
      f"stops={s['pressure_stops']} resumes={s['pressure_resumes']} stopped_at_exit={s['stopped_at_exit']} "
      f"paused_fraction={s['paused_fraction']:.3f} "
      f"stop_to_resume_ms={s['stop_to_resume_ms']['p50']:.2f}/{s['stop_to_resume_ms']['p99']:.2f} "
      f"chunk_ms_max={s['chunk_ms']['max']:.2f} max_fill={s['max_fill_bytes']}/{s['stop_bytes']}+{bound - s['stop_bytes']} "
      f"wall_s={wall}")
if s['dropped']:
    print(f"{s['dropped']} records dropped", file=sys.stderr)
if s['pressure_stops'] == 0:
    print("no writer was ever paused: the run tested nothing", file=sys.stderr)
if s['pressure_stops'] != s['pressure_resumes']:
    print(f"pressure_stops {s['pressure_stops']} != pressure_resumes {s['pressure_resumes']}", file=sys.stderr)
if s['stopped_at_exit']:
    print(f"stopped_at_exit {s['stopped_at_exit']}", file=sys.stderr)
EOF
    if [[ -s "$WORK/summary" ]]; then cat "$WORK/summary"; else failures+=("unreadable --stats file"); fi
    while IFS= read -r line; do failures+=("$line"); done <"$WORK/stats-problems"
fi

# ---- every writer's allocations, from the artifact ----
shopt -s nullglob
artifacts=("$WORK"/out/*.MemtrackArtifact.msgpack)
if ((${#artifacts[@]} != 1)); then
    failures+=("expected one artifact in $WORK/out, found ${#artifacts[@]}")
else
    cat >"$WORK/count.py" <<'EOF'
import json, sys
k, n, t = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
# One size per writer thread (bench/flood.c).
sizes = {1000 + i for i in range(k)} if t == 1 else {2000 + i for i in range(k * t)}
writer_of = {}                # size -> the (pid, tid) allocating it
mallocs, frees = {}, {}       # size -> count
unfreed = {}                  # size -> Mallocs at a block still live (a Free missing)
live = {}                     # (pid, addr) of writer blocks not freed yet -> size
problems = []
for line in sys.stdin:
    e = json.loads(line)
    typ, pid, addr = e["type"], e["pid"], e["addr"]
    if typ == "Malloc" and e["size"] in sizes:
        size = e["size"]
        if writer_of.setdefault(size, (pid, e["tid"])) != (pid, e["tid"]):
            problems.append(f"size {size} allocated by {writer_of[size]} and {(pid, e['tid'])}")
        if (pid, addr) in live:
            unfreed[size] = unfreed.get(size, 0) + 1
        live[(pid, addr)] = size
        mallocs[size] = mallocs.get(size, 0) + 1
    elif typ == "Free" and (pid, addr) in live:
        size = live.pop((pid, addr))
        frees[size] = frees.get(size, 0) + 1
if len(writer_of) != k * t:
    problems.append(f"{len(writer_of)} writer threads in the artifact, expected {k * t}")
for size in sorted(sizes):
    m, f, u = mallocs.get(size, 0), frees.get(size, 0), unfreed.get(size, 0)
    if m != n or f != n or u:
        problems.append(f"writer thread {writer_of.get(size)} (size {size}): Malloc x{m}, Free x{f}, expected {n} "
                        f"of each; {u} Mallocs at a block whose Free is missing")
for p in problems[:20]:
    print(p)
if len(problems) > 20:
    print(f"... and {len(problems) - 20} more")
EOF
    set +e
    "$MEMTRACK" dump "${artifacts[0]}" 2>"$WORK/dump.err" | python3 "$WORK/count.py" "$K" "$N" "$T" >"$WORK/count-problems"
    codes=("${PIPESTATUS[@]}")
    set -e
    ((codes[0] == 0)) || failures+=("memtrack dump exited ${codes[0]}: $(tr '\n' ' ' <"$WORK/dump.err")")
    ((codes[1] == 0)) || failures+=("the dump could not be read back (python3 exited ${codes[1]})")
    while IFS= read -r line; do failures+=("$line"); done <"$WORK/count-problems"
fi

if ((${#failures[@]})); then
    for f in "${failures[@]}"; do echo "flood: FAIL: $f" >&2; done
    exit 1
fi
