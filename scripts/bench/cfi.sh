# shellcheck shell=bash
# --cfi: unwind tables built from each installed file's CFI (bench/cfi_tables).
# Sourced by scripts/bench.sh with scripts/bench/lib.sh in scope (see its header).

# bench/cfi_tables: build_cfi_table on each file, as when a process maps it (fresh open, fresh
# libdw state), REPS builds per file in one process, medians.
begin_section "Unwind tables"
CFI_FILES=()
for f in /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/bin/python3.11 \
    "$(readlink -f "$(command -v node || echo /usr/bin/node)")" /usr/lib/gcc/x86_64-linux-gnu/12/cc1; do
    if [[ -e "$f" ]]; then CFI_FILES+=("$(readlink -f "$f")"); else echo "(not installed, skipped: $f)"; fi
done
"$BIN/cfi_tables" --reps "$REPS" --json "$WORK/stats/cfi__r1.json" "${CFI_FILES[@]}" >"$WORK/log/cfi__r1.log" 2>&1 ||
    warning "cfi: cfi_tables failed"
echo "bench/cfi_tables --reps $REPS: each file's .eh_frame (and .debug_frame where it has one) compiled into"
echo "8-byte unwind rows; build time from open to the finished table, wall and CPU of the calling thread"
echo "(files of $(grep -o 'kCfiTwoThreadsFrom = [0-9]*' "$ROOT/src/unwind/CfiTable.hpp" | grep -o '[0-9]*$') FDEs or more are read by two threads), and the same build read by one thread;"
echo "medians of $REPS builds. libdw rows: the rows of the FDEs' own tables, before equal neighbours merge"
echo "and NONE rows mark the gaps between FDEs."
echo
echo "| file | size (MB) | FDEs | libdw rows | rows | KB | rsp | rbp | plt | end | unsupported | none | build (ms) | CPU (ms) | one thread (ms) |"
echo "|------|----------:|-----:|-----------:|-----:|---:|----:|----:|----:|----:|------------:|-----:|-----------:|---------:|----------------:|"
# j FIELD: the current file's FIELD from cfi_tables' JSON, nan when missing.
j() { jq -r ".[\"$f\"].$1 // \"nan\"" "$WORK/stats/cfi__r1.json" 2>/dev/null || echo nan; }
for f in "${CFI_FILES[@]}"; do
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$f" \
        "$(fmt "$(calc "$(stat -c %s "$f") / 1048576")" '%.1f')" "$(j fdes)" "$(j libdw_rows)" "$(j rows)" \
        "$(fmt "$(calc "$(j bytes) / 1024")" '%.0f')" "$(j rows_by_type.rsp)" "$(j rows_by_type.rbp)" \
        "$(j rows_by_type.plt)" "$(j rows_by_type.end)" "$(j rows_by_type.unsupported)" "$(j rows_by_type.none)" \
        "$(fmt "$(j build_ms)" '%.1f')" "$(fmt "$(j build_cpu_ms)" '%.1f')" "$(fmt "$(j build_one_thread_ms)" '%.1f')"
done
echo
echo "Unsupported libdw rows by cause (before merging):"
echo
for f in "${CFI_FILES[@]}"; do
    echo "- $f: $(jq -c ".[\"$f\"].unsupported_libdw_rows" "$WORK/stats/cfi__r1.json" 2>/dev/null || echo n/a)"
done
end_section
