# shellcheck shell=bash
# --dlopen: a process that dlopens many small libraries, each a new object held at the loader's
# hook until memtrack has probed it (issue 28.4: the hold must cost O(new objects), not
# O(objects mapped)). tests/progs/dlopen_many on copies of tests/progs/libmany.so.
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

begin_section "dlopen of many libraries"
many_bin="$BUILD/tests/progs/dlopen_many"
[[ -x "$many_bin" && -f "$BUILD/tests/progs/libmany.so" ]] || die "$many_bin was not built"
# One file copied under every name: each copy is an object of its own (the loader and memtrack
# tell objects apart by device and inode).
mkdir -p "$WORK/many"
max_n=0
for n in "${DLOPEN_SIZES[@]}"; do ((n > max_n)) && max_n=$n; done
for ((i = 0; i < max_n; i++)); do cp "$BUILD/tests/progs/libmany.so" "$WORK/many/libmany$i.so"; done
for ((REP = 1; REP <= REPS; REP++)); do
    for n in "${DLOPEN_SIZES[@]}"; do
        for tool in untracked memtrack-nostacks memtrack; do
            run "$tool" "dlopen.$n.$tool" "$many_bin" "$n" "$WORK/many"
            # The dlopens' own time, without memtrack's start-up and shutdown (dlopen_many prints it).
            awk '$1 == "dlopens" { print $2 }' "$WORK/log/dlopen.$n.${tool}__r$REP.log.out" >>"$WORK/t/dlopen.$n.$tool.loop"
        done
    done
done
echo "\`dlopen_many N\`: N dlopens of distinct copies of a small library (each constructor makes one"
echo "allocation), kept open. The dlopens' own time (the program times its loop), medians of $REPS runs;"
echo "target (bench.sh): memtrack within 3x of untracked at every size. Wall: the whole run, memtrack's"
echo "start-up and shutdown included. Holds: new_code_held_ms of the last memtrack run; full reads: holds"
echo "(code_full_scans) and symbolizer answers (symbolizer_maps_full_reads) that read all the process's"
echo "mappings; the others took only what the loader added."
echo
echo "| libraries | untracked (s) | --no-stacks (s) | ratio | memtrack (s) | ratio | wall: untracked / --no-stacks / memtrack (s) | objects examined | full reads: holds / symbolizer | hold p50 / p99 (ms) |"
echo "|----------:|--------------:|----------------:|------:|-------------:|------:|-----------------------------------|-----------------:|-----------:|---------------------|"
for n in "${DLOPEN_SIZES[@]}"; do
    u=$(median "$WORK/t/dlopen.$n.untracked.loop") ns=$(median "$WORK/t/dlopen.$n.memtrack-nostacks.loop") st=$(median "$WORK/t/dlopen.$n.memtrack.loop")
    wu=$(median "$WORK/t/dlopen.$n.untracked") wns=$(median "$WORK/t/dlopen.$n.memtrack-nostacks") wst=$(median "$WORK/t/dlopen.$n.memtrack")
    stats="$WORK/stats/dlopen.$n.memtrack__r$REPS.json"
    printf '| %s | %s | %s | %s | %s | %s | %s / %s / %s | %s | %s / %s | %s / %s |\n' "$n" "$(fmt "$u" '%.2f')" "$(fmt "$ns" '%.2f')" \
        "$(fmt "$(calc "$ns / $u")" '%.1f')" "$(fmt "$st" '%.2f')" "$(fmt "$(calc "$st / $u")" '%.1f')" \
        "$(fmt "$wu" '%.2f')" "$(fmt "$wns" '%.2f')" "$(fmt "$wst" '%.2f')" \
        "$(jget "$stats" .code_objects_examined 2>/dev/null || echo n/a)" "$(jget "$stats" .code_full_scans 2>/dev/null || echo n/a)" \
        "$(jget "$stats" .symbolizer_maps_full_reads 2>/dev/null || echo n/a)" \
        "$(fmt "$(jget "$stats" .new_code_held_ms.p50 2>/dev/null)" '%.2f')" "$(fmt "$(jget "$stats" .new_code_held_ms.p99 2>/dev/null)" '%.2f')"
done
rm -rf "$WORK/many"
end_section
