# shellcheck shell=bash
# --allocators: per-pair cost under glibc, jemalloc and mimalloc, and what probing new code adds
# to a dlopen and to an exec.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

begin_section "Allocators: per-pair cost, dlopen and exec"
echo "\`flood 1 $ALLOC_N\` ($ALLOC_N malloc+free pairs) linked against each allocator; net us per pair"
echo "above the untracked run, medians of $REPS runs; the floor: empty BPF programs at memtrack's placed"
echo "offsets for that binary and the objects it maps (bench/probe_sites)."
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
    probe_sites_of "$exe" >"$WORK/log/sites.$alloc.json"
    mapfile -t FLOOR_PLACED < <(floor_args placed "$WORK/log/sites.$alloc.json")
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
