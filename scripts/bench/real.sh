# shellcheck shell=bash
# --real: programs people run (gcc compiling a generated file, Debian's python3, node, sqlite3, a
# Rust release binary) untracked, at their trap floor, under memtrack (--no-stacks, CFI stacks,
# --unwind fp) and heaptrack: wall and CPU, events counted, cost over the floor; then one run of
# each with kernel.bpf_stats_enabled and --time-bpf-parts: where memtrack's BPF time goes.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

REAL="$WORK/real"
mkdir -p "$REAL"
read -r -a REAL_WORKLOADS <<<"${MEMTRACK_BENCH_REAL:-gcc python3 node sqlite3 rust}"
REAL_TOOLS=(untracked memtrack-nostacks floor memtrack memtrack-fp heaptrack)
# The tools of one workload: python3 also with native-only stacks (--no-python-frames), what
# reading CPython's frames costs (issue 31).
real_tools() { # WORKLOAD -> WL_TOOLS
    WL_TOOLS=("${REAL_TOOLS[@]}")
    if [[ $1 == python3 ]]; then WL_TOOLS+=(memtrack-nopy); fi
}

# gcc: REAL_GCC_FUNCS functions of loops, switches and calls, compiled at -O2 (cc1 allocates from
# deep recursion over the trees it builds).
awk -v n="$REAL_GCC_FUNCS" 'BEGIN {
    print "struct point { long x, y, z; double w; };"
    for (i = 0; i < n; i++) {
        printf "long f%d(struct point *p, long k, const char *s) {\n", i
        printf "    long acc = %d;\n", i
        printf "    for (long j = 0; j < k; j++) {\n"
        printf "        switch ((j + %d) %% 5) {\n", i
        printf "        case 0: acc += p[j %% 7].x * %d; break;\n", i % 13 + 1
        printf "        case 1: acc ^= p[j %% 3].y << (j & 7); break;\n"
        printf "        case 2: acc -= (long)(p[j %% 5].w * %d.5); break;\n", i % 7
        printf "        case 3: acc += s[j %% 16] * p->z; break;\n"
        printf "        default: acc = acc * 31 + j;\n"
        printf "        }\n"
        printf "        if (acc > %d) acc %%= %d;\n", 100000 + i, 977 + i
        printf "    }\n"
        if (i > 0) printf "    acc += f%d(p + 1, k / 2, s + 1);\n", i - 1
        printf "    return acc;\n}\n"
    }
}' >"$REAL/gen.c"

# python3: JSON and regular expressions over REAL_PY_N generated records.
cat >"$REAL/work.py" <<EOF
import json, re
records = [{"id": i, "name": "item-%d" % i, "tags": ["t%d" % (i % 17), "k%d" % (i % 5)],
            "score": i * 0.25, "text": "alpha %d beta %d gamma" % (i, i * 7)} for i in range($REAL_PY_N)]
blob = json.dumps(records)
back = json.loads(blob)
pattern = re.compile(r"(\w+) (\d+) beta (\d+)")
found = [pattern.match(r["text"]).groups() for r in back]
words = re.findall(r"item-\d+", blob)
print(len(back), len(found), len(words))
EOF

# node: the object-building script of --symbols.
echo "$NODE_JS" >"$REAL/objs.js"

# sqlite3: REAL_SQL_N single-row INSERTs in one transaction into an indexed table, in a file.
awk -v n="$REAL_SQL_N" 'BEGIN {
    print "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, score REAL, tag TEXT);"
    print "CREATE INDEX t_name ON t(name);"
    print "BEGIN;"
    for (i = 0; i < n; i++) printf "INSERT INTO t VALUES(%d, \x27name-%d\x27, %d.5, \x27tag%d\x27);\n", i, (i * 7919) % n, i, i % 97
    print "COMMIT;"
    print "SELECT count(*), sum(score) FROM t WHERE name LIKE \x27name-1%\x27;"
}' >"$REAL/insert.sql"

real_cmd() { # WORKLOAD -> REAL_ARGV (the command line)
    case "$1" in
    gcc) REAL_ARGV=(gcc -O2 -c "$REAL/gen.c" -o "$WORK/out/gen.o") ;;
    python3) REAL_ARGV=(/usr/bin/python3 "$REAL/work.py") ;;
    node) REAL_ARGV=("$(readlink -f "$(command -v node)")" "$REAL/objs.js") ;;
    sqlite3) REAL_ARGV=(sqlite3 -batch "$WORK/out/real.db" ".read $REAL/insert.sql") ;;
    rust) REAL_ARGV=("$BIN/real_rust" "$REAL_RUST_N") ;;
    esac
}

real_executables() { # WORKLOAD -> the executables its processes run, one a line
    real_cmd "$1"
    readlink -f "$(command -v "${REAL_ARGV[0]}")"
    # gcc's driver runs the compiler proper and the assembler.
    if [[ $1 == gcc ]]; then readlink -f "$(gcc -print-prog-name=cc1)" "$(command -v "$(gcc -print-prog-name=as)")"; fi
}

begin_section "Real programs"
declare -A REAL_FLOOR=()  # workload -> the trap floor's arguments (one per line)
for ((REP = 1; REP <= REPS; ++REP)); do
    for wl in "${REAL_WORKLOADS[@]}"; do
        real_cmd "$wl"
        real_tools "$wl"
        for tool in "${WL_TOOLS[@]}"; do
            if [[ $tool == floor ]]; then
                # The floor probes what memtrack probes in this program: the sites in each
                # executable it runs and the objects they map.
                if [[ -z "${REAL_FLOOR[$wl]:-}" ]]; then
                    real_executables "$wl" | while read -r exe; do probe_sites_of "$exe"; done |
                        sort -u >"$WORK/log/real_$wl.sites.json"
                    REAL_FLOOR[$wl]="$(floor_args placed "$WORK/log/real_$wl.sites.json")"
                fi
                # shellcheck disable=SC2034  # run's floor tool reads it
                mapfile -t FLOOR_PLACED <<<"${REAL_FLOOR[$wl]}"
            fi
            run "$tool" "real_${wl}__$tool" "${REAL_ARGV[@]}"
        done
    done
done
place_floor # the global floor again, for the sections after this one
# One more run of each under memtrack with the kernel's BPF run-time statistics and the timed parts.
bpf_stats_on
for wl in "${REAL_WORKLOADS[@]}"; do
    real_cmd "$wl"
    for mode in nostacks stacks; do
        opts=(--time-bpf-parts)
        [[ $mode == nostacks ]] && opts+=(--no-stacks)
        mt_run "real_${wl}__parts-$mode" "${opts[@]}" -- "${REAL_ARGV[@]}"
    done
done
bpf_stats_off

echo "Workloads: gcc -O2 -c of a generated C file of $REAL_GCC_FUNCS functions; Debian's python3 ($(/usr/bin/python3 --version 2>&1))"
echo "dumping and loading $REAL_PY_N records as JSON and matching regular expressions over them; node $(node --version)"
echo "building $NODE_N objects (--symbols' script); sqlite3 $(sqlite3 --version | cut -d' ' -f1) running $REAL_SQL_N single-row"
echo "INSERTs into an indexed table in one transaction, in a file; bench/real_rust $REAL_RUST_N (rustc -C opt-level=3,"
echo "no frame pointers: expressions parsed by recursive descent into boxed nodes, printed, counted in maps)."
echo "Medians of $REPS runs, interleaved. x floor: (T - T(untracked)) / (T(floor) - T(untracked)), the tool's"
echo "cost over the uprobe traps' own (the trap floor: empty BPF programs on the probes memtrack placed in"
echo "that program). Targets (issue 17): memtrack with stacks <= 1.3x, --no-stacks <= 1.1x."
echo
printf '| %-8s | %-22s | %9s | %8s | %9s | %9s | %8s | %10s | %12s |\n' program tool "wall (s)" "x floor" "CPU (s)" \
    "x floor" "events" "us/event" "stacks_unique"
echo "|----------|------------------------|----------:|---------:|----------:|----------:|---------:|-----------:|-------------:|"
declare -A RW=() RC=()
for wl in "${REAL_WORKLOADS[@]}"; do
    real_tools "$wl"
    for tool in "${WL_TOOLS[@]}"; do
        RW[$tool]=$(median "$WORK/t/real_${wl}__$tool")
        RC[$tool]=$(median "$WORK/t/real_${wl}__$tool.cpu")
    done
    events=$(stat_median "real_${wl}__memtrack-nostacks" .allocation_events)
    for tool in "${WL_TOOLS[@]}"; do
        xw=- xc=- per=- uniq=""
        if [[ $tool != untracked ]]; then
            xw=$(fmt "$(calc "(${RW[$tool]} - ${RW[untracked]}) / (${RW[floor]} - ${RW[untracked]})")" '%.2f')
            xc=$(fmt "$(calc "(${RC[$tool]} - ${RC[untracked]}) / (${RC[floor]} - ${RC[untracked]})")" '%.2f')
            per=$(fmt "$(calc "(${RW[$tool]} - ${RW[untracked]}) / $events * 1e6")" '%.2f')
        fi
        [[ $tool == memtrack || $tool == memtrack-fp || $tool == memtrack-nopy ]] && uniq=$(fmt "$(stat_median "real_${wl}__$tool" .stacks_unique)" '%.0f')
        printf '| %-8s | %-22s | %9s | %8s | %9s | %9s | %8s | %10s | %12s |\n' "$wl" "${TOOL_LABEL[$tool]}" \
            "$(fmt "${RW[$tool]}" '%.3f')" "$xw" "$(fmt "${RC[$tool]}" '%.3f')" "$xc" \
            "$([[ $tool == memtrack-nostacks ]] && fmt "$events" '%.0f')" "$per" "$uniq"
    done
done
echo
echo "events: allocation events memtrack counted (--no-stacks runs); us/event: wall time over untracked per event."
echo "heaptrack injects a library (LD_PRELOAD) and pays no trap; its x floor compares it with the traps' cost."
echo
echo "Where memtrack's BPF time goes: one run each with kernel.bpf_stats_enabled=1 and --time-bpf-parts"
echo "(bpf_ktime_get_ns around each part of the return program, which adds its own cost to the totals), ns per"
echo "call of the program or per allocation event of the part; floor = (T(floor) - T(untracked)) / events, the"
echo "traps' own cost per event."
echo
echo "| program | capture | floor us/event | alloc_entry ns | alloc_return ns | walk ns | walks matched | hash+dedup ns | stack record ns | event record ns |"
echo "|---------|---------|---------------:|---------------:|----------------:|--------:|--------------:|--------------:|----------------:|----------------:|"
parts_q() { fmt "$(jq -r "$2 // \"nan\"" "$1" 2>/dev/null || echo nan)" '%.0f'; } # STATS-FILE JQ-PATH
for wl in "${REAL_WORKLOADS[@]}"; do
    events=$(stat_median "real_${wl}__memtrack-nostacks" .allocation_events)
    floor_per=$(calc "($(median "$WORK/t/real_${wl}__floor") - $(median "$WORK/t/real_${wl}__untracked")) / $events * 1e6")
    for mode in nostacks stacks; do
        f="$WORK/stats/real_${wl}__parts-${mode}__r$REP.json" # REP is REPS + 1 after the timed runs
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$wl" "$mode" "$(fmt "$floor_per" '%.2f')" \
            "$(parts_q "$f" .bpf_programs.alloc_entry.ns_per_run)" "$(parts_q "$f" .bpf_programs.alloc_return.ns_per_run)" \
            "$(parts_q "$f" .bpf_parts.walk_ns_per_event)" "$(parts_q "$f" .unwind.walks_matched)" \
            "$(parts_q "$f" .bpf_parts.hash_ns_per_event)" "$(parts_q "$f" .bpf_parts.stack_record_ns_per_event)" \
            "$(parts_q "$f" .bpf_parts.event_record_ns_per_event)"
    done
done
end_section
