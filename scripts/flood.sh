#!/usr/bin/env bash
# The back-pressure stress test: K writers flooding a small ring read by a slowed consumer,
# under memtrack, then checks that nothing was lost and nothing was left paused.
#
#   scripts/flood.sh [-k K] [-n N] [-r RING] [-d DELAY_US] [-s|--no-stacks] [-t TIMEOUT_S]
#                    [-- extra memtrack track arguments]
#
#   -k K            writers (default 4); writer k makes N malloc+free pairs of size 1000 + k
#   -n N            iterations per writer (default 200000)
#   -r RING         --ring-size (default 1M)
#   -d DELAY_US     --consumer-delay-us (default 200)
#   -s, --no-stacks passed to memtrack (no call stacks)
#   -t TIMEOUT_S    give up after this many seconds: SIGTERM to memtrack, and a failure (default 600)
#   -- ARGS         more `memtrack track` arguments (e.g. -- --resume-fill 0 --chunk-records 256)
#
# Builds first (scripts/build.sh), then runs `build/bench/flood K N` under memtrack with --stats,
# both under the build lock /tmp/memtrack-build.lock (MEMTRACK_BUILD_LOCK; empty: no lock) so the
# run overlaps no other build or test run of the machine. Prints one summary line:
#
#   flood: k=4 n=200000 ring=1M delay_us=200 records=... dropped=0 stops=... resumes=...
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
RING=1M
DELAY=200
TIMEOUT=600
STACKS=()
EXTRA=()
while (($#)); do
    case "$1" in
        -k) (($# >= 2)) || die "-k needs a value"; K="$2"; shift 2 ;;
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
if [[ -n "$LOCK" ]]; then
    exec 9>"$LOCK"
    flock 9
fi
"$ROOT/scripts/build.sh" 9>&-
[[ -x "$MEMTRACK" && -x "$FLOOD" ]] || die "build did not produce $MEMTRACK and $FLOOD"

# memtrack gets its own process group (set -m), so the run's processes are exactly that group.
T0=$EPOCHREALTIME
set -m
"$MEMTRACK" track -o "$WORK/out" --stats "$WORK/stats.json" --ring-size "$RING" --consumer-delay-us "$DELAY" \
    ${STACKS[@]+"${STACKS[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} -- "$FLOOD" "$K" "$N" \
    </dev/null >"$WORK/memtrack.out" 2>"$WORK/memtrack.err" 9>&- &
MT_PID=$!
set +m

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
    sleep 0.05
done
wait "$MT_PID" || status=$?
T1=$EPOCHREALTIME
WALL="$(python3 -c "print(f'{$T1 - $T0:.2f}')")"

# What is left of the run right after memtrack exited, and what is stopped among it.
mapfile -t STOPPED < <(ps -e -o pid=,pgid=,stat=,comm= | awk -v g="$MT_PID" '$2 == g && $3 ~ /^T/')
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
    python3 - "$WORK/stats.json" "$K" "$N" "$RING" "$DELAY" "$WALL" >"$WORK/summary" 2>"$WORK/stats-problems" <<'EOF' || true
import json, sys
path, k, n, ring, delay, wall = sys.argv[1:]
s = json.load(open(path))
print(f"flood: k={k} n={n} ring={ring} delay_us={delay} records={s['records']} dropped={s['dropped']} "
      f"stops={s['pressure_stops']} resumes={s['pressure_resumes']} stopped_at_exit={s['stopped_at_exit']} "
      f"paused_fraction={s['paused_fraction']:.3f} "
      f"stop_to_resume_ms={s['stop_to_resume_ms']['p50']:.2f}/{s['stop_to_resume_ms']['p99']:.2f} "
      f"chunk_ms_max={s['chunk_ms']['max']:.2f} wall_s={wall}")
if s['dropped']:
    print(f"{s['dropped']} records dropped", file=sys.stderr)
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
k, n = int(sys.argv[1]), int(sys.argv[2])
sizes = {1000 + i for i in range(k)}
size_of = {}                  # writer pid -> its size
mallocs, frees = {}, {}       # writer pid -> count
unfreed = {}                  # writer pid -> Mallocs at a block still live (a Free missing)
live = set()                  # (pid, addr) of writer blocks not freed yet
problems = []
for line in sys.stdin:
    e = json.loads(line)
    t, pid, addr = e["type"], e["pid"], e["addr"]
    if t == "Malloc" and e["size"] in sizes:
        size = e["size"]
        if size_of.setdefault(pid, size) != size:
            problems.append(f"pid {pid} allocates sizes {size_of[pid]} and {size}")
        if (pid, addr) in live:
            unfreed[pid] = unfreed.get(pid, 0) + 1
        live.add((pid, addr))
        mallocs[pid] = mallocs.get(pid, 0) + 1
    elif t == "Free" and (pid, addr) in live:
        live.discard((pid, addr))
        frees[pid] = frees.get(pid, 0) + 1
if len(size_of) != k:
    problems.append(f"{len(size_of)} writers in the artifact, expected {k}")
for pid in sorted(size_of, key=size_of.get):
    m, f, u = mallocs.get(pid, 0), frees.get(pid, 0), unfreed.get(pid, 0)
    if m != n or f != n or u:
        problems.append(f"writer {pid} (size {size_of[pid]}): Malloc x{m}, Free x{f}, expected {n} of each; "
                        f"{u} Mallocs at a block whose Free is missing")
for p in problems[:20]:
    print(p)
if len(problems) > 20:
    print(f"... and {len(problems) - 20} more")
EOF
    set +e
    "$MEMTRACK" dump "${artifacts[0]}" 2>"$WORK/dump.err" | python3 "$WORK/count.py" "$K" "$N" >"$WORK/count-problems"
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
